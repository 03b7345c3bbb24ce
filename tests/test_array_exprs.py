"""Array expressions in kernels (slices, broadcasting, slice assignment), numpy
reductions (np.sum, np.prod, np.min, np.max, np.dot, np.argmin, np.argmax, the
methods) and np.where: each kernel on every device, and its CUDA C under the emulation
of test_cuda_emu, against its ``py_func`` run on numpy arrays."""
import inspect
import os
import sys

import numpy as np
import pytest

import pygomp.kernels as omp
from pygomp.errors import CompileError

sys.path.insert(0, os.path.dirname(__file__))


# -- kernels ---------------------------------------------------------------------------

@omp.target
def jacobi1d(u, v, steps):
    for t in range(steps):
        v[1:-1] = 0.5 * (u[:-2] + u[2:])
        u[1:-1] = 0.5 * (v[:-2] + v[2:])


@omp.target
def jacobi2d(u, v):
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


@omp.target
def fills(A, x, y, z):
    for i in omp.parallel_range(A.shape[0]):
        row = A[i]
        row[:] = 0                          # a named sub-array
        row[1::3] = x[: len(row[1::3])]     # a step, bounds from an expression
        row[-2:] += np.sqrt(x[-2:]) + i     # negative bounds, +=, a ufunc
    y[::-1] = x                             # a negative step
    y[:3] = y[:3] * 2                       # reads what it writes, at the same places
    z[:, :] = x[:, None] * y[None, :]       # new axes broadcast
    z[-1] = -1                              # a sub-array by an index, a scalar
    z[0, ::2] += x[0]


@omp.target
def broadcast(A, x, B):
    B[:] = A * x + 1.0                      # a 1-d row broadcast over the rows of A
    B[0, :] = np.maximum(B[0, :], 2.5)
    B[:, 1] = np.abs(A[:, -1]) - x[2]       # a column
    A += B[::-1]                            # a whole array in place


@omp.target
def cast_ints(xi, out):
    out[:] = xi * 3 // 2 + (xi > 2)         # int64 from int32 and bool, stored into int16
    out[1:] -= xi[:1]                      # one element broadcast


@omp.target
def private_rows(x, out):
    for i in omp.parallel_range(x.shape[0]):
        acc = np.zeros(3)                   # a private array
        acc[:] = x[i]
        acc[1:] += 1.0
        out[i] = acc.sum()


@omp.target
def wheres(x, y, out):
    out[:] = np.where(x > 0, x, 0.0)
    out[:2] = np.where(y[:2] > x[:2], y[:2], x[:2] * 2)
    for i in omp.parallel_range(3):
        out[i] += np.where(x[i] > 0.5, 1.0, -1.0)     # np.where of scalars


@omp.target
def reductions(x, y, A, out):
    out[0] = np.sum(x)
    out[1] = x.sum()
    out[2] = np.prod(x[:6] + 1)
    out[3] = np.min(x)
    out[4] = np.max(A[1, :])
    out[5] = np.dot(x, y)
    out[6] = A.sum()
    out[7] = np.sum(x[1:] * y[:-1]) - (x * y).max()
    out[8] = np.sum(x > 0.5)
    out[9] = np.argmax(x) + 100 * np.argmin(A)
    out[10] = x.min() + np.max(y[::2])
    x[:] = x / np.sum(x)                    # the sum first, then the loop


@omp.target
def int_sum(xi):
    return np.sum(xi)                       # int32 elements, int64 result (numpy 2)


@omp.target
def int_dot(xi, yi):
    return np.dot(xi, yi) + np.dot(yi, yi > 2)   # int32 from int32 (and bool)


@omp.target
def row_reductions(A, x, y, m, am):
    for i in omp.gang(A.shape[0]):
        y[i] = np.dot(A[i, :], x)           # a vector-level reduction
        m[i] = np.max(A[i, :])
        am[i] = np.argmax(A[i])


@omp.target
def worker_rows(A, y):
    for g in omp.gang(A.shape[0]):
        for w in omp.worker(A.shape[1]):
            y[g, w] = np.sum(A[g, w, :]) + A[g, w].min()


@omp.target
def thread_rows(A, y, C):
    for i in omp.parallel_range(A.shape[0]):
        y[i] = A[i].sum() * 2.0             # in the innermost level: sequential
        C[i, :] = A[i, ::-1] - A[i].max()


@omp.declare_target
def shift(a, b):
    b[1:] = a[:-1]
    b[0] = np.sum(a)


@omp.target
def helper_rows(A, B):
    for i in omp.parallel_range(A.shape[0]):
        shift(A[i], B[i])


# -- inputs and a kernel's run against its py_func -----------------------------------

def inputs(kernel):
    rng = np.random.default_rng(7)
    x, y = rng.random(9), rng.random(9)
    A = rng.random((5, 9))
    if kernel is jacobi1d:
        return rng.random(40), np.zeros(40), 3
    if kernel is jacobi2d:
        return rng.random((13, 11)), np.zeros((13, 11))
    if kernel is fills:
        return np.ones((4, 11)), x, np.zeros(9), np.zeros((9, 9))
    if kernel is broadcast:
        return A, x, np.zeros((5, 9))
    if kernel is cast_ints:
        return np.arange(-5, 7, dtype=np.int32), np.zeros(12, np.int16)
    if kernel is private_rows:
        return np.arange(6.0), np.zeros(6)
    if kernel is wheres:
        return rng.normal(size=20), rng.normal(size=20), np.zeros(20)
    if kernel is reductions:
        return x, y, A, np.zeros(11)
    if kernel is int_sum:
        return (np.full(6, 2**30, np.int32) + np.arange(6, dtype=np.int32),)
    if kernel is int_dot:
        return np.arange(1, 8, dtype=np.int32), np.arange(7, dtype=np.int32)
    if kernel is row_reductions:
        A = rng.random((7, 37))
        return A, rng.random(37), np.zeros(7), np.zeros(7), np.zeros(7, np.int64)
    if kernel is worker_rows:
        return rng.random((3, 5, 17)), np.zeros((3, 5))
    if kernel is thread_rows:
        return A, np.zeros(5), np.zeros((5, 9))
    if kernel is helper_rows:
        return A, np.zeros((5, 9))
    raise AssertionError(kernel)


ARRAYS = [jacobi1d, jacobi2d, fills, broadcast, cast_ints, private_rows, wheres]
REDUCTIONS = [reductions, int_sum, int_dot, row_reductions, worker_rows, thread_rows,
              helper_rows]


def check(kernel, run):
    """Run ``kernel`` by ``run(kernel, args)`` and its py_func on copies: the same
    arrays after, the same result."""
    args = inputs(kernel)
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref = kernel.py_func(*want)
    got = run(kernel, args)
    for a, w in zip(args, want):
        if isinstance(a, np.ndarray):
            assert a.dtype == w.dtype
            np.testing.assert_allclose(a, w, rtol=1e-12, err_msg=kernel.py_func.__name__)
    if ref is not None:
        assert got == ref, (got, ref)


@pytest.mark.parametrize("kernel", ARRAYS + REDUCTIONS, ids=lambda k: k.py_func.__name__)
def test_array_expressions_mean_their_py_func(device, kernel):
    check(kernel, lambda k, args: k.on(device)(*args))


def test_int32_sum_does_not_wrap():
    """numpy 2 sums int32 elements in int64; the test's values overflow int32."""
    (xi,) = inputs(int_sum)
    assert int(np.sum(xi)) > 2**31 and int_sum.py_func(xi).dtype == np.int64


@omp.target
def slicing(x, a, b, out, lens, y, z):
    out[0] = np.sum(x[a:b])
    lens[0] = len(x[a:b])
    out[1] = np.sum(x[b:a:-1])
    lens[1] = len(x[b:a:-1])
    out[2] = x[a::2].sum()
    lens[2] = len(x[a::2])
    out[3] = np.sum(x[:b:-3])
    lens[3] = len(x[:b:-3])
    out[4] = np.sum(x[-3:a])
    lens[4] = len(x[-3:a])
    out[5] = np.sum(x[2:-1:2]) + np.sum(x[::-1][a:b]) * 1e20
    lens[5] = np.argmax(x[a:b]) if len(x[a:b]) > 0 else -1
    y[a:b] = 1.0
    z[b:a:-1] = x[b:a:-1] * 2.0


def test_slice_bounds_as_numpy_normalizes_them(device):
    """Bounds negative, past either end, empty, with steps of both signs: x holds
    powers of two, so a sum names the elements taken."""
    k = slicing.on(device)
    for n in (0, 1, 5, 8):
        x = 2.0 ** np.arange(n)
        for a in (-9, -3, -1, 0, 2, 9):
            for b in (-9, -2, 0, 3, 9):
                args = (x, a, b, np.zeros(6), np.zeros(6, np.int64), np.zeros(n), np.zeros(n))
                want = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
                slicing.py_func(*want)
                k(*args)
                for got, w in zip(args[3:], want[3:]):
                    np.testing.assert_array_equal(got, w, err_msg=f"n={n} a={a} b={b}")


@omp.target
def edge_cases(x, e, out):
    for i in omp.parallel_range(1):
        out[0] = np.max(x)                  # a sequential loop: a NaN wins, as in numpy
        out[1] = np.argmax(x)               # the first NaN
    out[2] = np.min(e)                      # empty: the identity (numpy raises)
    out[3] = np.sum(e) + np.prod(e) + np.sum(e[:1]) + np.dot(e, e)


def test_nan_and_empty_reductions(device):
    out = np.zeros(4)
    edge_cases.on(device)(np.array([1.0, np.nan, 3.0, np.nan]), np.zeros(0), out)
    assert np.isnan(out[0]) and out[1:].tolist() == [1.0, np.inf, 1.0]


@omp.target(boundscheck=True)
def longer_target(u, v):
    v[:] = u * 2.0


def test_lengths_unchecked_but_reads_past_the_end_reported(device):
    with pytest.raises(IndexError, match=r":\d+: index 3 is out of bounds for axis 0 with "
                                         r"size 3"):
        longer_target.on(device)(np.ones(3), np.zeros(5))


# -- CUDA C under the emulation ----------------------------------------------------------

@pytest.fixture(scope="module")
def emu():
    import test_cuda_emu
    return test_cuda_emu, test_cuda_emu.emulator([(k, inputs(k)) for k in ARRAYS + REDUCTIONS])


@pytest.mark.parametrize("gangs, workers, vector", [(3, 2, 8), (1, 1, 32)])
def test_array_expressions_in_cuda_c(emu, gangs, workers, vector):
    mod, lib = emu
    for kernel in ARRAYS + REDUCTIONS:
        check(kernel, lambda k, args: mod.run(lib, k, args, gangs, workers, vector))


# -- what stays refused, with the reason ----------------------------------------------------

def k_overlap(x):
    x[1:] = x[:-1]  # MARK


def k_mismatch(u, v):
    v[1:-1] = u[:-2] + u[1:]  # MARK


def k_rank(A, y):
    y[:] = A + 1.0  # MARK


def k_while(x):
    while np.sum(x) < 10.0:  # MARK
        x[0] += 1.0


def k_int_inplace(xi):
    xi[1:] += 0.5  # MARK


def k_uint_sum(xu):
    return np.sum(xu)  # MARK


def k_axis(A, y):
    y[:] = np.argmax(A @ A, axis=0)  # MARK


def k_matvec_dot(A, x, y):
    y[0] = np.dot(A, x)  # MARK


def k_scalar_target(x, y):
    y[0] = x[1:] * 2.0  # MARK


V, M = np.zeros(4), np.zeros((4, 4))
REFUSED = [
    (k_overlap, (V,), "x[:-1] overlaps x[1:], which this statement writes: numpy copies "
                      "the right side first, a kernel does not (it needs an index that the "
                      "loop bounds prove differs, as in A[i, k:] -= A[k, k:] under i > k); "
                      "write into another array"),
    (k_mismatch, (V, V), "u[1:] does not broadcast to u[:-2]: its axis 0 has 1 "
                         "element more"),
    (k_rank, (M, V), "A has 2 dimensions and y[:] has 1: it does not broadcast"),
    (k_while, (V,), "a numpy reduction or slice in a while condition: compute it into a "
                    "variable before the loop and at the end of its body"),
    (k_int_inplace, (np.zeros(4, np.int32),), "cannot store float64 into the int32 array "
                                               "xi[1:] in place (numpy refuses the cast): "
                                               "convert it explicitly"),
    (k_uint_sum, (np.zeros(4, np.uint32),), "np.sum() of uint32 elements in a parallel "
                                             "loop: operator + does not apply to uint64"),
    (k_axis, (M, V), "np.argmax() of a matrix product or axis reduction is not "
                     "supported in kernels: store that into an array first"),
    (k_matvec_dot, (M, V, V), "np.dot(A, x) is an array: a kernel stores it into a "
                              "sub-array (out[:] = np.dot(A, x)) or reduces it"),
    (k_scalar_target, (V, V), "x[1:] is an array: kernels take slices in array "
                              "assignments"),
]


def refused_at_mark(fn, args, text):
    """Compiling ``fn`` for ``args`` is refused with ``text`` at the line marked
    ``# MARK`` (the error's first line starts with its file and line)."""
    with pytest.raises(CompileError) as info:
        omp.target(fn).source(*args)
    lines, start = inspect.getsourcelines(fn)
    line = start + next(k for k, t in enumerate(lines) if "# MARK" in t)
    first = str(info.value).partition("\n")[0]
    assert first.startswith(f"{os.path.abspath(inspect.getsourcefile(fn))}:{line}: ")
    assert text in first


@pytest.mark.parametrize("fn, args, text", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_refused_with_the_reason(fn, args, text):
    """The error names the problem at the statement's file and line."""
    refused_at_mark(fn, args, text)
