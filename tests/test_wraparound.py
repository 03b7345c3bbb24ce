"""Negative indices: numpy counts them from the end, through a test on each index the
compiler cannot prove non-negative; ``@omp.target(wraparound=False)`` drops the test
for every index.  The results equal Python's on every device."""
import os
import sys

import numpy as np
import pytest

import pygomp as omp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
from polybench import stencils  # noqa: E402

WRAP = "< 0L"       # the test of a wrapped index in the host's source


def spmv(indptr, indices, data, x, y):
    for r in omp.parallel_range(y.shape[0]):
        s = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            s += data[k] * x[indices[k]]
        y[r] = s


spmv_wrapped = omp.target(spmv)
spmv_plain = omp.target(spmv, wraparound=False)


@omp.target
def pick(x, idx, out):
    for i in omp.parallel_range(out.shape[0]):
        out[i] = x[idx[i]]


@omp.target(wraparound=False, boundscheck=True)
def pick_checked(x, idx, out):
    for i in omp.parallel_range(out.shape[0]):
        out[i] = x[idx[i]]                      # <pick>


@omp.target
def proven(a, out, w: int):
    n = a.shape[0]
    for i in omp.parallel_range(1, (w - 1) // 2 + 1):
        j = w - 2 * i                                           # j >= 1
        lo = max(0, j - n)
        out[i] = a[j - 1] + a[(i * 3 + j) % n] + a[lo] + a[(j - 1) // 2]


@omp.target
def unproven(a, out, w: int):
    n = a.shape[0]
    for i in omp.parallel_range(1, w // 2 + 1):
        j = w - 2 * i                                           # j >= 0: j - 1 may be -1
        out[i] = a[j - 1] + a[j % n]


def csr(n, per_row, seed=0):
    rng = np.random.default_rng(seed)
    indptr = np.arange(0, n * per_row + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, n, n * per_row).astype(np.int64)
    return indptr, indices, rng.random(n * per_row)


def test_wraparound_false_leaves_no_test_in_any_target():
    indptr, indices, data = csr(8, 3)
    x, y = np.ones(8), np.zeros(8)
    assert WRAP in spmv_wrapped.source(indptr, indices, data, x, y)
    assert WRAP not in spmv_plain.source(indptr, indices, data, x, y)
    for target in ("opencl", "cuda"):
        src = spmv_plain.source(indptr, indices, data, x, y, target=target)
        assert "< 0" not in src.split("spmv__")[-1]         # the kernel, not the helpers


def test_spmv_results(device):
    indptr, indices, data = csr(50, 4)
    x = np.random.default_rng(1).random(50)
    want = np.array([data[a:b] @ x[indices[a:b]] for a, b in zip(indptr, indptr[1:])])
    for k in (spmv_wrapped, spmv_plain):
        y = np.zeros(50)
        k.on(device)(indptr, indices, data, x, y)
        np.testing.assert_allclose(y, want)


def test_negative_index_wraps_as_numpy(device):
    x, idx, out = np.arange(10.0), np.array([-1, -10, 3, -4]), np.zeros(4)
    pick.on(device)(x, idx, out)
    np.testing.assert_array_equal(out, x[idx])


def test_negative_index_without_wraparound_is_out_of_bounds(device):
    x, idx, out = np.arange(10.0), np.array([2, -3]), np.zeros(2)
    with pytest.raises(IndexError) as e:
        pick_checked.on(device)(x, idx, out)
    line = next(n for n, t in enumerate(open(__file__), 1) if t.rstrip().endswith("# <pick>"))
    assert str(e.value) == f"{__file__}:{line}: index -3 is out of bounds for axis 0 with size 10"
    pick_checked.on(device)(x, idx[:1], out[:1])
    assert out[0] == 2.0


def test_prover_removes_the_test_where_bounds_allow(device):
    a, w = np.arange(1.0, 17.0), 15
    out = np.zeros(8)
    assert WRAP not in proven.source(a, out, w)
    proven.on(device)(a, out, w)
    want = np.zeros(8)
    proven.py_func(a, want, w)
    np.testing.assert_array_equal(out, want)


def test_prover_keeps_the_test_where_an_index_may_be_negative(device):
    a, out, w = np.arange(1.0, 9.0), np.zeros(4), 6
    assert proven_lines(unproven.source(a, out, w)) == 1       # a[j - 1]; a[j % n] is proven
    unproven.on(device)(a, out, w)
    want = np.zeros(4)
    unproven.py_func(a, want, w)                                # i = 3: j - 1 == -1
    np.testing.assert_array_equal(out, want)


def proven_lines(src):
    return sum(line.count(WRAP) for line in src.splitlines() if "out[" in line)


def test_seidel_2d_has_no_wrap():
    a = np.zeros((10, 10))
    assert WRAP not in stencils.seidel_2d.source(2, a)


@omp.target
def after_loop(a, out, m: int):
    for w in range(1, m):
        hi = w - 1
        out[0] = a[w - hi - 1]              # 0 here
    out[1] = a[w - hi - 1]                  # -1 when the loop did not run


def test_what_a_loop_proves_ends_with_it(device):
    a = np.arange(1.0, 5.0)
    src = after_loop.source(a, np.zeros(2), 0)
    reads = [line.count(WRAP) for line in src.splitlines() if " = a[" in line]
    assert reads[:-1] and not any(reads[:-1]) and reads[-1] == 1      # the loop's, then out[1]
    out, want = np.zeros(2), np.zeros(2)
    after_loop.on(device)(a, out, 3)
    after_loop.py_func(a, want, 3)
    np.testing.assert_array_equal(out, want)
    after_loop.on(device)(a, out, 0)        # Python has no w; the kernel's names start at 0
    assert out[1] == a[-1]
