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

import _cffi_backend

HUGE = 4 << 20              # bytes: from here on, huge pages
PAGE = 2 << 20              # a transparent huge page on x86-64 and arm64
ALIGNMENT = 64              # smaller allocations: a cache line
MADV_HUGEPAGE = 14

# cffi's C backend, the FFI that cffi's precompiled ABI modules use: it parses C types
# itself (no import of cffi's C parser, tens of ms at start-up), and a call through it
# costs a fraction of a ctypes call.  The host plugin uses it too.
ffi = _cffi_backend.FFI()
_libc = _cffi_backend.load_library(None)    # the process's symbols: dlopen(NULL)


def c_function(name, ctype):
    """The C library's function ``name`` as a cffi function pointer of type ``ctype``
    (found by cffi, not through ctypes: half the time); AttributeError if none."""
    return _libc.load_function(ffi.typeof(ctype), name)


_aligned_alloc = c_function("aligned_alloc", "uintptr_t (*)(size_t, size_t)")
_free = c_function("free", "void (*)(uintptr_t)")
_madvise = None
if sys.platform.startswith("linux"):
    try:
        _madvise = c_function("madvise", "int (*)(uintptr_t, size_t, int)")
    except AttributeError:
        pass


def alloc(size: int) -> int:
    """The address of at least ``size`` bytes of new memory, 0 if there is none."""
    if size < HUGE:     # a whole number of cache lines, as aligned_alloc wants
        return _aligned_alloc(ALIGNMENT, -(-max(size, 1) // ALIGNMENT) * ALIGNMENT)
    n = -(-size // PAGE) * PAGE
    p = _aligned_alloc(PAGE, n)
    if p and _madvise is not None:
        _madvise(p, n, MADV_HUGEPAGE)       # advice: without it, memory still works
    return p


def free(addr: int) -> None:
    _free(addr)


def buffer(size: int):
    """A ctypes array over ``alloc(size)`` memory, freed when the array is collected
    (None when there is no memory): what a library that takes a host buffer keeps."""
    addr = alloc(size)
    if not addr:
        return None
    array = (ctypes.c_char * size).from_address(addr)
    weakref.finalize(array, free, addr)
    return array
