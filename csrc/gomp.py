"""GCC's OpenMP constructs decoded into runtime-core calls: GOMP_target_ext
(`pg_py_target`), GOMP_target_data_ext, GOMP_target_update_ext and
GOMP_target_enter_exit_data (`pg_py_data`), GOMP_target_end_data (`pg_py_end_data`,
which ends OpenACC's data regions too).

A region's items come as shim.c's triples (`abi.items`); the device number is resolved
here (the resolver's C numbers), and the core decides what every kind means.  A region
that repeats looks its items up once (`calls.Call`), and on a device of the host plugin
C gets its plan (`plans`).  A target region whose function has no image on its device
runs its host code (`hostcode`): on a device of the host plugin with the device
addresses, on another device (OpenCL, CUDA) with a host view of the device's data and a
PYGOMP_INFO message; under OMP_TARGET_OFFLOAD=mandatory that fails.
"""
from __future__ import annotations

import itertools

from .. import openacc as acc
from ..runtime import accprof, calls, devices, env, kinds, mapping
from . import abi, hostcode, plans, tables
from .contract import Op

_targets = {}                   # (device, fn, packed items) -> its region's calls.Call
_regions = {}                   # handle -> the mapping.Region of an open data region
_handles = itertools.count(1)


def _target_call(device, fn, n, packed, bounds):
    """The `calls.Call` of a target region, fresh or looked up now: a loop's region
    repeats its triples, and reuses its items, device and look-ups while the call is
    fresh.  A number that the resolver turns into another device is resolved every
    time.  ``bounds``: the region's num_teams and thread_limit, the launch of a GCC
    image (pygomp's images have their own)."""
    key = (device, fn, bounds, abi.ffi.buffer(packed, 24 * n)[:])
    call = _targets.get(key)
    if call is not None and call.fresh():
        return call
    dev = devices.resolve(device, compiled=True)
    call = calls.Call(dev, fn, abi.items(n, packed) if call is None else call.items, (),
                      tables.launch.get(fn, (*bounds, 0)), host_code=dev.target == "host")
    call.look_up()
    if dev.number == device:
        if len(_targets) >= 4096:
            _targets.clear()
        _targets[key] = call
    return call


# -- constructs: each returns 0 for a failure, else non-zero ---------------------

def pg_py_target(device, fn, n, packed, args, teams, threads):
    """GOMP_target_ext: map, run (an image, or the host code with device addresses:
    ``args`` is the argument block shim.c gave), unmap."""
    prepared = _target_call(device, fn, n, packed, (teams, threads))
    dev, items = prepared.dev, prepared.items
    fresh = prepared.fresh()
    if prepared.address is not None or (not fresh and abi.has_image(dev, fn)):
        prepared.run()
        return 1
    if fresh and dev.target == "host":
        def host(words):
            if words is None:           # not prepared: the whole construct
                hostcode.run(dev, fn, items, n, args)
            else:
                if n:
                    args[0:n] = words
                abi.lib.pg_call_host(fn, args, -1 if dev.is_initial else dev.number)
        prepared.run(host=host)
        if dev.number == device:
            plans.install(prepared, device, fn, n, packed)     # the map as this region left it
        return 1
    if dev.target != "host":
        if env.settings().target_offload == "mandatory":
            raise devices.OffloadError("OMP_TARGET_OFFLOAD is set to MANDATORY, but device "
                                       "cannot be used for offloading")
        env.info(env.INFO_LAUNCH, f"device {dev.number} ({dev.plugin.name}) has no image of "
                                  f"the target region at {fn:#x}: host fallback with the "
                                  f"device's data")

        def call(words):
            if n:
                args[0:n] = words
            abi.lib.pg_call_host(fn, args, -1)
        hostcode.on_host(dev, fn, items, call, "target region")
        return 1
    hostcode.run(dev, fn, items, n, args)
    return 1


def pg_py_data(op, device, n, packed, hostaddrs):
    """target data (returns the region's handle), update, enter data, exit data."""
    dev = devices.resolve(device, compiled=True)
    items = abi.items(n, packed)
    if op == Op.DATA:
        return data_region(mapping.begin(dev, items), hostaddrs)
    items = [it for it in items if it.kind != kinds.FIRSTPRIVATE_INT]   # NULL: nothing
    if op == Op.UPDATE:
        mapping.update(dev, items)
    elif op == Op.ENTER:
        mapping.enter_data(dev, items)
    else:
        mapping.exit_data(dev, items)
    return 1


def data_region(region, hostaddrs):
    """A handle for an open data region; use_device_ptr/addr are written back for C."""
    handle = next(_handles)
    _regions[handle] = region
    for i, it in enumerate(region.items):
        if it.kind in (kinds.USE_DEVICE_PTR, kinds.USE_DEVICE_PTR_IF_PRESENT):
            hostaddrs[i] = region.args[i]
    return handle


def pg_py_end_data(handle):
    region = _regions.pop(handle)
    if region.acc and accprof.mask:
        acc.profiled(accprof.construct_data, region.dev, acc.async_sync,
                     accprof.ev_exit_data_start, acc.run, acc.async_sync,
                     lambda: mapping.end(region), region.dev)
    elif region.acc:          # frees wait for the device's async queues
        acc.run(acc.async_sync, lambda: mapping.end(region), region.dev)
    else:
        mapping.end(region)
    return 1
