"""GCC's offload ABI decoded into runtime-core calls: the Python half of libpygomp.so.

csrc/shim.c calls the ``pg_py_*`` functions below (cffi ``extern "Python"``).  They
decode GOMP_target_ext's arrays (host addresses, sizes, 16-bit kinds: the map kind in
the low byte, log2 of its alignment in the high byte) into `mapping.Item`s, choose the
device and call the core, which decides what every kind means.  A failure goes back
to C as 0, with libgomp's words for it; shim.c prints them and exits as gomp_fatal.

A target region whose function has no image on its device:
- on a device of the host plugin (separate memory, host-addressable) its host code
  runs with the device addresses;
- on another device (OpenCL, CUDA) it runs on the initial device, with a PYGOMP_INFO
  message, or fails under OMP_TARGET_OFFLOAD=mandatory.
"""
from __future__ import annotations

import errno
import itertools
import json

from . import api
from .runtime import devices, env, images, kinds, mapping
from .runtime.mapping import Item
from .runtime.plugin import Image, KernelInfo, PluginError

OP_TARGET, OP_DATA, OP_UPDATE, OP_ENTER, OP_EXIT = range(5)    # shim.c's constants
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


def _on_error(exc_type, exc, tb):
    """An exception escaped a callback: hand its text to C (the callback returns 0)."""
    if lib is not None:
        lib.pg_set_error(_words(exc).encode(errors="replace"))


def _words(exc) -> str:
    if isinstance(exc, (mapping.MappingError, devices.OffloadError)):
        return str(exc)
    return f"pygomp: {type(exc).__name__}: {exc}"


_resolved = (None, None, None)   # (number, device list, device): the last resolution


def _device(device: int) -> devices.Device:
    """The device of a construct (shim.c has already read GOMP_DEVICE_ICV).  The last
    device that a number named itself is reused while the device list and its state
    stay (anything else goes through the resolver, with its fallbacks and messages)."""
    global _resolved
    number, devs, dev = _resolved
    if number == device and devs is devices.all_devices() and dev.state == "initialized":
        return dev
    dev = devices.resolve(device, compiled=True)
    if dev.number == device:
        _resolved = (device, devices.all_devices(), dev)
    return dev


_new = tuple.__new__            # an Item without namedtuple's slower constructor
_DEFAULTS = tuple(Item._field_defaults.values())      # the fields after addr, size, kind
_NULL = Item(0, 0, kinds.FIRSTPRIVATE_INT)
_decoded = {}                   # the packed items of recent constructs -> their Items


def _items(n, packed):
    """The map items of a construct from shim.c's (address, size, kind) triples, in
    order (a NULL address is passed as NULL).  A loop's region repeats its triples:
    they are decoded once."""
    key = ffi.buffer(packed, 24 * n)[:]
    items = _decoded.get(key)
    if items is None:
        w = ffi.unpack(packed, 3 * n)
        items = [_new(Item, (a, s, k) + _DEFAULTS) if a else _NULL
                 for a, s, k in zip(w[0::3], w[1::3], w[2::3])]
        if len(_decoded) >= 4096:
            _decoded.clear()
        _decoded[key] = items
    return items


# -- constructs: each returns 0 for a failure, else non-zero ---------------------

def pg_py_target(device, fn, n, packed, args):
    """GOMP_target_ext: map, run (an image, or the host code with device addresses:
    ``args`` is the argument block shim.c gave), unmap."""
    dev = _device(device)
    items = _items(n, packed)
    if dev.loaded and mapping.find_function(dev, fn) is not None:
        mapping.target(dev, fn, items, _launch.get(fn, (0, 0, 0)))
        return 1
    if dev.target != "host":
        if env.settings().target_offload == "mandatory":
            raise devices.OffloadError("OMP_TARGET_OFFLOAD is set to MANDATORY, but device "
                                       "cannot be used for offloading")
        env.info(env.INFO_LAUNCH, f"device {dev.number} ({dev.plugin.name}) has no image of "
                                  f"the target region at {fn:#x}: host fallback")
        dev = devices.initial()
    region = mapping.begin(dev, items)
    ok = False
    try:
        for i, w in enumerate(region.args):
            args[i] = w
        lib.pg_call_host(fn, args, -1 if dev.is_initial else dev.number)
        ok = True
    finally:
        mapping.end(region, copy_back=ok)
    return 1


def pg_py_data(op, device, n, packed, hostaddrs):
    """target data (returns the region's handle), update, enter data, exit data."""
    dev = _device(device)
    items = _items(n, packed)
    if op == OP_DATA:
        region = mapping.begin(dev, items)
        handle = next(_handles)
        _regions[handle] = region
        for i, it in enumerate(items):       # use_device_ptr/addr: written back for C
            if it.kind in (kinds.USE_DEVICE_PTR, kinds.USE_DEVICE_PTR_IF_PRESENT):
                hostaddrs[i] = region.args[i]
        return handle
    items = [it for it in items if it.kind != kinds.FIRSTPRIVATE_INT]   # NULL: nothing
    if op == OP_UPDATE:
        mapping.update(dev, items)
    elif op == OP_ENTER:
        mapping.enter_data(dev, items)
    else:
        mapping.exit_data(dev, items)
    return 1


def pg_py_end_data(handle):
    mapping.end(_regions.pop(handle))
    return 1


def pg_py_at_exit():
    devices.finalize_all()


MAGIC = b"pygomp1\0"          # pygomp/build.py's tables (docs/c-tables.md)


def pg_py_table(op, version, host_table, data):
    """GOMP_offload_register_ver (op 1) / unregister (op 0) of a pygomp table."""
    if op == 0:
        table = _tables.pop(host_table, None)
        if table is not None:
            images.unregister(table)
            for f in table.functions:
                _launch.pop(f, None)
        return 1
    if ffi.buffer(ffi.cast("char *", data), 8)[:] != MAGIC:
        raise ValueError(f"the offload table at {data:#x} is not pygomp's (no {MAGIC!r})")
    words = ffi.cast("uint64_t *", data)
    meta = json.loads(ffi.string(ffi.cast("char *", words[1])).decode())
    codes = ffi.cast("uint64_t *", words[3])
    sizes = ffi.cast("uint64_t *", words[4])
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
    return ffi.cast("void *", _c(api.omp_target_alloc, 0, size, n))


def pg_py_target_free(ptr, n):
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
