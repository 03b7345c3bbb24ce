"""GCC's nvptx offload images, as a program registers them, read into a `plugin.Image`
for the CUDA plugin (target "cuda", any compute capability).

A program built with ``gcc -fopenmp -foffload=nvptx-none`` (or ``-fopenacc``) calls
``GOMP_offload_register_ver(version, host_table, 5, target_data)`` from a constructor.
`table` reads the host table at once (a few words) and leaves the target data as a
pointer: the image is `images.Pending` and is read when a CUDA device first loads it.

The target data, as GCC 12's mkoffload lays it out (LP64; docs/c-tables.md):

    struct { const struct { const char *code; size_t size; } *ptx; unsigned n_ptx;
             const char *const *var_names;                   unsigned n_vars;
             const struct { const char *name; unsigned short dim[3]; } *fns;
             unsigned n_fns; }

A library version (``version >> 16``) of 2 or more puts the `omp requires` mask in one
word ahead of it.  Functions and variables are in host-table order.  Each PTX object
is NUL-terminated text (``size`` counts the NUL); the driver links them into one module.
"""
from __future__ import annotations

import ctypes
import re

from . import images
from .contract import Image, KernelInfo

NVIDIA_PTX = 5              # GOMP_DEVICE_NVIDIA_PTX
NVPTX_VERSION = 1           # the newest GOMP_VERSION_NVIDIA_PTX this reader knows
LINK_BIT = 1 << 63          # a host variable's size with this bit: `declare target link`


class NvptxImage(Image):
    """``ptx``: the PTX objects (bytes, NUL included); ``dims`` a function's launch
    dimensions from the compiler (gang, worker, vector; 0: the runtime's choice);
    ``modes`` a function's convention: "omp" (a kernel taking the address block, the
    soft stacks and their size) or "acc" (the address block alone); ``links`` the
    variables that are `declare target link`."""
    __slots__ = ("ptx", "dims", "modes", "links")
    _fields = Image._fields + __slots__
    _defaults = {**Image._defaults, **dict.fromkeys(__slots__, ())}


def _word(addr: int) -> int:
    return ctypes.c_uint64.from_address(addr).value


def _words(lo: int, hi: int) -> list:
    n = (hi - lo) // 8
    return list((ctypes.c_uint64 * n).from_address(lo)) if n > 0 else []


def host_entries(host_table: int):
    """The host table's functions (addresses) and variables ((address, size), size
    without the link bit), and which variables are links."""
    f0, f1, v0, v1 = (_word(host_table + 8 * i) for i in range(4))
    functions = _words(f0, f1)
    pairs = _words(v0, v1)
    sizes = pairs[1::2]
    variables = [(a, s & ~LINK_BIT) for a, s in zip(pairs[::2], sizes)]
    return functions, variables, tuple(bool(s & LINK_BIT) for s in sizes)


def table(version: int, host_table: int, data: int) -> images.OffloadImage:
    """The registry's table of one nvptx registration; its image is read on first use."""
    functions, variables, links = host_entries(host_table)
    name = f"nvptx image at {data:#x}"

    def make():
        return read(version, data, len(functions), [s for _, s in variables], links, name)

    return images.OffloadImage(functions=functions, variables=variables, name=name,
                               images=(images.Pending("cuda", "", make),))


_ENTRY = re.compile(rb"\.entry\s+([^\s(]+)\s*\(([^)]*)\)")


def entries(ptx) -> dict:
    """The kernels (``.entry``) of PTX text: name -> its number of parameters."""
    out = {}
    for text in ptx:
        for m in _ENTRY.finditer(text):
            out[m.group(1).decode()] = m.group(2).count(b".param")
    return out


def read(version, data, n_functions, sizes, links=(), name="") -> NvptxImage:
    """The image of target data at ``data``, checked against the host table's counts."""
    lib, dev = version >> 16, version & 0xFFFF
    if dev > NVPTX_VERSION:
        raise ValueError(f"{name}: nvptx image version {dev}; pygomp reads version "
                         f"{NVPTX_VERSION} (GCC 12)")
    if lib >= 2:
        data += 8                   # the `omp requires` mask
    ptx_at, n_ptx, vars_at, n_vars, fns_at, n_fns = (
        _word(data + 8 * i) & (0xFFFFFFFF if i % 2 else ~0) for i in range(6))
    if n_fns != n_functions or n_vars != len(sizes):
        raise ValueError(f"{name}: the image has {n_fns} functions and {n_vars} variables, "
                         f"the host table {n_functions} and {len(sizes)}")
    ptx = tuple(ctypes.string_at(_word(ptx_at + 16 * i), _word(ptx_at + 16 * i + 8))
                for i in range(n_ptx))
    var_names = [ctypes.string_at(_word(vars_at + 8 * i)).decode() for i in range(n_vars)]
    fn_names, dims = [], []
    for i in range(n_fns):
        at = fns_at + 16 * i
        fn_names.append(ctypes.string_at(_word(at)).decode())
        dims.append(tuple((ctypes.c_uint16 * 3).from_address(at + 8)))
    params = entries(ptx)
    missing = [f for f in fn_names if f not in params]
    if missing:
        raise ValueError(f"{name}: no .entry in its PTX for {', '.join(missing)}")
    modes = tuple("omp" if params[f] == 3 else "acc" for f in fn_names)
    return NvptxImage(
        target="cuda", code=b"".join(ptx), name=name, identity="",
        kernels=tuple(KernelInfo(f) for f in fn_names),
        variables=tuple(zip(var_names, sizes)),
        ptx=ptx, dims=tuple(dims), modes=modes, links=tuple(links))
