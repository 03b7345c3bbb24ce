"""What bounds checking costs: the same kernels checked and unchecked, side by side.

    python bench/bench_boundscheck.py [--quick] [--repeat N]

Rows: saxpy, a Jacobi sweep (5-point stencil with a max reduction) and matvec, the
examples' own kernels, on the host device and on a PoCL device when there is one.  The
data stays on the device (target_data), so a call copies only the checked kernel's
error record.  Times are the best of ``--repeat`` runs, measured in alternation; the
ratio is checked time / unchecked time (1.0: free).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import pygomp
from pygomp.runtime import devices

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench.timing import duel  # noqa: E402
from examples.jacobi import sweep  # noqa: E402
from examples.matvec import matvec  # noqa: E402
from examples.saxpy import saxpy  # noqa: E402


def pair(kernel):
    """The kernel unchecked and checked (new kernels of the same function)."""
    return (pygomp.target(kernel.py_func, boundscheck=False),
            pygomp.target(kernel.py_func, boundscheck=True))


def _devices():
    out = []
    for d in devices.all_devices():
        if d.is_initial:
            continue
        if d.plugin.name == "host" or (d.plugin.name == "opencl" and d.info.matches("pocl")):
            out.append((d.number, "host" if d.plugin.name == "host" else "PoCL"))
    return out


def rows(device, n_vec, n_mat, repeat):
    rng = np.random.default_rng(0)
    x, y = rng.random(n_vec), rng.random(n_vec)
    A, v, out = rng.random((n_mat, n_mat)), rng.random(n_mat), np.zeros(n_mat)
    u = np.zeros((n_mat, n_mat))
    u[0, :] = 1.0
    w = u.copy()
    cases = [("saxpy", saxpy, (2.0, x, y)), ("stencil", sweep, (u, w)),
             ("matvec", matvec, (A, v, out))]
    with pygomp.target_data(device, to=[x, A, v, u], tofrom=[y, out, w]):
        for name, kernel, args in cases:
            off, on = (k.on(device) for k in pair(kernel))
            t = duel({"off": lambda: off(*args), "on": lambda: on(*args)}, repeat)
            yield name, t["off"], t["on"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    n_vec, n_mat = (1 << 18, 256) if a.quick else (1 << 23, 2048)
    print(f"{'device':8} {'kernel':8} {'unchecked':>12} {'checked':>12} {'ratio':>7}")
    for number, label in _devices():
        for name, off, on in rows(number, n_vec, n_mat, a.repeat):
            print(f"{label:8} {name:8} {off * 1e3:10.3f}ms {on * 1e3:10.3f}ms "
                  f"{on / off:7.2f}", flush=True)


if __name__ == "__main__":
    main()
