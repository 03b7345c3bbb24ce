"""GCC's OpenACC constructs decoded into runtime-core calls: GOACC_parallel_keyed
(`pg_py_acc_parallel`: parallel, kernels, serial) and GOACC_data_start,
GOACC_enter_data, GOACC_exit_data, GOACC_enter_exit_data, GOACC_update, GOACC_declare
and GOACC_wait (`pg_py_acc_data`); GOACC_data_end ends through `gomp.pg_py_end_data`.

They run on `pygomp.openacc`'s current device of the thread, with OpenACC's reference
counts; ``async`` work goes to that device's queues (`acc.run`) after the wait list.
The items keep libgomp's alignment byte (`abi.acc_items`).  Under OpenACC's profiling
interface (`accprof.mask`) each construct raises its events.
"""
from __future__ import annotations

from .. import openacc as acc
from ..runtime import accmap, accprof, deferred, devices, env, kinds, mapping
from . import abi, gomp, hostcode, tables
from .contract import AccOp

HOST_FALLBACK = 1               # GOACC_FLAG_HOST_FALLBACK: the `if` clause was false


def pg_py_acc_parallel(flags, fn, n, packed, hostaddrs, async_, num_waits, waits, dims):
    """GOACC_parallel_keyed (parallel, kernels, serial): on the host (the `if` clause
    false, or the current device is the host) the host code runs with host addresses;
    else the region maps with OpenACC's counts and runs (an image, or the host code with
    device addresses), now or on queue ``async_`` after its earlier work."""
    dev = acc.current()
    if accprof.mask:
        rec = acc.prof_record(accprof.construct_parallel, dev)
        if rec:
            info = accprof.fire(rec, accprof.ev_compute_construct_start)
            try:
                return _acc_parallel(rec, dev, flags, fn, n, packed, hostaddrs, async_,
                                     num_waits, waits, dims)
            finally:
                accprof.fire(rec, accprof.ev_compute_construct_end, info)
                accprof.finish(rec)
    return _acc_parallel(None, dev, flags, fn, n, packed, hostaddrs, async_, num_waits,
                         waits, dims)


def _acc_parallel(rec, dev, flags, fn, n, packed, hostaddrs, async_, num_waits, waits,
                  dims):
    if flags & HOST_FALLBACK or dev.is_initial:
        if rec:
            rec.set_device_type(acc.device_host)
        abi.lib.pg_call_acc(fn, hostaddrs, acc.device_host)
        return 1
    if rec:
        rec.set_async(async_)
    if num_waits:
        acc.wait_list(async_, abi.ffi.unpack(waits, num_waits))
    items = abi.acc_items(n, packed)
    launch = tuple(abi.ffi.unpack(dims, 3))
    if abi.has_image(dev, fn):
        launch = launch if any(launch) else tables.launch.get(fn, (0, 0, 0))
        if rec:
            acc.run(async_, lambda: _acc_image(rec, dev, fn, items, launch), dev)
        else:
            acc.run(async_, lambda: mapping.target(dev, fn, items, launch, acc=True), dev)
    elif dev.target == "host":
        acc.run(async_, lambda: hostcode.acc_region(dev, fn, items, rec, launch), dev)
    else:
        env.info(env.INFO_LAUNCH, f"device {dev.number} ({dev.plugin.name}) has no image of "
                                  f"the compute region at {fn:#x}: its host code runs on the "
                                  f"host with the device's data")

        def call(words):
            abi.lib.pg_call_acc(fn, abi.ffi.new("uintptr_t[]", words or [0]), acc.device_host)
        acc.run(async_, lambda: hostcode.on_host(dev, fn, items, call, "compute region",
                                                 acc_=True, rec=rec, launch=launch), dev)
    return 1


def _acc_image(rec, dev, fn, items, launch):
    """`mapping.target` for OpenACC with the events of its phases
    (`hostcode.begin`, `hostcode.end`);
    acc.run adds the launch's."""
    dev.ensure_init()
    address = mapping.function_address(dev, fn)
    r = hostcode.begin(rec, dev, items)
    ok = False
    try:
        deferred.later(dev.plugin.run, dev.local, address, r.args, launch)
        ok = True
    finally:
        hostcode.end(rec, r, ok)


def pg_py_acc_data(op, flags, n, packed, hostaddrs, async_, num_waits, waits):
    """GOACC_data_start (returns the region's handle), enter/exit data, update, declare,
    wait.  On the host (the `if` clause false, or the current device is the host) data
    constructs do nothing."""
    dev = acc.current()
    if accprof.mask:
        rec = acc.prof_record(_CONSTRUCTS[op], dev, async_)
        try:
            return _acc_data(rec, dev, op, flags, n, packed, hostaddrs, async_, num_waits,
                             waits)
        finally:
            if rec:
                accprof.finish(rec)
    return _acc_data(None, dev, op, flags, n, packed, hostaddrs, async_, num_waits, waits)


_CONSTRUCTS = {AccOp.DATA: accprof.construct_data, AccOp.ENTER: accprof.construct_enter_data,
               AccOp.EXIT: accprof.construct_exit_data,
               AccOp.ENTER_EXIT: accprof.construct_enter_data,
               AccOp.UPDATE: accprof.construct_update,
               AccOp.DECLARE: accprof.construct_declare, AccOp.WAIT: accprof.construct_wait}
_STARTS = {AccOp.DATA: accprof.ev_enter_data_start, AccOp.ENTER: accprof.ev_enter_data_start,
           AccOp.EXIT: accprof.ev_exit_data_start, AccOp.UPDATE: accprof.ev_update_start}


def _acc_data(rec, dev, op, flags, n, packed, hostaddrs, async_, num_waits, waits):
    waits = abi.ffi.unpack(waits, num_waits) if num_waits else []
    if op == AccOp.WAIT:
        if waits:
            acc.wait_list(async_, waits)
        elif async_ == acc.async_sync:
            acc.wait()
        else:
            acc.wait_async(None, async_)
        return 1
    host = flags & HOST_FALLBACK or dev.is_initial
    items = abi.acc_items(n, packed)
    if op == AccOp.ENTER_EXIT and not host:
        op = AccOp.ENTER if _entering(items) else AccOp.EXIT
    if rec and op in _STARTS:
        if op == AccOp.DATA and any(it.kind == kinds.USE_DEVICE_PTR for it in items):
            rec.construct = accprof.construct_host_data
        info = accprof.fire(rec, _STARTS[op])
        try:
            return _acc_data_now(rec, dev, host, op, items, hostaddrs, async_, waits)
        finally:
            if host:
                rec.set_device_type(acc.device_host)
            accprof.fire(rec, _STARTS[op] + 1, info)
    return _acc_data_now(rec, dev, host, op, items, hostaddrs, async_, waits)


def _acc_data_now(rec, dev, host, op, items, hostaddrs, async_, waits):
    if op == AccOp.DATA:
        if host:
            return gomp.data_region(mapping.begin(devices.initial(), []), hostaddrs)
        if rec:         # in acc.run: the events of its copies
            return gomp.data_region(acc.run(acc.async_sync, lambda: mapping.begin(
                dev, items, acc=True), dev), hostaddrs)
        return gomp.data_region(mapping.begin(dev, items, acc=True), hostaddrs)
    if host:
        return 1
    if waits:
        acc.wait_list(async_, waits)
    items = [it for it in items if it.kind != kinds.FIRSTPRIVATE_INT]   # NULL: nothing
    if op == AccOp.DECLARE:
        acc.run(acc.async_sync, lambda: _declare(dev, items), dev)
        return 1
    job = {AccOp.ENTER: lambda: mapping.enter_data(dev, items, acc=True),
           AccOp.EXIT: lambda: accmap.exit_data(dev, items),
           AccOp.UPDATE: lambda: accmap.update(dev, items)}[op]
    acc.run(async_, job, dev)
    return 1


def _entering(items) -> bool:
    """GOACC_enter_exit_data (GCC 11 and earlier): the first decisive kind tells."""
    for it in items:
        k = kinds.base(it.kind)
        if k in (kinds.FORCE_ALLOC, kinds.FORCE_PRESENT, kinds.ATTACH, kinds.FORCE_TO,
                 kinds.TO, kinds.ALLOC):
            return True
        if k in (kinds.RELEASE, kinds.DELETE, kinds.DETACH, kinds.FORCE_DETACH, kinds.FROM,
                 kinds.FORCE_FROM):
            return False
        if k not in (kinds.POINTER, kinds.TO_PSET, kinds.STRUCT):
            raise mapping.MappingError(f">>>> GOACC_enter_exit_data UNHANDLED kind {k:#04x}")
    return False


def _declare(dev, items):
    """GOACC_declare: each item enters or exits on its own."""
    for it in items:
        k = kinds.base(it.kind)
        if k in (kinds.POINTER, kinds.TO_PSET, kinds.FORCE_DEVICEPTR) or (
                k == kinds.ALLOC and accmap.is_present(dev, it.addr, it.size)):
            continue
        if k in (kinds.ALLOC, kinds.FORCE_ALLOC, kinds.TO, kinds.FORCE_TO):
            mapping.enter_data(dev, [it], acc=True)
        elif k in (kinds.FROM, kinds.FORCE_FROM, kinds.RELEASE, kinds.DELETE):
            accmap.exit_data(dev, [it])
        elif k == kinds.FORCE_PRESENT:
            if not accmap.is_present(dev, it.addr, it.size):
                raise mapping.MappingError(f"[{it.addr:#x},{it.size}] is not mapped")
        else:
            raise mapping.MappingError(f"GOACC_declare: unhandled kind {k:#04x}")
