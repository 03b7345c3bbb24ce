"""The omp_* device routines that shim.c hands to Python (omp_get_num_devices,
omp_target_alloc, omp_target_memcpy, ...): pygomp.api's, with C's values (NULL, 0,
EINVAL) where libgomp gives them instead of stopping.  The blocks omp_target_alloc
gives C are kept (`hostcode.blocks`): a region's host code may point into them.
"""
from __future__ import annotations

import errno

from .. import api
from ..runtime import devices
from ..runtime.plugin import PluginError
from . import abi, hostcode

EINVAL = errno.EINVAL


def _c(fn, failed, *args):
    """An omp_* routine of pygomp.api; ``failed`` where the device number names no
    device or the device fails (libgomp returns an error value there, it does not stop)."""
    try:
        return fn(*args)
    except (devices.OffloadError, PluginError):
        return failed


def _int(p) -> int:
    return int(abi.ffi.cast("uintptr_t", p))


def pg_py_num_devices():
    return devices.num_devices()


def pg_py_set_default_device(n):
    api.omp_set_default_device(n)


def pg_py_target_alloc(size, n):
    d = _c(api.omp_target_alloc, 0, size, n)
    if d:
        hostcode.blocks[d] = (devices.resolve(n, routine=True).number, size)
    return abi.ffi.cast("void *", d)


def pg_py_target_free(ptr, n):
    hostcode.blocks.pop(_int(ptr), None)
    _c(api.omp_target_free, None, _int(ptr), n)


def pg_py_target_is_present(ptr, n):
    return 1 if ptr == abi.ffi.NULL else _c(api.omp_target_is_present, 0, _int(ptr), n)


def pg_py_target_is_accessible(ptr, size, n):
    return _c(api.omp_target_is_accessible, 0, _int(ptr), size, n)


def pg_py_get_mapped_ptr(ptr, n):
    if ptr == abi.ffi.NULL:
        return abi.ffi.NULL
    return abi.ffi.cast("void *", _c(api.omp_get_mapped_ptr, 0, _int(ptr), n))


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
    if dst == abi.ffi.NULL and src == abi.ffi.NULL:
        return api.omp_target_memcpy_rect(None, None, 0, 0, (), (), (), (), (), 0, 0)
    if num_dims < 1:
        return EINVAL
    arrays = [abi.ffi.unpack(a, num_dims)
              for a in (volume, dst_offsets, src_offsets, dst_dims, src_dims)]
    return _c(api.omp_target_memcpy_rect, EINVAL, _int(dst), _int(src), element_size,
              num_dims, *arrays, dst_n, src_n)
