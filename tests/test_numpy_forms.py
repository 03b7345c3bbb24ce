"""The numpy forms of the second round: ``@``, np.dot and np.matmul of 1-d and 2-d
arrays, reductions along an axis, np.outer, np.clip, np.linalg.norm, the parts and
conjugate of complex arrays, views (bound to names, passed to helpers, looped over,
``.T``), slices with a step known at run time, np.cumsum and np.cumprod, the LU row
update and uint64 literals.  Each kernel on every device, and its CUDA C under the
emulation of test_cuda_emu, against its ``py_func`` run on numpy arrays; and the
refusals, each naming what is missing."""
import os
import sys

import numpy as np
import pytest

import pygomp.kernels as omp

sys.path.insert(0, os.path.dirname(__file__))
from test_array_exprs import refused_at_mark  # noqa: E402


@omp.target
def products(A, B, x, y, z, C, out):
    y[:] = A @ x                            # a parallel loop of row dot products
    z[:] = np.dot(x, B) + np.matmul(A[0], B)
    C[:, :] = A @ B[:, ::-1]               # a strided operand
    C[1:, :] += 0.5 * np.outer(x[1:5], z)
    out[0] = x[:6] @ z                      # 1-d @ 1-d: a scalar
    out[1] = np.sum(A @ x) + np.max(np.dot(A, B).sum(axis=0))
    for i in omp.parallel_range(A.shape[0]):
        out[2 + i] = A[i] @ x


@omp.target
def gang_products(A, B, x, y, Y):
    for i in omp.gang(A.shape[0]):
        y[i] = A[i] @ x                     # a vector-level reduction in a gang loop
        Y[i, :] = A[i] @ B                  # the gang's sequential loop of dot products


@omp.target
def along_axes(A, r, s, p, T3, out, ai):
    r[:] = A.sum(axis=1)
    s[:] = np.max(A, axis=0) - np.min(A, 0)
    p[:] = np.prod(A[:, :3] + 1.0, axis=-1) + np.linalg.norm(A, axis=1)
    ai[:5] = np.argmax(A[:, :5], axis=0) + 10 * A[:, :5].argmin(axis=1)
    ai[5:] = np.argmax(A[:, 5:], axis=0)
    T3[:, :] = np.sum(A[:, :, None] * A[:, None, :], axis=0)   # A.T @ A
    out[0] = np.max(A.sum(axis=0))
    out[1] = np.sum(A[0], axis=0)           # 1-d: a scalar
    out[2] = np.linalg.norm(A[1]) + np.linalg.norm(A)


@omp.target
def clipped(x, c, lo):
    c[:] = np.clip(x, lo, 0.7)
    c[0] = np.clip(x[0] * 10.0, 0.0, 1.0)


@omp.target
def complex_parts(z, w, re, im, out):
    w[:] = np.conj(z) + z.conjugate() * 2
    re[:] = z.real + np.real(z)
    im[:] = z.imag * np.imag(z) - np.abs(z)
    out[0] = np.linalg.norm(z)


@omp.target
def lu(A):
    n = A.shape[0]
    for k in range(n - 1):
        for i in omp.parallel_range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
            A[i, k + 1:] -= A[i, k] * A[k, k + 1:]   # rows i > k: no overlap


@omp.target
def reads_first(x, A):
    x[:] = x[0] + x                         # x[0] read once, before the loop
    s = x[1]                                # every gang sees the value before the loop
    for j in omp.parallel_range(x.shape[0]):
        x[j] = s * x[j]
    n = A.shape[0]
    for k in range(n - 1):
        for i in omp.parallel_range(k + 1, n):
            A[i, k:] -= A[i, k] / A[k, k] * A[k, k:]     # A[i, k] too: then written


@omp.target
def hashes(x, out):
    for i in omp.parallel_range(x.shape[0]):
        out[i] = (x[i] * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(7)


@omp.target
def views(x, A, B, out, y):
    a = x[1:]                               # views bound to names
    b = x[:-1]
    y[1:] = 0.5 * (a + b)
    t = A.T
    B[:, :] = t + A.T * 2.0
    out[0] = np.sum(a) + a[0] + a[-1] + len(a) + t.shape[0] * 100 + t[1, 0]
    ev = x[::2]
    ev[:] = ev * 10.0                       # writes x through the view
    out[1] = ev.size + ev.ndim
    for i in omp.parallel_range(A.shape[0]):
        r = A[i, 1:]
        r[0] = r[-1] + i
    c = A[:, 2]
    out[2] = c @ c
    w = A[1:, ::-1].T                       # a view of a view
    out[3] = w[0, 0] + w.shape[1] * 1000 + np.max(w)
    m = 1
    for k in range(3):
        s = x[m:]                           # rebound each time round
        out[4] += s[0]
        m = m + 2
        out[5] += s[0]                      # a later change of m does not move s


@omp.declare_target
def total(v):
    s = 0.0
    for k in range(len(v)):
        s += v[k]
    return s


@omp.declare_target
def scale(v, c):
    v[:] = v * c                            # through the view, into the caller's array


@omp.declare_target
def corner(m):
    return m[0, 0] + m[m.shape[0] - 1, 1] + np.sum(m)


@omp.target
def strided_helpers(x, A, out, s):
    out[0] = total(x[::2]) + total(x[1::s])
    scale(x[::3], 2.0)
    out[1] = corner(A.T) + corner(A[1:, ::-1])
    for i in omp.parallel_range(A.shape[0]):
        scale(A[i, ::2], 0.5)
    col = A[:, 1]
    out[2] = total(col)
    for v in x[::-4]:                       # a loop over a 1-d view
        out[2] += v


@omp.target
def var_steps(x, a, b, s, out, lens, y):
    out[0] = np.sum(x[a:b:s])               # a step known at run time
    lens[0] = len(x[a:b:s])
    out[1] = np.sum(x[::s])
    v = x[a::s]
    lens[1] = len(v)
    out[2] = np.sum(v[::2]) if len(v) > 0 else -1.0
    y[b:a:s] = 1.0


def test_variable_steps_as_numpy_normalizes_them(device):
    """Steps of both signs and of several sizes with bounds negative, past either end
    and empty: x holds powers of two, so a sum names the elements taken."""
    k = var_steps.on(device)
    for n in (0, 1, 7):
        x = 2.0 ** np.arange(n)
        for a in (-9, -2, 0, 3):
            for b in (-9, -1, 4, 9):
                for s in (-3, -1, 1, 2):
                    args = (x, a, b, s, np.zeros(3), np.zeros(2, np.int64), np.zeros(n))
                    want = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
                    var_steps.py_func(*want)
                    k(*args)
                    for got, w in zip(args[4:], want[4:]):
                        np.testing.assert_array_equal(got, w, err_msg=f"{n} {a} {b} {s}")


@omp.target
def prefix(x, y, z, xi, yi, P):
    y[:] = np.cumsum(x)                     # a two-pass parallel scan
    z[1:] = np.cumprod(x[:-1] * 0.5 + 0.75)
    yi[:] = np.cumsum(xi)
    for i in omp.parallel_range(P.shape[0]):
        P[i, :] = np.cumsum(x[:P.shape[1]] + i)     # the thread's sequential scan


def prefix_inputs(n):
    rng = np.random.default_rng(n)
    return rng.random(n), np.zeros(n), np.zeros(n), rng.integers(-9, 9, n), \
        np.zeros(n, np.int64), np.zeros((3, min(n, 4)))


def inputs(kernel):
    rng = np.random.default_rng(3)
    A, B = rng.random((5, 7)), rng.random((7, 6))
    if kernel is products:
        return A, B, rng.random(7), np.zeros(5), np.zeros(6), np.zeros((5, 6)), np.zeros(7)
    if kernel is gang_products:
        return A, B, rng.random(7), np.zeros(5), np.zeros((5, 6))
    if kernel is along_axes:
        return A, np.zeros(5), np.zeros(7), np.zeros(5), np.zeros((7, 7)), np.zeros(3), \
            np.zeros(7, np.int64)
    if kernel is clipped:
        return rng.random(9), np.zeros(9), 0.25
    if kernel is complex_parts:
        z = (rng.random(8) - 0.5 + 1j * rng.random(8)).astype(np.complex64)
        return z, np.zeros(8, np.complex64), np.zeros(8, np.float32), \
            np.zeros(8, np.float32), np.zeros(1, np.float32)
    if kernel is lu:
        return (rng.random((9, 9)) + 9 * np.eye(9),)
    if kernel is views:
        return rng.random(9), rng.random((4, 4)), np.zeros((4, 4)), np.zeros(6), np.zeros(9)
    if kernel is strided_helpers:
        return np.arange(10.0), np.arange(12.0).reshape(3, 4), np.zeros(3), 3
    if kernel is var_steps:
        return 2.0 ** np.arange(9), -2, 1, -2, np.zeros(3), np.zeros(2, np.int64), \
            np.zeros(9)
    if kernel is prefix:
        return prefix_inputs(2100)
    if kernel is reads_first:
        return np.arange(1.0, 3001.0), rng.random((6, 6)) + 6 * np.eye(6)
    if kernel is hashes:
        return np.arange(2**63, 2**63 + 8, dtype=np.uint64), np.zeros(8, np.uint64)
    raise AssertionError(kernel)


KERNELS = [products, gang_products, along_axes, clipped, complex_parts, lu, reads_first,
           hashes, views, strided_helpers, var_steps, prefix]


def check(kernel, run):
    args = inputs(kernel)
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(over="ignore"):
        kernel.py_func(*want)
    run(kernel, args)
    for a, w in zip(args, want):
        if isinstance(a, np.ndarray):
            assert a.dtype == w.dtype
            rtol = 1e-5 if a.dtype in (np.float32, np.complex64) else 1e-10
            np.testing.assert_allclose(a, w, rtol=rtol, err_msg=kernel.py_func.__name__)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.py_func.__name__)
def test_forms_mean_their_py_func(device, kernel):
    check(kernel, lambda k, args: k.on(device)(*args))


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 4099])
def test_prefix_at_chunk_edges(device, n):
    """Lengths around the chunks of the parallel scan: empty, one element, one chunk
    short of, at and past a multiple of the blocks."""
    args = prefix_inputs(n)
    want = [a.copy() for a in args]
    prefix.on(device)(*args)
    prefix.py_func(*want)
    for a, w in zip(args, want):
        np.testing.assert_allclose(a, w, rtol=1e-10)
    assert np.array_equal(args[4], want[4])         # integers: exactly


@pytest.fixture(scope="module")
def emu():
    import test_cuda_emu
    return test_cuda_emu, test_cuda_emu.emulator([(k, inputs(k)) for k in KERNELS])


@pytest.mark.parametrize("gangs, workers, vector", [(3, 2, 8), (1, 1, 32)])
def test_forms_in_cuda_c(emu, gangs, workers, vector):
    mod, lib = emu
    for kernel in KERNELS:
        check(kernel, lambda k, args: mod.run(lib, k, args, gangs, workers, vector))


# -- what stays refused, and what each refusal names ------------------------------------

def k_reads_target(A, x):
    x[:] = A @ x  # MARK


def k_matmul_rank(A, x, y):
    y[:] = A[None] @ x  # MARK


def k_keyword(A, y):
    y[:] = np.sum(A, axis=0, keepdims=True)  # MARK


def k_cumsum(x, y):
    y[:] = np.diff(x)  # MARK


def k_sqrt_value(x, y):
    y[0] = np.sqrt(x)  # MARK


def k_array_value(x, y):
    y[0] = x * 2.0  # MARK


def k_int8(x):
    x[0] = np.int8(300)  # MARK


def k_lu_wrong_way(A, k):
    for i in omp.parallel_range(k, A.shape[0]):
        A[i, k + 1:] -= A[k, k + 1:]  # MARK


def k_view_alias(x):
    a = x[1:]
    a[:] = x[:-1]  # MARK


def k_view_loop(A, y):
    for row in A[::2]:  # MARK
        y[0] += row[0]


def k_view_twice(x, c):
    if c > 0:
        a = x[1:]
    else:
        a = x[2:]  # MARK
    x[0] = a[0]


def k_view_row(A):
    v = A[1:, :]
    v[0] = 1.0                              # a row of v: numpy sets the whole row
    A[0, 0] = v[0] + 1.0  # MARK


def k_cumsum_inside(x, y):
    y[:] = 1.0 + np.cumsum(x)  # MARK


V, M = np.zeros(4), np.zeros((4, 4))
REFUSED = [
    (k_reads_target, (M, V), "A @ x reads x[:], which this statement writes: numpy "
                             "computes it first, a kernel does not"),
    (k_matmul_rank, (M, V, V), "@ of arrays with 3 and 1 dimensions: kernels take 1-d "
                               "and 2-d operands"),
    (k_keyword, (M, V), "np.sum(): keepdims= is not supported in kernels (the array and "
                        "axis= are)"),
    (k_cumsum_inside, (V, V), "np.cumsum() makes an array: a kernel takes it only as the "
                              "whole right side of an assignment to a sub-array (y[:] = "
                              "np.cumsum(x))"),
    (k_cumsum, (V, V), "np.diff is not supported in kernels (yet)"),
    (k_sqrt_value, (V, V), "x is an array: kernels compute np.sqrt() of arrays "
                           "elementwise only into a sub-array (out[:] = np.sqrt(x))"),
    (k_array_value, (V, V), "x is an array: a kernel computes array arithmetic only "
                            "into a sub-array (out[:] = ...)"),
    (k_int8, (np.zeros(2, np.int8),), "np.int8(300): Python integer 300 out of bounds "
                                      "for int8"),
    (k_lu_wrong_way, (M, 1), "A[k, k + 1:] overlaps A[i, k + 1:]"),
    (k_view_alias, (V,), "x[:-1] overlaps a[:], which this statement writes"),
    (k_view_loop, (M, V), "cannot loop over A[::2]: kernels loop over the rows of "
                          "arrays and over 1-d views, not over the rows of a 2-d view"),
    (k_view_twice, (V, 1), "'a' is bound to a view by another statement: bind a view "
                           "to a name once"),
    (k_view_row, (M,), "v is a view with 2 dimensions: index every one of them"),
]


@pytest.mark.parametrize("fn, args, text", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_refused_naming_what_is_missing(fn, args, text):
    refused_at_mark(fn, args, text)


@omp.target
def strong_literals(x, out):
    s = np.float64(0.0)             # numpy scalars are strong: a float64 sum
    z = np.complex128(0.0)          # (np.float64 is a Python float, and typed all the same)
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i]
    for i in omp.parallel_range(x.shape[0]):
        out[i] = x[i] + z.real
    return s


def test_numpy_scalar_literals_keep_their_type(device):
    x = np.full(100_000, 0.1, np.float32)
    out = np.zeros_like(x)
    s = strong_literals.on(device)(x, out)
    assert strong_literals.source(x, out).count("double") >= 1
    assert abs(s - np.sum(x, dtype=np.float64)) < 1e-6      # a float32 sum is off by 1e-3
    np.testing.assert_array_equal(out, x)
