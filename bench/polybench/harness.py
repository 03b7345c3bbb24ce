"""What every benchmark shares: its description, the C library, devices and timing.

A `Bench` names a pygomp kernel, the sizes it runs at and a function that makes its
data: a dict whose keys are the parameter names of both the Python kernel and the C
function of the same name in polybench.c, so each side takes its arguments by name.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import cffi
import numpy as np

import pygomp as omp
from pygomp.runtime import devices

HERE = os.path.dirname(os.path.abspath(__file__))
C_FILE = os.path.join(HERE, "polybench.c")
C_FLAGS = ["-O3", "-march=native", "-fopenmp", "-fPIC", "-shared"]
SIZES = ("tiny", "small", "medium", "large")


@dataclass
class Bench:
    name: str
    kernel: omp.Kernel          # called with data[p] for each of its parameters p
    init: Callable[..., dict]   # init(**sizes[preset]) -> the data
    sizes: dict                 # preset -> dict of size parameters
    outputs: tuple              # the arrays compared
    reference: Callable | None = None   # data -> {output: expected}, by numpy
    slow_reference: bool = False        # a plain Python loop: checked at "tiny" only
    c_name: str = ""

    def __post_init__(self):
        self.c_name = self.c_name or self.name.replace("-", "_")

    def data(self, size):
        return self.init(**self.sizes[size])

    def args(self, data):
        return [data[p] for p in self.kernel.param_names]


def fresh(data):
    """A copy of a data dict that shares no array with it."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in data.items()}


def arrays(data):
    return [v for v in data.values() if isinstance(v, np.ndarray)]


# -- the C library -------------------------------------------------------------------

_CTYPES = {"double": np.float64, "int64_t": np.int64, "int32_t": np.int32}
_PROTO = re.compile(r"^void (\w+)\((.*)\)$", re.M)
_PARAM = re.compile(r"(?:const )?(\w+) (\w+)((?:\[\w+\])*)")


class CLib:
    """polybench.c built once a process by gcc and loaded through cffi."""

    def __init__(self):
        with open(C_FILE) as f:
            text = f.read()
        self.params = {}            # function -> [(name, C type, is_array)]
        decls = []
        for name, plist in _PROTO.findall(text):
            ps = []
            for p in plist.split(", "):
                m = _PARAM.fullmatch(p.strip())
                if m is None:
                    raise ValueError(f"polybench.c: cannot read parameter {p!r} of {name}")
                ps.append((m[2], m[1], bool(m[3])))
            self.params[name] = ps
            decls.append(f"void {name}({', '.join(t + (' *' if a else '') for _, t, a in ps)});")
        self.ffi = cffi.FFI()
        self.ffi.cdef("\n".join(decls))
        self.dir = tempfile.TemporaryDirectory(prefix="pygomp-polybench-")
        so = os.path.join(self.dir.name, "polybench.so")
        subprocess.run(["gcc", *C_FLAGS, C_FILE, "-o", so, "-lm"], check=True)
        self.lib = self.ffi.dlopen(so)

    def call(self, name, data):
        """A function of no arguments that runs C's ``name`` on ``data`` (by names)."""
        args = []
        for p, ctype, is_array in self.params[name]:
            v = data[p]
            if is_array:
                if v.dtype != _CTYPES[ctype] or not v.flags.c_contiguous:
                    raise TypeError(f"{name}: {p} must be a contiguous {ctype} array")
                args.append(self.ffi.from_buffer(f"{ctype}[]", v, require_writable=True))
            else:
                args.append(v)
        fn = getattr(self.lib, name)
        return lambda: fn(*args)


_clib = None


def clib() -> CLib:
    global _clib
    if _clib is None:
        _clib = CLib()
    return _clib


# -- devices ------------------------------------------------------------------------

def find_device(word):
    """A device from a word: "initial", a plugin name ("host", "opencl"), a word of the
    device or platform name ("pocl") or a device number."""
    devs = devices.all_devices()
    if word.isdigit() and int(word) < len(devs):
        return devs[int(word)]
    for d in devs:
        names = f"{d.plugin.name} {d.info.name} {d.info.platform}".lower()
        if (word == "initial") == d.is_initial and (d.is_initial or word.lower() in names):
            return d
    raise SystemExit(f"no device matches {word!r}; devices: "
                     + ", ".join(f"{d.number} {d.info.name}" for d in devs))


# -- running and timing ---------------------------------------------------------------

class Variant:
    """One way of running a benchmark on its own copy of the data: C, Numba, or the
    pygomp kernel on one device (an offload device keeps the data mapped while it
    lives)."""

    def __init__(self, bench, data, dev=None, numba=False):
        self.bench, self.orig, self.dev = bench, data, dev
        self.data = fresh(data)
        if numba:                       # the optional anchor (numba_anchor.py)
            from .numba_anchor import njit_kernel
            k, args = njit_kernel(bench, data), bench.args(self.data)
            self.run = lambda: k(*args)
            self.name = "Numba"
        elif dev is None:
            self.run = clib().call(bench.c_name, self.data)
            self.name = "C"
        else:
            k, args = bench.kernel.on(dev.number), bench.args(self.data)
            self.run = lambda: k(*args)
            self.name = f"device {dev.number}"
        self.mapped = dev is not None and not dev.is_initial
        self.region = None

    def __enter__(self):
        if self.mapped:
            self.region = omp.target_data(self.dev.number, tofrom=arrays(self.data))
            self.region.__enter__()
        return self

    def __exit__(self, *exc):
        if self.region is not None:
            self.region.__exit__(*exc)

    def reset(self):
        """The original data again, on the host and (mapped) on the device."""
        for k, v in self.orig.items():
            if isinstance(v, np.ndarray):
                np.copyto(self.data[k], v)
        if self.mapped:
            omp.target_update(self.dev.number, to=arrays(self.data))

    def result(self):
        """Run once from the original data; the outputs as the host sees them."""
        self.reset()
        self.run()
        outs = [self.data[k] for k in self.bench.outputs]
        if self.mapped:
            omp.target_update(self.dev.number, from_=outs)
        return {k: v.copy() for k, v in zip(self.bench.outputs, outs)}


def mismatch(got, want, what):
    """None, or a line saying where ``got`` first differs from ``want``."""
    for k, w in want.items():
        g = got[k]
        if g.shape != w.shape:
            return f"{what}: {k} has the shape {g.shape}, not {w.shape}"
        scale = max(float(np.abs(w).max(initial=0.0)), 1.0)
        close = np.isclose(g, w, rtol=1e-8, atol=1e-10 * scale)
        if not close.all():
            at = tuple(int(x) for x in np.argwhere(~close)[0])
            return (f"{what}: {k}{list(at)} is {g[at]}, not {w[at]} "
                    f"({np.count_nonzero(~close)} elements differ)")
    return None


def best_times(variants, repeat, pause=0.02):
    """Best time of each variant's run over ``repeat`` rounds; in each round every
    variant runs once, from its original data (reset, not timed), after a short pause
    that lets the previous one's threads stop spinning."""
    best = [float("inf")] * len(variants)
    for _ in range(repeat):
        for n, v in enumerate(variants):
            v.reset()
            time.sleep(pause)
            t = time.perf_counter()
            v.run()
            best[n] = min(best[n], time.perf_counter() - t)
    return best
