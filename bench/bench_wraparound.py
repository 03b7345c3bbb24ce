"""What the test on negative indices costs: CSR SpMV with ``wraparound=True`` and
``False``, and seidel-2d compiled without and with the prover that drops the test
where loop bounds show an index is non-negative, side by side.

    python bench/bench_wraparound.py [--quick] [--repeat N]

On the host device and on a PoCL device when there is one; the data stays on the
device (target_data).  Times are the best of ``--repeat`` runs, measured in
alternation; the ratio is the time with the test / the time without (1.0: free).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys

import numpy as np

import pygomp
from pygomp.compiler import nonneg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench.bench_boundscheck import _devices  # noqa: E402
from bench.polybench.stencils import seidel_2d  # noqa: E402
from bench.timing import duel  # noqa: E402


def spmv(indptr, indices, data, x, y):
    for r in pygomp.parallel_range(y.shape[0]):
        s = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            s += data[k] * x[indices[k]]
        y[r] = s


@contextlib.contextmanager
def without_prover():
    """Compile as before the prover: only constant lower bounds drop the test."""
    saved, nonneg.lower = nonneg.lower, lambda *a: None
    try:
        yield
    finally:
        nonneg.lower = saved


def seidel_pair(device, args):
    """seidel-2d compiled without the prover (a kernel of its own name, so its own
    cache entry) and as it is, both built."""
    before = pygomp.target(seidel_2d.py_func)
    before.__name__ = "seidel_2d_wrapped"
    with without_prover():
        before.on(device)(*args)
        assert "< 0L" in before.source(*args)
    assert "< 0L" not in seidel_2d.source(*args)
    return before.on(device), seidel_2d.on(device)


def rows(device, n_rows, per_row, n_grid, repeat):
    rng = np.random.default_rng(0)
    indptr = np.arange(0, n_rows * per_row + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, n_rows, n_rows * per_row).astype(np.int64)
    data, x, y = rng.random(n_rows * per_row), rng.random(n_rows), np.zeros(n_rows)
    grid = rng.random((n_grid, n_grid))
    with pygomp.target_data(device, to=[indptr, indices, data, x], tofrom=[y, grid]):
        wrap = pygomp.target(spmv).on(device)
        plain = pygomp.target(spmv, wraparound=False).on(device)
        args = (indptr, indices, data, x, y)
        t = duel({"wrap": lambda: wrap(*args), "plain": lambda: plain(*args)}, repeat)
        yield "spmv", "wraparound=True/False", t["wrap"], t["plain"]
        before, after = seidel_pair(device, (1, grid))
        t = duel({"before": lambda: before(1, grid), "after": lambda: after(1, grid)}, repeat)
        yield "seidel-2d", "before/after prover", t["before"], t["after"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    sizes = (1 << 14, 8, 128) if a.quick else (1 << 20, 16, 1000)
    print(f"{'device':8} {'kernel':10} {'compared':22} {'with test':>12} {'without':>12} "
          f"{'ratio':>7}")
    for number, label in _devices():
        for name, what, wrapped, plain in rows(number, *sizes, a.repeat):
            print(f"{label:8} {name:10} {what:22} {wrapped * 1e3:10.3f}ms "
                  f"{plain * 1e3:10.3f}ms {wrapped / plain:7.2f}", flush=True)


if __name__ == "__main__":
    main()
