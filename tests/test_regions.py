"""Every top-level statement of a kernel is ordered before the next on every device, and
every parallel loop runs at the full launch width (OpenCL cuts such a kernel into
launches: pygomp/compiler/steps.py)."""
import math

import numpy as np
import pytest

import pygomp.kernels as omp


@omp.target
def cholesky(A):
    """The column step: a store by sequential code, read by the parallel loops after."""
    n = A.shape[0]
    for k in range(n):
        A[k, k] = math.sqrt(A[k, k])
        for i in omp.parallel_range(k + 1, n):
            A[i, k] /= A[k, k]
        for i in omp.parallel_range(k + 1, n):
            for j in range(k + 1, i + 1):
                A[i, j] -= A[i, k] * A[j, k]


@omp.target
def stencil(a, b, steps: int):
    n = a.shape[0]
    for t in range(steps):
        for i in omp.parallel_range(1, n - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        for i in omp.parallel_range(1, n - 1):
            a[i] = b[i]


@omp.target
def converge(a, tol: float, limit: int, out):
    """A while loop around a gang reduction, with break and continue; an if around a
    gang loop; a return from inside the loop."""
    err = tol + 1.0
    it = 0
    while err > tol:
        it += 1
        err = 0.0
        for i in omp.parallel_range(a.shape[0], reduction="max:err"):
            a[i] *= 0.5
            err = max(err, abs(a[i]))
        if it % 2 == 1:
            continue
        out[1] += 1.0
        if it >= limit:
            break
    if err < 1.0:
        for i in omp.parallel_range(a.shape[0]):
            a[i] += 1.0
    out[0] = it
    for k in range(3):
        for i in omp.parallel_range(a.shape[0]):
            a[i] -= 1.0
        if k == 1:
            return err
    return -1.0


@omp.target
def widths(out, n: int):
    for i in omp.gang(n):
        out[i, 0] = omp.num_gangs()
    s = 0
    for i in omp.gang(n, reduction="+:s"):
        s += i
    out[0, 2] = s
    for i in omp.gang(n):
        out[i, 1] = omp.num_gangs()


def test_sequential_store_then_parallel_loops(device):
    rng = np.random.default_rng(0)
    M = rng.random((40, 40))
    A = M @ M.T + 40 * np.eye(40)
    got = A.copy()
    cholesky.on(device)(got)
    np.testing.assert_allclose(np.tril(got), np.linalg.cholesky(A), rtol=1e-10)


def test_time_loop_around_two_parallel_loops(device):
    a = np.random.default_rng(1).random(1001)
    b = np.zeros(1001)
    ra, rb = a.copy(), b.copy()
    stencil.py_func(ra, rb, 7)
    stencil.on(device)(a, b, 7)
    np.testing.assert_allclose(a, ra, rtol=1e-13)
    np.testing.assert_allclose(b, rb, rtol=1e-13)


@pytest.mark.parametrize("limit", [4, 1000])
def test_while_break_continue_if_return(device, limit):
    a = np.random.default_rng(2).random(777) * 100
    out = np.zeros(2)
    ra, rout = a.copy(), out.copy()
    want = converge.py_func(ra, 1e-3, limit, rout)
    got = converge.on(device)(a, 1e-3, limit, out)
    assert got == want
    np.testing.assert_array_equal(out, rout)
    np.testing.assert_allclose(a, ra, rtol=1e-13)


def test_every_gang_loop_runs_at_full_width(device):
    out = np.zeros((500, 3), np.int64)
    widths.on(device)(out, 500)
    assert out[0, 2] == 500 * 499 // 2
    assert (out[:, 0] == out[0, 0]).all() and (out[:, 1] == out[0, 0]).all()
