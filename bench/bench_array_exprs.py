"""Array expressions and numpy reductions in kernels against the same loops written out
by hand in a kernel, and against numpy, side by side.

    python bench/bench_array_exprs.py [--quick] [--repeat N]

On the host device and on a PoCL device when there is one; the data stays on the
device (target_data).  Times are the best of ``--repeat`` runs, measured in
alternation; "form/hand" is the array form's time over the hand-written loop's (1.0:
the same), "form/numpy" over numpy's on the host's arrays.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import pygomp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench.bench_boundscheck import _devices  # noqa: E402
from bench.timing import duel, form_table  # noqa: E402


# -- each case: the array form, the hand-written loops, numpy --------------------------

@pygomp.target
def jacobi_form(u, v):
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


@pygomp.target
def jacobi_hand(u, v):
    for i in pygomp.parallel_range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


def jacobi_numpy(u, v):
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


@pygomp.target
def where_form(x, y):
    y[:] = np.where(x > 0.5, x, 0.0) * 2.0


@pygomp.target
def where_hand(x, y):
    for i in pygomp.parallel_range(x.shape[0]):
        y[i] = (x[i] if x[i] > 0.5 else 0.0) * 2.0


def where_numpy(x, y):
    y[:] = np.where(x > 0.5, x, 0.0) * 2.0


@pygomp.target
def dot_form(x, y):
    return np.dot(x, y)


@pygomp.target
def dot_hand(x, y):
    s = 0.0
    for i in pygomp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * y[i]
    return s


@pygomp.target
def max_form(x, y):
    return np.max(x[1:] - y[:-1])


@pygomp.target
def max_hand(x, y):
    m = -np.inf
    for i in pygomp.parallel_range(x.shape[0] - 1, reduction="max:m"):
        m = max(m, x[i + 1] - y[i])
    return m


@pygomp.target
def matvec_form(A, x, y):
    for i in pygomp.gang(A.shape[0]):
        y[i] = np.dot(A[i, :], x)


@pygomp.target
def matvec_hand(A, x, y):
    for i in pygomp.gang(A.shape[0]):
        s = 0.0
        for j in pygomp.vector(A.shape[1], reduction="+:s"):
            s += A[i, j] * x[j]
        y[i] = s


def rows(device, n_vec, n_mat, repeat):
    rng = np.random.default_rng(0)
    x, y, out = rng.random(n_vec), rng.random(n_vec), np.zeros(n_vec)
    u, v = rng.random((n_mat, n_mat)), np.zeros((n_mat, n_mat))
    A, b, c = rng.random((n_mat, n_mat)), rng.random(n_mat), np.zeros(n_mat)
    cases = [("jacobi-2d", jacobi_form, jacobi_hand, lambda: jacobi_numpy(u, v), (u, v)),
             ("where", where_form, where_hand, lambda: where_numpy(x, out), (x, out)),
             ("dot", dot_form, dot_hand, lambda: np.dot(x, y), (x, y)),
             ("max(x[1:]-y[:-1])", max_form, max_hand, lambda: np.max(x[1:] - y[:-1]),
              (x, y)),
             ("matvec rows", matvec_form, matvec_hand, lambda: A @ b, (A, b, c))]
    with pygomp.target_data(device, to=[x, y, u, A, b], tofrom=[out, v, c]):
        for name, form, hand, numpy_f, args in cases:
            f, h = form.on(device), hand.on(device)
            assert np.allclose(f(*args) or 0.0, h(*args) or 0.0)
            t = duel({"form": lambda: f(*args), "hand": lambda: h(*args),
                      "numpy": numpy_f}, repeat)
            yield name, t["form"], t["hand"], t["numpy"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args(argv)
    sizes = (1 << 14, 128) if a.quick else (1 << 22, 2000)
    form_table((label, *row) for number, label in _devices()
               for row in rows(number, *sizes, a.repeat))


if __name__ == "__main__":
    main()
