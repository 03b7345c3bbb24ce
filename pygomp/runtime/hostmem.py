"""Host memory for plugins whose device memory is host memory (the host device, OpenCL
devices on the CPU).

An allocation of `HUGE` bytes or more is 2 MiB-aligned, a whole number of 2 MiB pages,
and advised to use transparent huge pages (madvise MADV_HUGEPAGE, which the kernel's
"madvise" mode waits for), as numpy does for its own large arrays: a kernel that walks
such an array column by column then pays one TLB entry a 2 MiB page, not a 4 KiB one.
"""
from __future__ import annotations

import ctypes
import sys
import weakref

HUGE = 4 << 20              # bytes: from here on, huge pages
PAGE = 2 << 20              # a transparent huge page on x86-64 and arm64
ALIGNMENT = 64              # smaller allocations: a cache line
MADV_HUGEPAGE = 14

_libc = ctypes.CDLL(None)
_libc.posix_memalign.argtypes = (ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                 ctypes.c_size_t)
_libc.free.argtypes = (ctypes.c_void_p,)
_madvise = getattr(_libc, "madvise", None) if sys.platform.startswith("linux") else None
if _madvise is not None:
    _madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def alloc(size: int) -> int:
    """The address of at least ``size`` bytes of new memory, 0 if there is none."""
    huge = size >= HUGE
    n = -(-size // PAGE) * PAGE if huge else max(size, 1)
    p = ctypes.c_void_p()
    if _libc.posix_memalign(ctypes.byref(p), PAGE if huge else ALIGNMENT, n) != 0:
        return 0
    if huge and _madvise is not None:
        _madvise(p, n, MADV_HUGEPAGE)       # advice: without it, memory still works
    return p.value


def free(addr: int) -> None:
    _libc.free(addr)


def buffer(size: int):
    """A ctypes array over ``alloc(size)`` memory, freed when the array is collected
    (None when there is no memory): what a library that takes a host buffer keeps."""
    addr = alloc(size)
    if not addr:
        return None
    array = (ctypes.c_char * size).from_address(addr)
    weakref.finalize(array, free, addr)
    return array
