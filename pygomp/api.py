"""OpenMP device routines under their spec names.

Where C takes a pointer these take an array (its data address: numpy arrays, objects
with ``__array_interface__`` or the buffer protocol, ctypes objects), an int address, or
None (NULL).  Device addresses are ints; NULL is 0.  Return values follow C: 0 for
success, an errno value (EINVAL) for failure, 1/0 for true/false.
"""
from __future__ import annotations

import ctypes
import errno
import math

from .constructs import ARRAYS, as_array
from .runtime import devices, mapping
from .runtime.plugin import PluginError

omp_initial_device = devices.INITIAL_DEVICE
omp_invalid_device = devices.INVALID_DEVICE


def _addr(p) -> int:
    if p is None:
        return 0
    if isinstance(p, int):
        return p
    a = as_array(p)
    if a is None:
        raise TypeError(f"pygomp: expected an array ({ARRAYS}), an int address or None, "
                        f"not {type(p).__name__}")
    return a.__array_interface__["data"][0]


def _device(n) -> devices.Device:
    return devices.resolve(n, routine=True)


def omp_get_num_devices() -> int:
    return devices.num_devices()


def omp_get_initial_device() -> int:
    return devices.num_devices()


def omp_get_default_device() -> int:
    return devices.get_default()


def omp_set_default_device(device_num: int) -> None:
    devices.set_default(device_num)


def omp_is_initial_device() -> int:
    return 1          # Python code runs on the host


def omp_get_device_num() -> int:
    return devices.num_devices()


def omp_target_alloc(size: int, device_num: int) -> int:
    """Device memory of ``size`` bytes, or 0 (NULL) when the device cannot give it."""
    dev = _device(device_num)
    try:
        return dev.plugin.alloc(dev.local, size)
    except PluginError:
        return 0


def omp_target_free(device_ptr, device_num: int) -> None:
    p = _addr(device_ptr)
    if p:
        dev = _device(device_num)
        dev.plugin.free(dev.local, p)


def _copy(dst, dst_dev, src, src_dev, n):
    if n == 0:
        return
    if dst_dev.is_initial and src_dev.is_initial:
        ctypes.memmove(dst, src, n)
    elif src_dev.is_initial:
        dst_dev.plugin.host2dev(dst_dev.local, dst, src, n)
    elif dst_dev.is_initial:
        src_dev.plugin.dev2host(src_dev.local, dst, src, n)
    elif dst_dev is src_dev:
        dst_dev.plugin.dev2dev(dst_dev.local, dst, src, n)
    else:                                   # two devices: through a host buffer
        stage = ctypes.create_string_buffer(n)
        src_dev.plugin.dev2host(src_dev.local, ctypes.addressof(stage), src, n)
        dst_dev.plugin.host2dev(dst_dev.local, dst, ctypes.addressof(stage), n)


def omp_target_memcpy(dst, src, length, dst_offset, src_offset,
                      dst_device_num, src_device_num) -> int:
    d, s = _addr(dst), _addr(src)
    if not d or not s:
        return errno.EINVAL
    _copy(d + dst_offset, _device(dst_device_num), s + src_offset,
          _device(src_device_num), length)
    return 0


def omp_target_memcpy_rect(dst, src, element_size, num_dims, volume, dst_offsets,
                           src_offsets, dst_dimensions, src_dimensions,
                           dst_device_num, src_device_num) -> int:
    """Copy a ``volume`` box between two arrays of ``*_dimensions`` elements."""
    if dst is None and src is None:
        return 2 ** 31 - 1                  # the number of dimensions supported
    d, s = _addr(dst), _addr(src)
    if not d or not s or num_dims < 1:
        return errno.EINVAL
    dd, sd = _device(dst_device_num), _device(src_device_num)

    def rect(d, s, dim):
        if dim == num_dims - 1:
            n = volume[dim] * element_size
            _copy(d + dst_offsets[dim] * element_size, dd,
                  s + src_offsets[dim] * element_size, sd, n)
            return
        d_stride = element_size * math.prod(dst_dimensions[dim + 1:num_dims])
        s_stride = element_size * math.prod(src_dimensions[dim + 1:num_dims])
        for j in range(volume[dim]):
            rect(d + (dst_offsets[dim] + j) * d_stride,
                 s + (src_offsets[dim] + j) * s_stride, dim + 1)

    rect(d, s, 0)
    return 0


def omp_target_is_present(ptr, device_num: int) -> int:
    return int(mapping.is_present(_device(device_num), _addr(ptr)))


def omp_target_is_accessible(ptr, size: int, device_num: int) -> int:
    """Host memory is accessible from the initial device only: every plugin's device
    here has memory of its own."""
    dev = _device(device_num)
    return int(dev.is_initial or "unified_memory" in dev.plugin.capabilities)


def omp_get_mapped_ptr(ptr, device_num: int) -> int:
    return mapping.device_address(_device(device_num), _addr(ptr))


def omp_target_associate_ptr(host_ptr, device_ptr, size, device_offset, device_num) -> int:
    dev = _device(device_num)
    h, d = _addr(host_ptr), _addr(device_ptr) + device_offset
    if dev.is_initial or not h:
        return errno.EINVAL
    return 0 if mapping.associate(dev, h, d, size) else errno.EINVAL


def omp_target_disassociate_ptr(ptr, device_num: int) -> int:
    dev = _device(device_num)
    if dev.is_initial:
        return errno.EINVAL
    return 0 if mapping.disassociate(dev, _addr(ptr)) else errno.EINVAL


__all__ = [n for n in dir() if n.startswith("omp_")]
