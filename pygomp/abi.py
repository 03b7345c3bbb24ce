"""GCC's offload ABI (OpenMP and OpenACC) decoded into runtime-core calls: the Python
half of libpygomp.so.

csrc/shim.c calls the ``pg_py_*`` functions below (cffi ``extern "Python"``).  They
decode GOMP_target_ext's arrays (host addresses, sizes, 16-bit kinds: the map kind in
the low byte, log2 of its alignment in the high byte) into `mapping.Item`s, choose the
device and call the core, which decides what every kind means.  A failure ends the
process as libgomp's gomp_fatal does, after its traceback unless it is one of pygomp's
own errors for the user (`_on_error`).

A target region whose function has no image on its device:
- on a device of the host plugin (separate memory, host-addressable) its host code
  runs with the device addresses;
- on another device (OpenCL, CUDA) it maps on that device as the construct says, and
  its host code runs on the host with a host view of the device's data (`hostview`),
  with a PYGOMP_INFO message; under OMP_TARGET_OFFLOAD=mandatory (OpenMP) it fails.

OpenACC's constructs run on `pygomp.acc`'s current device with OpenACC's reference
counts; ``async`` work goes to that device's queues (`acc.run`).
"""
from __future__ import annotations

import ctypes
import errno
import itertools
import json
import re
import sys
import traceback

from pygomp_csrc import contract
from pygomp_csrc.contract import AccOp, Op, Routine as R

from . import acc, api
from .runtime import (accmap, accprof, calls, deferred, devices, elf_tables, env,
                      gcc_images, hostview, images, kinds, mapping, trace)
from .errors import PygompError
from .runtime.entries import PTR, WORD, Item
from .runtime.plugin import Image, KernelInfo, PluginError

EINVAL = errno.EINVAL

ffi = lib = None
_regions = {}                   # handle -> the mapping.Region of an open target data
_tables = {}                    # a C table's address -> its registered OffloadImage
_launch = {}                    # a table function's host address -> its launch sizes
_handles = itertools.count(1)


def attach(ffi_, lib_) -> None:
    """Called once by the library's init code: define the extern "Python" functions."""
    global ffi, lib
    ffi, lib = ffi_, lib_
    for name, fn in list(globals().items()):
        if name.startswith("pg_py_"):
            ffi.def_extern(name=name, onerror=_on_error)(fn)
    calls.use_c(ffi, lib)
    if not sys.orig_argv:       # this library started Python: a C program's numbering
        devices.native_first()
    for found in elf_tables.loaded():
        if found.variables:
            images.register(elf_tables.offload_table(found))
    accprof.use_c(ffi, lib)


def _on_error(exc_type, exc, tb):
    """An exception escaped a callback: libgomp's fatal error (shim.c prints
    "libgomp: <words>" and exits with status 1).  An error that pygomp raised on purpose
    for the user shows its words alone; anything else, a bug or a hook that failed,
    shows its whole traceback first."""
    if not _deliberate(exc):
        traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
    sys.stderr.flush()
    lib.pg_fatal(_words(exc).encode(errors="replace"))


def _deliberate(exc) -> bool:
    """Raised on purpose with words for the user, and not caused by another error."""
    while exc is not None:
        if not isinstance(exc, PygompError):
            return False
        exc = exc.__cause__
    return True


def _words(exc) -> str:
    """libgomp's words for an error (a map error without pygomp's "device N: ")."""
    if isinstance(exc, mapping.MappingError):
        return re.sub(r"^device \d+: ", "", str(exc))
    if isinstance(exc, devices.OffloadError):
        return str(exc)
    return f"pygomp: {type(exc).__name__}: {exc}"


_new = tuple.__new__            # an Item without namedtuple's slower constructor
_DEFAULTS = tuple(Item._field_defaults.values())      # the fields after addr, size, kind
_NULL = Item(0, 0, kinds.FIRSTPRIVATE_INT)
_targets = {}                   # (device, fn, packed items) -> its region's calls.Call


def _items(n, packed):
    """The map items of a construct from shim.c's (address, size, kind) triples, in
    order (a NULL address is passed as NULL)."""
    w = ffi.unpack(packed, 3 * n)
    return [_new(Item, (a, s, k) + _DEFAULTS) if a else _NULL
            for a, s, k in zip(w[0::3], w[1::3], w[2::3])]


def _acc_items(n, packed):
    """`_items` of an OpenACC construct, whose kinds keep libgomp's alignment byte (log2
    of the alignment, above the kind's low byte): the items carry the alignment."""
    w = ffi.unpack(packed, 3 * n)
    return [_new(Item, (a, s, k & 0xff, None, None, 1 << (k >> 8))) if a else _NULL
            for a, s, k in zip(w[0::3], w[1::3], w[2::3])]


def _target_call(device, fn, n, packed, bounds):
    """The `calls.Call` of a target region, fresh or looked up now: a loop's region
    repeats its triples, and reuses its items, device and look-ups while the call is
    fresh.  A number that the resolver turns into another device is resolved every
    time.  ``bounds``: the region's num_teams and thread_limit, the launch of a GCC
    image (pygomp's images have their own)."""
    key = (device, fn, bounds, ffi.buffer(packed, 24 * n)[:])
    call = _targets.get(key)
    if call is not None and call.fresh():
        return call
    dev = devices.resolve(device, compiled=True)
    call = calls.Call(dev, fn, _items(n, packed) if call is None else call.items, (),
                      _launch.get(fn, (*bounds, 0)), host_code=dev.target == "host")
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
    if prepared.address is not None or (not fresh and _has_image(dev, fn)):
        prepared.run()
        return 1
    if fresh and dev.target == "host":
        def host(words):
            if words is None:           # not prepared: the whole construct
                _host_code(dev, fn, items, n, args)
            else:
                if n:
                    args[0:n] = words
                lib.pg_call_host(fn, args, -1 if dev.is_initial else dev.number)
        prepared.run(host=host)
        if dev.number == device:
            _plan(prepared, device, fn, n, packed)     # the map as this region left it
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
            lib.pg_call_host(fn, args, -1)
        _region_on_host(dev, fn, items, call, "target region")
        return 1
    _host_code(dev, fn, items, n, args)
    return 1


def _plan(call, device, fn, n, packed):
    """Give C the plan of a region that it may run itself from now on (shim.c)."""
    got = call.plan()
    if got is not None:
        pid, version, words, flags = got
        old = lib.pg_plan_install(device, fn, n, packed, words, flags, version, pid)
        if old:
            calls.forget(pid if old < 0 else old)


def pg_py_land(token):
    """A region that C ran by its plan and Python adopted meanwhile: its end."""
    calls.land(token)
    return 1


def _host_code(dev, fn, items, n, args):
    """Map, run a region's host code with the device's words, unmap."""
    region = mapping.begin(dev, items)
    ok = False
    try:
        if n:
            args[0:n] = region.args        # one word per item (cffi checks the length)
        lib.pg_call_host(fn, args, -1 if dev.is_initial else dev.number)
        ok = True
    finally:
        mapping.end(region, copy_back=ok)


def _has_image(dev, fn):
    return bool(dev.loaded) and mapping.find_function(dev, fn) is not None


# -- regions without an image, run on the host with a host view of the device's data --

_blocks = {}            # what omp_target_alloc gave C: address -> (device number, size)


def _region_on_host(dev, fn, items, call, what, acc_=False, rec=None, launch=(0, 0, 0)):
    """A region with no image on ``dev`` (a device whose memory the host cannot use):
    it maps on ``dev`` as the construct says (the same checks, counts and copies as a
    region there), and ``call(words)`` runs its host code on the host later in the
    construct's order (`hostview.run`), then the construct ends as on the device.
    Inside an async queue's `deferred.deferred` block the map changes now and the rest
    waits."""
    def work(r):
        spans, slots = accmap.device_memory(dev)        # now: entries may go at the end
        spans += [(a, a + size) for a, (d, size) in list(_blocks.items()) if d == dev.number]
        spans += [(a, a + size) for a, size in acc.allocations(dev)]
        pointers = []       # the private copies of deviceptr's pointers
        anchors = []        # per word, an address inside the memory it points into
        for i, (it, w, e) in enumerate(zip(r.items, r.args, r.entries)):
            k = kinds.base(it.kind)
            # a struct's base, or an implicit map's start, may lie before its memory
            anchors.append(e.dev_start if e is not None else
                           r.args[i + 1] if k == kinds.STRUCT else w)
            if k in (kinds.FIRSTPRIVATE, kinds.FORCE_DEVICEPTR):
                size = PTR if k == kinds.FORCE_DEVICEPTR else it.size
                spans.append((w, w + max(size, 1)))
                if k == kinds.FORCE_DEVICEPTR:
                    pointers.append(w)
        where = f"device {dev.number} ({dev.plugin.name}): the {what} at {fn:#x}"
        return (hostview.run, dev, list(zip(r.args, anchors)), hostview.merged(spans),
                sorted(slots), pointers, call, where)
    _queued_region(dev, fn, items, work, acc_, rec, launch)


def _queued_region(dev, fn, items, work, acc_, rec, launch):
    """Map ``items`` on ``dev`` (with the construct's events under ``rec``), queue the
    call ``work(region)`` returns (a launch of ``fn``, in the construct's order), and end
    the construct as on the device (copying back only if all went well)."""
    r = _enter(rec, dev, items) if rec else mapping.begin(dev, items, acc=acc_)
    ok = False
    try:
        job = work(r)
        if rec:
            _launch_later(rec, fn, launch, *job)
        else:
            deferred.later(*job)
        ok = True
    finally:
        if rec:
            _exit(rec, r, ok)
        else:
            mapping.end(r, copy_back=ok)


def pg_py_data(op, device, n, packed, hostaddrs):
    """target data (returns the region's handle), update, enter data, exit data."""
    dev = devices.resolve(device, compiled=True)
    items = _items(n, packed)
    if op == Op.DATA:
        return _data_region(mapping.begin(dev, items), hostaddrs)
    items = [it for it in items if it.kind != kinds.FIRSTPRIVATE_INT]   # NULL: nothing
    if op == Op.UPDATE:
        mapping.update(dev, items)
    elif op == Op.ENTER:
        mapping.enter_data(dev, items)
    else:
        mapping.exit_data(dev, items)
    return 1


def _data_region(region, hostaddrs):
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


def pg_py_at_exit():
    """The program's end (the embedded interpreter is never finalized, so Python's
    atexit does not run): release the devices, write the PYGOMP_PROFILE trace."""
    lib.pg_plans_off()
    devices.finalize_all()
    if accprof.mask:
        rec = accprof.start(accprof.construct_runtime_api, acc.device_none, -1)
        accprof.fire(rec or accprof.current(), accprof.ev_runtime_shutdown)
        accprof.finish(rec)
    if trace.on:
        trace.write()


def pg_py_prof_mask():
    accprof.mask_changed()
    if accprof.mask:            # callbacks see every region: Python runs them all
        lib.pg_plans_off()


MAGIC = b"pygomp1\0"          # pygomp/build.py's tables (docs/c-tables.md)
META, N_CODES, CODES, SIZES = 1, 2, 3, 4    # the words of its struct pygomp_table


def pg_py_table(registering, target_type, version, host_table, data):
    """GOMP_offload_register_ver (``registering``) or unregister of a table of one of the
    target types shim.c hands over (pygomp's, or GCC's nvptx images: `gcc_images`)."""
    if registering and target_type == contract.NVIDIA_PTX:
        _tables[host_table] = images.register(gcc_images.table(version, host_table, data))
        return 1
    if not registering:
        table = _tables.pop(host_table, None)
        if table is not None:
            images.unregister(table)
            for f in table.functions:
                _launch.pop(f, None)
        return 1
    if ffi.buffer(ffi.cast("char *", data), 8)[:] != MAGIC:
        raise ValueError(f"the offload table at {data:#x} is not pygomp's (no {MAGIC!r})")
    words = ffi.cast("uint64_t *", data)
    meta = json.loads(ffi.string(ffi.cast("char *", words[META])).decode())
    if len(meta["images"]) != words[N_CODES]:
        raise ValueError(f"the offload table at {data:#x} has the code of {words[N_CODES]} "
                         f"images for {len(meta['images'])} images")
    codes = ffi.cast("uint64_t *", words[CODES])
    sizes = ffi.cast("uint64_t *", words[SIZES])
    ends = ffi.cast("uint64_t *", host_table)        # GCC's: functions, then variables
    functions, pairs = (ffi.unpack(ffi.cast("uint64_t *", lo), (hi - lo) // 8) if hi > lo
                        else [] for lo, hi in ((ends[0], ends[1]), (ends[2], ends[3])))
    imgs = tuple(
        Image(m["target"], ffi.buffer(ffi.cast("char *", codes[i]), sizes[i])[:],
              tuple(KernelInfo(**{k: tuple(v) if isinstance(v, list) else v
                                  for k, v in info.items()}) for info in m["kernels"]),
              tuple(tuple(v) for v in m["variables"]), m["identity"], m["name"])
        for i, m in enumerate(meta["images"]))
    table = images.OffloadImage(functions=functions, variables=list(zip(pairs[::2], pairs[1::2])),
                                images=imgs, name=meta["name"])
    for f in functions:
        _launch[f] = tuple(meta["launch"])
    _tables[host_table] = images.register(table)
    return 1


# -- omp_* routines: C's values (NULL, 0, EINVAL) where libgomp gives them -----------

def _c(fn, failed, *args):
    """An omp_* routine of pygomp.api; ``failed`` where the device number names no
    device or the device fails (libgomp returns an error value there, it does not stop)."""
    try:
        return fn(*args)
    except (devices.OffloadError, PluginError):
        return failed


def _int(p) -> int:
    return int(ffi.cast("uintptr_t", p))


def pg_py_num_devices():
    return devices.num_devices()


def pg_py_set_default_device(n):
    api.omp_set_default_device(n)


def pg_py_target_alloc(size, n):
    d = _c(api.omp_target_alloc, 0, size, n)
    if d:
        _blocks[d] = (devices.resolve(n, routine=True).number, size)
    return ffi.cast("void *", d)


def pg_py_target_free(ptr, n):
    _blocks.pop(_int(ptr), None)
    _c(api.omp_target_free, None, _int(ptr), n)


def pg_py_target_is_present(ptr, n):
    return 1 if ptr == ffi.NULL else _c(api.omp_target_is_present, 0, _int(ptr), n)


def pg_py_target_is_accessible(ptr, size, n):
    return _c(api.omp_target_is_accessible, 0, _int(ptr), size, n)


def pg_py_get_mapped_ptr(ptr, n):
    if ptr == ffi.NULL:
        return ffi.NULL
    return ffi.cast("void *", _c(api.omp_get_mapped_ptr, 0, _int(ptr), n))


def pg_py_target_associate_ptr(host_ptr, device_ptr, size, offset, n):
    return _c(api.omp_target_associate_ptr, EINVAL, _int(host_ptr), _int(device_ptr), size,
              offset, n)


def pg_py_target_disassociate_ptr(ptr, n):
    return _c(api.omp_target_disassociate_ptr, EINVAL, _int(ptr), n)


def pg_py_target_memcpy(dst, src, length, dst_offset, src_offset, dst_n, src_n):
    return _c(api.omp_target_memcpy, EINVAL, _int(dst), _int(src), length, dst_offset,
              src_offset, dst_n, src_n)


def pg_py_target_memcpy_rect(dst, src, element_size, num_dims, volume, dst_offsets,
                             src_offsets, dst_dims, src_dims, dst_n, src_n):
    if dst == ffi.NULL and src == ffi.NULL:
        return api.omp_target_memcpy_rect(None, None, 0, 0, (), (), (), (), (), 0, 0)
    if num_dims < 1:
        return EINVAL
    arrays = [ffi.unpack(a, num_dims) for a in (volume, dst_offsets, src_offsets, dst_dims,
                                                 src_dims)]
    return _c(api.omp_target_memcpy_rect, EINVAL, _int(dst), _int(src), element_size,
              num_dims, *arrays, dst_n, src_n)


# -- OpenACC: the GOACC_* entry points and the acc_* routines -----------------------

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
        lib.pg_call_acc(fn, hostaddrs, acc.device_host)
        return 1
    if rec:
        rec.set_async(async_)
    if num_waits:
        acc.wait_list(async_, ffi.unpack(waits, num_waits))
    items = _acc_items(n, packed)
    launch = tuple(ffi.unpack(dims, 3))
    if _has_image(dev, fn):
        launch = launch if any(launch) else _launch.get(fn, (0, 0, 0))
        if rec:
            acc.run(async_, lambda: _acc_image(rec, dev, fn, items, launch), dev)
        else:
            acc.run(async_, lambda: mapping.target(dev, fn, items, launch, acc=True), dev)
    elif dev.target == "host":
        acc.run(async_, lambda: _acc_region(dev, fn, items, rec, launch), dev)
    else:
        env.info(env.INFO_LAUNCH, f"device {dev.number} ({dev.plugin.name}) has no image of "
                                  f"the compute region at {fn:#x}: its host code runs on the "
                                  f"host with the device's data")

        def call(words):
            lib.pg_call_acc(fn, ffi.new("uintptr_t[]", words or [0]), acc.device_host)
        acc.run(async_, lambda: _region_on_host(dev, fn, items, call, "compute region",
                                                acc_=True, rec=rec, launch=launch), dev)
    return 1


def _acc_region(dev, fn, items, rec=None, launch=(0, 0, 0)):
    """A compute region's host code on a host-plugin device, with device addresses."""
    _queued_region(dev, fn, items, lambda r: (lib.pg_call_acc, fn,
                                              ffi.new("uintptr_t[]", r.args or [0]),
                                              acc.region_type(dev)),
                   True, rec, launch)


def _acc_image(rec, dev, fn, items, launch):
    """`mapping.target` for OpenACC with the events of its phases (`_enter`, `_exit`);
    acc.run adds the launch's."""
    dev.ensure_init()
    address = mapping.function_address(dev, fn)
    r = _enter(rec, dev, items)
    ok = False
    try:
        deferred.later(dev.plugin.run, dev.local, address, r.args, launch)
        ok = True
    finally:
        _exit(rec, r, ok)


def _enter(rec, dev, items):
    """A compute construct's map (mapping.begin), between its enter data events."""
    info = accprof.queued(rec, accprof.ev_enter_data_start, implicit=1)
    r = mapping.begin(dev, items, acc=True)
    accprof.worked(rec)
    accprof.queued(rec, accprof.ev_enter_data_end, info, implicit=1)
    return r


def _exit(rec, r, ok):
    """A compute construct's unmap (mapping.end), between its exit data events."""
    info = accprof.queued(rec, accprof.ev_exit_data_start, implicit=1)
    mapping.end(r, copy_back=ok)
    accprof.queued(rec, accprof.ev_exit_data_end, info, implicit=1)


def _launch_later(rec, fn, launch, call, *args):
    """``call(*args)``, a region's host code, as deferred work between its enqueue
    launch events."""
    for f, a, keep in accprof.launched(rec, [(call, args, None)], accprof.symbol(fn), launch):
        deferred.later(f, *a, keep=keep)


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
    waits = ffi.unpack(waits, num_waits) if num_waits else []
    if op == AccOp.WAIT:
        if waits:
            acc.wait_list(async_, waits)
        elif async_ == acc.async_sync:
            acc.wait()
        else:
            acc.wait_async(None, async_)
        return 1
    host = flags & HOST_FALLBACK or dev.is_initial
    items = _acc_items(n, packed)
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
            return _data_region(mapping.begin(devices.initial(), []), hostaddrs)
        if rec:         # in acc.run: the events of its copies
            return _data_region(acc.run(acc.async_sync, lambda: mapping.begin(
                dev, items, acc=True), dev), hostaddrs)
        return _data_region(mapping.begin(dev, items, acc=True), hostaddrs)
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


def _s(w) -> int:
    """A 64-bit word as a signed C int."""
    return w - (1 << 64) if w >> 63 else w


_ACC = {    # routine -> fn(word, word, word, async queue)
    R.GET_NUM_DEVICES: lambda a, b, c, q: acc.get_num_devices(_s(a)),
    R.SET_DEVICE_TYPE: lambda a, b, c, q: acc.set_device_type(_s(a)),
    R.GET_DEVICE_TYPE: lambda a, b, c, q: acc.get_device_type(),
    R.SET_DEVICE_NUM: lambda a, b, c, q: acc.set_device_num(_s(a), _s(b)),
    R.GET_DEVICE_NUM: lambda a, b, c, q: acc.get_device_num(_s(a)),
    R.INIT: lambda a, b, c, q: acc.init(_s(a)),
    R.SHUTDOWN: lambda a, b, c, q: acc.shutdown(_s(a)),
    R.MALLOC: lambda a, b, c, q: acc.malloc(a),
    R.FREE: lambda a, b, c, q: acc.free(a),
    R.COPYIN: lambda a, b, c, q: acc.enter(a, b, kinds.TO, None, q, 1),   # kinds of
    R.CREATE: lambda a, b, c, q: acc.enter(a, b, kinds.ALLOC, None, q, 1),  # alignment 1
    R.COPYOUT: lambda a, b, c, q: acc.leave(a, b, kinds.FROM, q),
    R.COPYOUT_FINALIZE: lambda a, b, c, q: acc.leave(a, b, kinds.FORCE_FROM, q),
    R.DELETE: lambda a, b, c, q: acc.leave(a, b, kinds.RELEASE, q),
    R.DELETE_FINALIZE: lambda a, b, c, q: acc.leave(a, b, kinds.DELETE, q),
    R.UPDATE_DEVICE: lambda a, b, c, q: acc.update(a, b, True, q),
    R.UPDATE_SELF: lambda a, b, c, q: acc.update(a, b, False, q),
    R.IS_PRESENT: lambda a, b, c, q: acc.present(a, b),
    R.DEVICEPTR: lambda a, b, c, q: acc.device_address(a),
    R.HOSTPTR: lambda a, b, c, q: acc.host_address(a),
    R.MAP_DATA: lambda a, b, c, q: acc.map_data(a, b, c),
    R.UNMAP_DATA: lambda a, b, c, q: acc.unmap_data(a),
    R.MEMCPY_TO_DEVICE: lambda a, b, c, q: acc.memcpy(a, b, c, True, q),
    R.MEMCPY_FROM_DEVICE: lambda a, b, c, q: acc.memcpy(a, b, c, False, q),
    R.ATTACH: lambda a, b, c, q: acc.attach(a, q),
    R.DETACH: lambda a, b, c, q: acc.detach(a, False, q),
    R.DETACH_FINALIZE: lambda a, b, c, q: acc.detach(a, True, q),
    R.ASYNC_TEST: lambda a, b, c, q: acc.async_test(_s(a)),
    R.ASYNC_TEST_ALL: lambda a, b, c, q: acc.async_test_all(),
    R.WAIT: lambda a, b, c, q: acc.wait(_s(a)),
    R.WAIT_ALL: lambda a, b, c, q: acc.wait(),
    R.WAIT_ASYNC: lambda a, b, c, q: acc.wait_async(_s(a), _s(b)),
    R.WAIT_ALL_ASYNC: lambda a, b, c, q: acc.wait_async(None, _s(a)),
    R.GET_PROPERTY: lambda a, b, c, q: _number(acc.get_property(_s(a), _s(b), c)),
    R.GET_PROPERTY_STRING: lambda a, b, c, q: _string(acc.get_property(_s(a), _s(b), c)),
    R.CUDA_DEVICE: lambda a, b, c, q: acc.cuda_device(),
    R.CUDA_CONTEXT: lambda a, b, c, q: acc.cuda_context(),
    R.CUDA_STREAM: lambda a, b, c, q: acc.cuda_stream(_s(a)),
    R.SET_CUDA_STREAM: lambda a, b, c, q: acc.set_cuda_stream(_s(a), b),
}


def _number(value) -> int:
    return value if isinstance(value, int) else 0


_strings = {}       # text -> its C string, kept while the process runs (C keeps the pointer)


def _string(value) -> int:
    """A C string of ``value`` that stays valid (NULL for no string)."""
    if not isinstance(value, str):
        return 0
    if value not in _strings:
        _strings[value] = ctypes.create_string_buffer(value.encode())
    return ctypes.addressof(_strings[value])


_ACC_BY_NUMBER = tuple(_ACC[r] for r in vars(R).values())    # every routine has one


def pg_py_acc(routine, words, async_, result):
    """An acc_* routine: its value (None: 0) goes to ``*result``."""
    value = _ACC_BY_NUMBER[routine](words[0], words[1], words[2], async_)
    result[0] = int(value or 0) & WORD
    return 1
