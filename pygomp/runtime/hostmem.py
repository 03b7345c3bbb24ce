"""Host memory for plugins whose device memory is host memory (the host device, OpenCL
devices on the CPU).

An allocation of `HUGE` bytes or more is 2 MiB-aligned, a whole number of 2 MiB pages,
and advised to use transparent huge pages (madvise MADV_HUGEPAGE, which the kernel's
"madvise" mode waits for), as numpy does for its own large arrays: a kernel that walks
such an array column by column then pays one TLB entry a 2 MiB page, not a 4 KiB one.

A block of `LARGE` bytes or more (whole 4 KiB pages below `HUGE`), once freed, is kept
for the next allocation of the same number of pages (up to `POOL` bytes in all, the
oldest freed first beyond that; `trim` frees them all): memory new to the process is
zeroed by the kernel at its first touch, a page fault each 4 KiB or 2 MiB, which makes
a copy into it two to three times slower than one into memory already touched.  Only
what `alloc` gave goes back to the pool.
"""
from __future__ import annotations

import ctypes
import os
import sys
import weakref
import _thread
from collections import OrderedDict

import _cffi_backend

HUGE = 4 << 20              # bytes: from here on, huge pages
PAGE = 2 << 20              # a transparent huge page on x86-64 and arm64
LARGE = 128 << 10           # bytes: from here on, whole pages, kept for reuse once freed
SMALL_PAGE = 4096
ALIGNMENT = 128             # smaller allocations: OpenCL's base alignment of a buffer
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
copy = c_function("memcpy", "uintptr_t (*)(uintptr_t, uintptr_t, size_t)")  # dst, src, n
_free = c_function("free", "void (*)(uintptr_t)")
_madvise = None
if sys.platform.startswith("linux"):
    try:
        _madvise = c_function("madvise", "int (*)(uintptr_t, size_t, int)")
    except AttributeError:
        pass


def _pool_size():
    """Bytes of freed large blocks kept: 1 GiB, or an eighth of the memory if less."""
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 8 << 30
    return min(1 << 30, phys // 8)


POOL = _pool_size()
_lock = _thread.allocate_lock()
_large = {}                 # address -> bytes, of each large block `alloc` made
_kept = OrderedDict()       # the free large blocks kept, oldest first: address -> bytes
_sized = {}                 # bytes -> addresses of the blocks kept of that size
_held = [0]                 # bytes in `_kept`


def alloc(size: int) -> int:
    """The address of at least ``size`` bytes of memory, 0 if there is none (a large
    block: one that `free` kept, if one of that size is there)."""
    if size < LARGE:    # a whole number of cache lines, as aligned_alloc wants
        return _aligned_alloc(ALIGNMENT, -(-max(size, 1) // ALIGNMENT) * ALIGNMENT)
    align = PAGE if size >= HUGE else SMALL_PAGE
    n = -(-size // align) * align
    with _lock:
        same = _sized.get(n)
        if same:
            p = same.pop()
            del _kept[p]
            _held[0] -= n
            return p
    p = _aligned_alloc(align, n)
    if p:
        if _madvise is not None and align == PAGE:
            _madvise(p, n, MADV_HUGEPAGE)   # advice: without it, memory still works
        with _lock:
            _large[p] = n
    return p


def free(addr: int) -> None:
    """Give back what `alloc` gave: a large block is kept for reuse (`POOL`)."""
    gone = []
    with _lock:
        n = _large.get(addr)
        if n is None or n > POOL:
            _large.pop(addr, None)
            gone.append(addr)
        else:
            _kept[addr] = n
            _sized.setdefault(n, []).append(addr)
            _held[0] += n
            while _held[0] > POOL:
                p, m = _kept.popitem(last=False)
                _sized[m].remove(p)
                _held[0] -= m
                del _large[p]
                gone.append(p)
    for p in gone:
        _free(p)


def trim() -> int:
    """Free every large block kept for reuse; the bytes freed."""
    with _lock:
        gone, _held[0] = list(_kept), 0
        _kept.clear()
        _sized.clear()
        n = sum(_large.pop(p) for p in gone)
    for p in gone:
        _free(p)
    return n


def kept() -> int:
    """Bytes of freed large blocks kept for reuse."""
    return _held[0]


def buffer(size: int):
    """A ctypes array over ``alloc(size)`` memory, freed when the array is collected
    (None when there is no memory): what a library that takes a host buffer keeps."""
    addr = alloc(size)
    if not addr:
        return None
    array = (ctypes.c_char * size).from_address(addr)
    weakref.finalize(array, free, addr)
    return array
