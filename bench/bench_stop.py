"""What Ctrl-C's stop check costs C kernels: the same generated C with and without it.

    python bench/bench_stop.py [--repeat N]

The host dialect tests SIGINT's count (plugins/host/stop.py) in each sequential loop
of a kernel: once every `STOP_CHUNK` iterations of a ``for`` over a range with a
constant step (the loop inside each chunk stays one gcc can vectorize), at each
iteration of the others.  Each row builds one kernel's C twice, as generated and as a
dialect without the test generates it, and times the two entries called directly on
the same words (one thread: OMP_NUM_THREADS=1 keeps a busy machine's noise out), in
alternation, best of ``--repeat``; the ratio is with / without (1.0: free).  The last
row is what a launch's own test costs (`stop.checked`: the count read before and after
the entry), on a kernel of 8 elements, in nanoseconds a call.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import re
import sys
import tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import pygomp as omp  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench.timing import duel  # noqa: E402
from pygomp.plugins.host import stop  # noqa: E402
from pygomp.plugins.host.plugin import compile_c  # noqa: E402
from pygomp.runtime.hostmem import ffi  # noqa: E402
from pygomp.plugins.host.target import HostDialect  # noqa: E402

WORD = re.compile(r"^\s*(?:const )?(\w+) \*?(\w+) = .*args\[(\d+)\]", re.M)


@omp.target
def rowsum(A, y):                   # an inner sequential loop per row
    for i in omp.parallel_range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        y[i] = s


@omp.target
def axpy_rows(A, x, y):             # an inner loop gcc vectorizes
    for i in omp.parallel_range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] + 2.0 * x[j]
        y[i] = A[i, 0]


@omp.target
def collatz(n, steps):              # a while loop: short bodies, many back-edges
    for i in omp.parallel_range(n.shape[0]):
        v = n[i]
        c = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            c += 1
        steps[i] = c


class Unchecked(HostDialect):
    def stop_test(self):
        return None


@omp.target
def tiny(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] += x[i]


def entry(source, name, d):
    """The kernel's entry in a shared object built from ``source``."""
    so = os.path.join(d, f"{name}.so")
    with open(so, "wb") as f:
        f.write(compile_c(source, name))
    fn = getattr(ctypes.CDLL(so), re.search(r"^void (\w+)\(void \*\*args", source, re.M)[1])
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return fn


def words(source, arrays):
    """The argument words the entry reads, from its own declarations."""
    out = []
    for ctype, name, _ in sorted(WORD.findall(source), key=lambda m: int(m[2])):
        base, _, axis = name.partition("__s")
        a = arrays[base]
        out.append(a.shape[int(axis)] if axis else a.ctypes.data)
    return (ctypes.c_void_p * len(out))(*out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=20)
    repeat = p.parse_args().repeat
    rng = np.random.default_rng(0)
    A, x, y = rng.random((2000, 2000)), rng.random(2000), np.zeros(2000)
    n, steps = rng.integers(1, 10**6, 200000), np.zeros(200000, dtype=np.int64)
    cases = [("rowsum", rowsum, {"A": A, "y": y}),
             ("axpy rows", axpy_rows, {"A": A, "x": x, "y": y}),
             ("collatz", collatz, {"n": n, "steps": steps})]
    launch = (ctypes.c_int64 * 3)(0, 0, 0)
    print(f"{'kernel':12} {'without':>10} {'with':>10} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as d:
        for name, kernel, arrays in cases:
            src = omp.target(kernel.py_func).source(*arrays.values())
            assert "pygomp_stops != stops_" in src, "the generated C has no stop test"
            plain = entry(omp.target(kernel.py_func).source(*arrays.values(),
                                                            target=Unchecked()),
                          name.replace(" ", "_") + "_plain", d)
            checked = entry(src, name.replace(" ", "_"), d)
            w = words(src, arrays)
            t = duel({"without": lambda: plain(w, launch), "with": lambda: checked(w, launch)},
                     repeat)
            print(f"{name:12} {t['without'] * 1e3:8.2f}ms {t['with'] * 1e3:8.2f}ms "
                  f"{t['with'] / t['without']:6.3f}")
        small = {"x": np.ones(8), "y": np.ones(8)}
        plain = entry(omp.target(tiny).source(*small.values()), "tiny", d)
        w, calls = words(omp.target(tiny).source(*small.values()), small), 10000
        fs = {"without": plain, "with": stop.checked(plain, ffi.new("unsigned *"))}

        def many(f):
            return lambda: [f(w, launch) for _ in range(calls)]
        t = duel({k: many(f) for k, f in fs.items()}, repeat)
        per = {k: v / calls * 1e9 for k, v in t.items()}
        print(f"{'a launch':12} {per['without']:8.0f}ns {per['with']:8.0f}ns "
              f"{t['with'] / t['without']:6.3f}")


if __name__ == "__main__":
    main()
