"""The second round of numpy forms in kernels (``@``, axis reductions, np.outer, views
and ``.T``, np.cumsum, the scan directive, the LU row update, a particle push over a
record array) against the same loops written out by hand in a kernel (the push: over
separate arrays of the fields), and against numpy, side by side.

    python bench/bench_numpy_forms.py [--quick] [--repeat N] [--only TEXT]
    valgrind --tool=callgrind --toggle-collect='*_form__*' --toggle-collect='*_hand__*' \
        python bench/bench_numpy_forms.py --once     # then callgrind_annotate --inclusive=yes

On the host device and on a PoCL device when there is one; the data stays on the
device (target_data).  Times are the best of ``--repeat`` runs, measured in
alternation; "form/hand" is the form's time over the hand-written loop's (1.0: the
same), "form/numpy" over numpy's on the host's arrays.  np.cumsum and the scan
directive (a loop with ``reduction="inscan,+:s"``, against the same hand-written two
passes and np.cumsum) run on 10**7 elements (10**5 with --quick), the push on 10**6
records (10**4).  ``--only``: the cases whose name holds TEXT.  ``--once`` runs each
form and hand-written kernel once
on the host device, for instruction counts, which a busy machine does not change
(valgrind cannot run AVX-512 code: build the kernels without it, with ``CC`` a gcc that
adds ``-mno-avx512f``).
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


@pygomp.target
def matvec_form(A, x, y):
    y[:] = A @ x


@pygomp.target
def matvec_hand(A, x, y):
    for i in pygomp.parallel_range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


@pygomp.target
def colmax_form(A, y):
    y[:] = np.max(A, axis=0)


@pygomp.target
def colmax_hand(A, y):
    for j in pygomp.parallel_range(A.shape[1]):
        m = -np.inf
        for i in range(A.shape[0]):
            m = np.maximum(m, A[i, j])
        y[j] = m


@pygomp.target
def outer_form(x, y, C):
    C[:, :] = np.outer(x, y)


@pygomp.target
def outer_hand(x, y, C):
    for i in pygomp.parallel_range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = x[i] * y[j]


@pygomp.target
def transpose_form(A, C):
    t = A.T
    C[:, :] = t * 2.0


@pygomp.target
def transpose_hand(A, C):
    for i in pygomp.parallel_range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = A[j, i] * 2.0


@pygomp.target
def lu_form(A):
    n = A.shape[0]
    for k in range(n - 1):
        for i in pygomp.parallel_range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
            A[i, k + 1:] -= A[i, k] * A[k, k + 1:]


@pygomp.target
def lu_hand(A):
    n = A.shape[0]
    for k in range(n - 1):
        for i in pygomp.parallel_range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]


def lu_numpy(A):
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])


@pygomp.target
def cumsum_form(x, y):
    y[:] = np.cumsum(x)


@pygomp.target
def cumsum_hand(x, y):          # the same two passes, written out
    n = x.shape[0]
    chunk = max((n + 1023) // 1024, 1)
    blocks = (n + chunk - 1) // chunk
    for b in pygomp.parallel_range(blocks):
        s = 0.0
        for i in range(b * chunk, min(b * chunk + chunk, n)):
            s += x[i]
            y[i] = s
    for b in range(1, blocks):
        y[min(b * chunk + chunk, n) - 1] += y[b * chunk - 1]
    for b in pygomp.parallel_range(1, blocks):
        off = y[b * chunk - 1]
        for i in range(b * chunk, min(b * chunk + chunk, n) - 1):
            y[i] += off


@pygomp.target
def scan_form(x, y):            # OpenMP's scan directive
    s = 0.0
    for i in pygomp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        s += x[i]
        pygomp.inclusive(s)
        y[i] = s


@pygomp.target
def scan_hand(x, y):            # the directive's own passes, written out
    n = x.shape[0]
    chunk = max((n + 1023) // 1024, 1)
    blocks = (n + chunk - 1) // chunk
    for b in pygomp.parallel_range(blocks):
        t = 0.0
        for i in range(b * chunk, min(b * chunk + chunk, n)):
            t += x[i]
        y[b * chunk] = t                        # the chunk's total, at its first element
    s = 0.0
    for b in range(blocks):
        t = y[b * chunk]
        y[b * chunk] = s
        s += t
    for b in pygomp.parallel_range(blocks):
        s = y[b * chunk]
        for i in range(b * chunk, min(b * chunk + chunk, n)):
            s += x[i]
            y[i] = s


PARTICLE = np.dtype([("x", np.float64), ("y", np.float64), ("m", np.float32),
                     ("id", np.int32), ("v", np.float64, (3,))])


@pygomp.target
def push_form(p, dt):           # a record array (an array of structs)
    for i in pygomp.parallel_range(p.shape[0]):
        a = -p[i]["x"] / p[i]["m"]
        p[i]["v"][0] += dt * a
        p[i]["x"] += dt * p[i]["v"][0]
        p[i]["y"] += dt * p[i]["v"][1]


@pygomp.target
def push_hand(x, y, m, v, dt):  # the same over separate arrays of the fields
    for i in pygomp.parallel_range(x.shape[0]):
        a = -x[i] / m[i]
        v[i, 0] += dt * a
        x[i] += dt * v[i, 0]
        y[i] += dt * v[i, 1]


@pygomp.target
def push_bytes(d, f, dt):       # the same over the records' own bytes, by offsets
    for i in pygomp.parallel_range(d.shape[0] // 6):
        a = -d[i * 6] / f[i * 12 + 4]           # x at byte 0, m at byte 16
        d[i * 6 + 3] += dt * a                  # v[0] at byte 24
        d[i * 6] += dt * d[i * 6 + 3]
        d[i * 6 + 1] += dt * d[i * 6 + 4]


def push_numpy(p, dt):
    v = p["v"]
    v[:, 0] += dt * (-p["x"] / p["m"])
    p["x"] += dt * v[:, 0]
    p["y"] += dt * v[:, 1]


def record_rows(device, n, repeat):
    """The particle push over ``n`` records against the same over separate arrays of
    the fields, then over the records' bytes (float64 and float32 views of them)."""
    rng = np.random.default_rng(1)
    p = np.zeros(n, PARTICLE)
    p["x"], p["y"], p["v"] = rng.random(n), rng.random(n), rng.random((n, 3))
    p["m"], p["id"] = 1 + rng.random(n), np.arange(n)
    fields = [np.ascontiguousarray(p[f]) for f in ("x", "y", "m", "v")]
    d, f4 = p.view(np.float64), p.view(np.float32)         # 1-d views of the bytes
    f, h, b = push_form.on(device), push_hand.on(device), push_bytes.on(device)
    with pygomp.target_data(device, tofrom=[p, *fields]):
        t = duel({"form": lambda: f(p, 1e-6), "hand": lambda: h(*fields, 1e-6),
                  "bytes": lambda: b(d, f4, 1e-6), "numpy": lambda: push_numpy(p, 1e-6)},
                 repeat)
    yield "records/fields", t["form"], t["hand"], t["numpy"]
    yield "records/bytes", t["form"], t["bytes"], t["numpy"]


def cases(n_mat, n_lu, n_scan):
    """(name, form, hand, numpy's, arguments) of each case."""
    rng = np.random.default_rng(0)
    A, x, y = rng.random((n_mat, n_mat)), rng.random(n_mat), np.zeros(n_mat)
    C = np.zeros((n_mat, n_mat))
    L = rng.random((n_lu, n_lu)) + n_lu * np.eye(n_lu)
    s, t = rng.random(n_scan), np.zeros(n_scan)
    cases = [("y[:] = A @ x", matvec_form, matvec_hand, lambda: A @ x, (A, x, y)),
             ("np.max(A, axis=0)", colmax_form, colmax_hand, lambda: np.max(A, axis=0),
              (A, y)),
             ("np.outer(x, y)", outer_form, outer_hand, lambda: np.outer(x, x), (x, x, C)),
             ("t = A.T", transpose_form, transpose_hand, lambda: A.T * 2.0, (A, C)),
             ("np.cumsum", cumsum_form, cumsum_hand, lambda: np.cumsum(s), (s, t)),
             ("scan directive", scan_form, scan_hand, lambda: np.cumsum(s), (s, t))]
    return cases + [("LU rows in place", lu_form, lu_hand, lambda: lu_numpy(L.copy()),
                     (L,))]


def rows(device, n_mat, n_lu, n_scan, repeat, only=""):
    for name, form, hand, numpy_f, args in cases(n_mat, n_lu, n_scan):
        if only not in name:
            continue
        f, h = form.on(device), hand.on(device)
        if form is lu_form:             # in place: the same input each run
            t = duel({"form": lambda: f(args[0].copy()), "hand": lambda: h(args[0].copy()),
                      "numpy": numpy_f}, repeat)
        else:
            ins = [a for k, a in enumerate(args[:-1]) if all(a is not b for b in args[:k])]
            with pygomp.target_data(device, to=ins, tofrom=[args[-1]]):
                t = duel({"form": lambda: f(*args), "hand": lambda: h(*args),
                          "numpy": numpy_f}, repeat)
        yield name, t["form"], t["hand"], t["numpy"]


def once():
    """Each form and hand-written kernel once on the host device (compiled first)."""
    host = next(n for n, label in _devices() if label == "host")
    for _, form, hand, _, args in cases(300, 100, 10**6):
        for k in (form, hand):
            k.on(host)(*[a.copy() for a in args])   # compiles and loads it
            k.on(host)(*args)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--once", action="store_true", help="each kernel once, on the host")
    ap.add_argument("--only", default="", help="the cases whose name holds this text")
    a = ap.parse_args(argv)
    if a.once:
        return once()
    sizes = (128, 64, 10**5) if a.quick else (2000, 300, 10**7)
    n_rec = 10**4 if a.quick else 10**6
    form_table((label, *row) for number, label in _devices()
               for row in [*rows(number, *sizes, a.repeat, a.only),
                           *(record_rows(number, n_rec, a.repeat)
                             if not a.only or "records" in a.only else ())])


if __name__ == "__main__":
    main()
