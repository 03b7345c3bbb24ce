"""complex64 and complex128 in kernels: arithmetic, abs, conj, .real/.imag, np.exp,
np.sqrt, complex(a, b), scalar arguments and results, + and * reductions, on every device
against the kernel's py_func; the same kernels under the CUDA emulation (test_cuda_emu);
and the messages for what stays refused."""
import os
import sys

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp
from pygomp.compiler import types as T
from pygomp.errors import CompileError

sys.path.insert(0, os.path.dirname(__file__))

CTYPES = (np.complex64, np.complex128)
RTOL = {np.complex64: 2e-5, np.complex128: 1e-12}


def cvals(n, dtype, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    return ((rng.random(n) - 0.5) * scale + 1j * (rng.random(n) - 0.5) * scale).astype(dtype)


@omp.target
def arith(x, y, out, a):
    for i in omp.parallel_range(x.shape[0]):
        z = x[i] * y[i] - a
        out[i] = z / (y[i] + 0.5) + x[i] ** 2 - (-y[i]) + 2 * x[i] - 1j


@omp.declare_target
def swap(z):
    return complex(z.imag, z.real)


@omp.target
def functions(x, out, parts):
    for i in omp.parallel_range(x.shape[0]):
        z = x[i]
        out[i, 0] = np.conj(z) + z.conjugate() * 1j
        out[i, 1] = np.exp(z)
        out[i, 2] = np.sqrt(z)
        out[i, 3] = swap(z)                 # a helper taking and returning a complex
        out[i, 4] = np.sqrt(z.real - 1.0 + 0j)
        parts[i, 0] = abs(z)
        parts[i, 1] = z.real * z.imag
        parts[i, 2] = np.abs(z - 1) + np.real(z) - np.imag(z)


@omp.target
def compare(x, y, out):
    for i in omp.parallel_range(x.shape[0]):
        out[i] = (x[i] == y[i]) + 2 * (x[i] != 0) + 4 * (not y[i])


@omp.target
def sums(x, p):
    s = 0j
    q = 1 + 0j
    for i in omp.parallel_range(x.shape[0], reduction="+:s;*:q"):
        s += x[i] * np.conj(x[i] + 1j)
        q *= p[i]
    return s + q


@omp.target
def dotc(x, y):
    s = x[0] - x[0]
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):   # a simd loop on the host
        s += x[i] * np.conj(y[i])
    return s


@omp.target
def level_sums(x, p, g: int, c: int, out):
    s, q = x[0] - x[0], x[0] - x[0] + 1
    for b in omp.gang(g, reduction="+:s;*:q"):
        for w in omp.worker(c, reduction="+:s;*:q"):
            s += x[b * c + w]
            q *= p[b * c + w]
    out[0], out[1] = s, q
    s, q = x[0] - x[0], x[0] - x[0] + 1
    for b in omp.gang(g, reduction="+:s;*:q"):
        for v in omp.vector(c, reduction="+:s;*:q"):
            s += x[b * c + v]
            q *= p[b * c + v]
    out[2], out[3] = s, q


@omp.target
def scaled(x, a, out):
    t = a * 2
    for i in omp.parallel_range(x.shape[0]):
        out[i] = x[i] * t
    return t + x[0]


@omp.target
def mandelbrot(xs, ys, limit: int, counts):
    for i in omp.parallel_range(ys.shape[0]):
        for j in range(xs.shape[0]):
            c = complex(xs[j], ys[i])
            z = 0j
            k = 0
            while k < limit and abs(z) <= 2.0:
                z = z * z + c
                k += 1
            counts[i, j] = k


@omp.target
def columns(A, y, out):
    """y reduced over the rows (an array reduction); a private array sized at run time."""
    n, m = A.shape
    for i in omp.parallel_range(n, reduction="+:y"):
        for j in range(m):
            y[j] += A[i, j] * (1 + 1j)
    for i in omp.parallel_range(n):
        row = np.zeros(m, np.complex128)      # two words an element
        b = np.zeros(m, np.complex128)        # after row's words
        for j in range(m):
            b[j] = A[i, j]
        for j in range(m):
            row[j] = A[i, m - 1 - j]
        acc = row[0] - row[0]
        for j in range(m):
            acc += row[j] * (j + 1) - b[j]
        out[i] = acc


@omp.target
def scaled_rows(x, m: int, out):
    """x[i] is the same in every trip of the j loop (a load read once, before it)."""
    for i in omp.parallel_range(x.shape[0]):
        acc = 0j
        for j in range(m):
            acc += x[i] * j
        out[i] = acc


def _py(kernel, *args):
    """Run ``kernel.py_func`` on copies of the arrays; (its result, the copies)."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    return kernel.py_func(*copies), copies


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda t: np.dtype(t).name)
def test_arithmetic_on_arrays_and_scalars(device, dtype):
    x, y = cvals(300, dtype, 1), cvals(300, dtype, 2)
    for a in (0.5 - 2j, dtype(1.5 + 0.25j)):
        out = np.zeros(300, dtype if isinstance(a, np.generic) else np.complex128)
        _, (_, _, ref, _) = _py(arith, x, y, out, a)
        arith.on(device)(x, y, out, a)
        np.testing.assert_allclose(out, ref, rtol=RTOL[dtype])
        assert not np.array_equal(out, np.zeros_like(out))


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda t: np.dtype(t).name)
def test_functions_and_parts(device, dtype):
    x = cvals(200, dtype, 3, scale=6.0)
    x[:4] = [0, -4, 9j, -1 - 0j]           # sqrt of zero, a negative real, on the axes
    out, parts = np.zeros((200, 5), dtype), np.zeros((200, 3), np.dtype(dtype(0).real))
    _, (_, ref, rparts) = _py(functions, x, out, parts)
    functions.on(device)(x, out, parts)
    np.testing.assert_allclose(out, ref, rtol=RTOL[dtype], atol=RTOL[dtype])
    np.testing.assert_allclose(parts, rparts, rtol=RTOL[dtype], atol=RTOL[dtype])
    np.testing.assert_array_equal(out[1, 2], np.sqrt(dtype(-4)))       # 2j, exactly


def test_comparisons(device):
    x = np.array([1 + 1j, 0, 2j, 3, 0], np.complex128)
    y = np.array([1 + 1j, 0, -2j, 3 + 1e-9j, 1j])
    out = np.zeros(5, np.int64)
    _, (_, _, ref) = _py(compare, x, y, out)
    compare.on(device)(x, y, out)
    np.testing.assert_array_equal(out, ref)
    assert list(ref) == [3, 5, 2, 2, 0]


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda t: np.dtype(t).name)
def test_sum_and_product_reductions(device, dtype):
    x = cvals(1000, dtype, 4)
    p = np.exp(1j * np.linspace(0, 3, 1000)).astype(dtype) * dtype(1.0005)
    want, _ = _py(sums, x, p)
    got = sums.on(device)(x, p)
    assert isinstance(got, complex)
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.complex64 else 1e-10)
    np.testing.assert_allclose(dotc.on(device)(x, p), np.vdot(p, x),
                               rtol=1e-4 if dtype == np.complex64 else 1e-10)


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda t: np.dtype(t).name)
def test_reductions_over_gangs_workers_and_lanes(device, dtype):
    x = cvals(6 * 40, dtype, 5)
    p = np.exp(1j * np.linspace(0, 2, 240)).astype(dtype)
    out = np.zeros(4, dtype)
    _, (_, _, _, _, ref) = _py(level_sums, x, p, 6, 40, out)
    level_sums.on(device)(x, p, 6, 40, out)
    np.testing.assert_allclose(out, ref, rtol=1e-4 if dtype == np.complex64 else 1e-10)


def test_scalar_arguments_and_results(device):
    x = cvals(50, np.complex64, 6)
    for a in (2 - 3j, np.complex64(0.5 + 1j), np.complex128(-1 + 0.5j)):
        out = np.zeros(50, np.complex128)
        want, (_, _, ref) = _py(scaled, x, a, out)
        with pygomp.target_data(device, to=[x], tofrom=[out]):
            for _ in range(2):              # data present: the second call is prepared
                got = scaled.on(device)(x, a, out)
                assert got == pytest.approx(want, rel=1e-6)
        np.testing.assert_allclose(out, ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda t: np.dtype(t).name)
def test_array_reduction_and_private_array(device, dtype):
    A = cvals(37 * 9, dtype, 9).reshape(37, 9)
    y, out = np.zeros(9, dtype), np.zeros(37, dtype)
    _, (_, ry, rout) = _py(columns, A, y, out)
    columns.on(device)(A, y, out)
    np.testing.assert_allclose(y, ry, rtol=1e-4 if dtype == np.complex64 else 1e-12)
    np.testing.assert_allclose(out, rout, rtol=RTOL[dtype])


@pytest.mark.parametrize("check", [False, True], ids=["plain", "boundscheck"])
def test_invariant_loads_and_bounds_checking(device, check):
    x, out = cvals(20, np.complex128, 10), np.zeros(20, np.complex128)
    _, (_, _, ref) = _py(scaled_rows, x, 5, out)
    k = omp.target(scaled_rows.py_func, boundscheck=check)
    k.on(device)(x, 5, out)
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_mandelbrot(device):
    xs, ys = np.linspace(-2.0, 0.6, 61), np.linspace(-1.2, 1.2, 41)
    counts = np.zeros((41, 61), np.int64)
    _, (_, _, _, ref) = _py(mandelbrot, xs, ys, 60, counts)
    mandelbrot.on(device)(xs, ys, 60, counts)
    assert (counts != ref).sum() <= 2         # a point on the edge may round the other way
    assert (ref == 60).sum() > 300 and (ref < 5).sum() > 300


def test_numpy_promotion():
    """complex64 * a Python float stays complex64; complex64 * float64 is complex128."""
    c64, f64 = np.zeros(2, np.complex64), np.zeros(2)

    @omp.target
    def weak(x):
        return x[0] * 2.5 + 1j

    @omp.target
    def strong(x, y):
        return x[0] * y[0]
    assert weak.spec((c64,)).ret == T.COMPLEX64
    assert strong.spec((c64, f64)).ret == T.COMPLEX128
    assert strong.spec((c64, np.zeros(2, np.float32))).ret == T.COMPLEX64
    assert weak(c64) == 1j


def k_less(x):
    return x[0] < x[1]


def k_print(x):
    print(x[0])


def k_set_real(x):
    x[0].real = 1.0


def k_int(x):
    return int(x[0])


def k_log(x):
    return np.log(x[0])


def k_max(x):
    m = 0j
    for i in omp.parallel_range(x.shape[0], reduction="max:m"):
        m = x[i]
    return m


def k_floor(x):
    return x[0] // 2


def k_if(x):
    if x[0]:
        return 1
    return 0


@pytest.mark.parametrize("fn, text", [
    (k_less, "complex numbers have no order: < does not apply to complex128"),
    (k_print, "print() of the complex 'x[0]': print its parts (x[0].real, .imag)"),
    (k_set_real, "cannot assign to x[0].real: a complex number is immutable"),
    (k_int, "int() of a complex number: take its .real, .imag or abs() first"),
    (k_log, "np.log() of a complex number is not supported in kernels"),
    (k_max, "reduction max:m: operator max does not apply to complex128"),
    (k_floor, "operator // does not apply to complex numbers"),
    (k_if, "x[0] is complex: compare it (z != 0) to make a condition"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_refused_with_a_message(fn, text):
    with pytest.raises(CompileError) as info:
        omp.target(fn).source(np.zeros(3, np.complex128))
    assert text in str(info.value)
    assert f"test_complex.py:{fn.__code__.co_firstlineno + 1}" in str(info.value) \
        or "reduction" in text


# -- the CUDA dialect under the emulation of test_cuda_emu ---------------------------------

@pytest.fixture(scope="module")
def emu():
    tce = pytest.importorskip("test_cuda_emu")
    cases = []
    for t in CTYPES:
        z = np.zeros(2, t)
        cases += [(arith, (z, z, np.zeros(2, t), t(1))), (sums, (z, z)), (dotc, (z, z)),
                  (level_sums, (z, z, 1, 1, z)), (functions, (z, np.zeros((2, 5), t),
                                                              np.zeros((2, 3), z.real.dtype)))]
        cases.append((columns, (np.zeros((2, 2), t), z, z)))
    cases.append((mandelbrot, (np.zeros(2), np.zeros(2), 1, np.zeros((2, 2), np.int64))))
    return tce, tce.emulator(cases)


@pytest.mark.parametrize("gangs, workers, vector", [(5, 2, 8), (3, 4, 4), (1, 1, 32)])
@pytest.mark.parametrize("dtype", CTYPES, ids=lambda t: np.dtype(t).name)
def test_cuda_emulated(emu, dtype, gangs, workers, vector):
    tce, lib = emu
    geo = (gangs, workers, vector)
    x, y = cvals(240, dtype, 7), cvals(240, dtype, 8)
    out = np.zeros(240, dtype)
    _, (_, _, ref, _) = _py(arith, x, y, out, dtype(1 - 1j))
    tce.run(lib, arith, (x, y, out, dtype(1 - 1j)), *geo)
    np.testing.assert_allclose(out, ref, rtol=RTOL[dtype])

    p = np.exp(1j * np.linspace(0, 2, 240)).astype(dtype)
    want, _ = _py(sums, x, p)
    got = tce.run(lib, sums, (x, p), *geo)
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.complex64 else 1e-10)
    np.testing.assert_allclose(tce.run(lib, dotc, (x, p), *geo), np.vdot(p, x),
                               rtol=1e-4 if dtype == np.complex64 else 1e-10)
    out = np.zeros(4, dtype)
    _, (_, _, _, _, ref) = _py(level_sums, x, p, 6, 40, out)
    tce.run(lib, level_sums, (x, p, 6, 40, out), *geo)
    np.testing.assert_allclose(out, ref, rtol=1e-4 if dtype == np.complex64 else 1e-10)

    A = x[:24 * 10].reshape(24, 10)
    yy, rows = np.zeros(10, dtype), np.zeros(24, dtype)
    _, (_, ry, rrows) = _py(columns, A, yy, rows)
    tce.run(lib, columns, (A, yy, rows), *geo)
    np.testing.assert_allclose(yy, ry, rtol=1e-4 if dtype == np.complex64 else 1e-12)
    np.testing.assert_allclose(rows, rrows, rtol=RTOL[dtype])

    out, parts = np.zeros((240, 5), dtype), np.zeros((240, 3), x.real.dtype)
    _, (_, ref, rparts) = _py(functions, x, out, parts)
    tce.run(lib, functions, (x, out, parts), *geo)
    np.testing.assert_allclose(out, ref, rtol=RTOL[dtype], atol=RTOL[dtype])
    np.testing.assert_allclose(parts, rparts, rtol=RTOL[dtype], atol=RTOL[dtype])


def test_cuda_emulated_mandelbrot(emu):
    tce, lib = emu
    xs, ys = np.linspace(-2.0, 0.6, 31), np.linspace(-1.2, 1.2, 21)
    counts = np.zeros((21, 31), np.int64)
    _, (_, _, _, ref) = _py(mandelbrot, xs, ys, 40, counts)
    tce.run(lib, mandelbrot, (xs, ys, 40, counts), 3, 2, 4)
    assert (counts != ref).sum() <= 1
