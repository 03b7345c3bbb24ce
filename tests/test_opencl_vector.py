"""Elementwise loops in OpenCL vector types on CPUs (compiler/vectypes.py): which
loops qualify, and their results on PoCL against the same function run by Python, with
a tail of fewer than a vector's lanes and a loop that starts late."""
import numpy as np
import pytest

import pygomp.kernels as omp

pytest.importorskip("pyopencl")
from test_opencl_plugin import _opencl_device, dev  # noqa: E402,F401  (a fixture)


@omp.target
def price(s, x, t, r: np.float32, out):
    for i in omp.parallel_range(3, s.shape[0]):
        sq = np.sqrt(t[i])
        d = (np.log(s[i] / x[i]) + r * t[i]) / sq
        w = np.exp(-0.5 * d * d) * np.float32(0.3989423)
        out[i] = w if d > 0 else 1 - w + abs(d)


@omp.target
def mixed(a, b, out):
    for i in omp.parallel_range(a.shape[0]):
        out[i] = np.tanh(a[i] * np.float64(b[i])) + np.power(np.abs(a[i]), 0.5)


@omp.target
def rows(a, out):
    for i in omp.parallel_range(a.shape[0]):
        out[i] = np.exp(a[i, 0])


@omp.target
def branchy(a, out):
    for i in omp.parallel_range(a.shape[0]):
        if a[i] > 0:
            out[i] = np.exp(a[i])


@omp.target
def counting(out):
    for i in omp.parallel_range(out.shape[0]):
        out[i] = np.exp(out[i]) + i


def _data(n, dtype=np.float32):
    rng = np.random.default_rng(1)
    return [rng.uniform(lo, hi, n).astype(dtype) for lo, hi in ((5, 30), (1, 100), (0.2, 9))]


def test_elementwise_loops_use_vector_types():
    s, x, t = _data(40)
    src = price.source(s, x, t, np.float32(0.02), np.zeros(40, np.float32), target="opencl")
    assert "float16 d = " in src and "vstore16(" in src and "exp((" in src
    a = np.zeros(40)
    src = mixed.source(np.zeros(40, np.float32), a, a, target="opencl")
    assert "vload8(0, b + i)" in src and "convert_double8(" in src      # 8 doubles


@pytest.mark.parametrize("kernel, args", [
    (rows, (np.zeros((4, 2)), np.zeros(4))),            # a[i, 0]: not elementwise
    (branchy, (np.zeros(4), np.zeros(4))),              # an if
    (counting, (np.zeros(4),)),                         # the loop variable as a value
])
def test_other_loops_stay_scalar(kernel, args):
    assert "vload" not in kernel.source(*args, target="opencl")


def test_results_on_pocl(dev):
    for n in (3, 19, 1000 + 7):                     # all tail, one vector and a tail
        s, x, t = _data(n)
        out, want = np.full(n, 7, np.float32), np.full(n, 7, np.float32)
        price.on(dev.number)(s, x, t, np.float32(0.02), out)
        price.py_func(s, x, t, np.float32(0.02), want)
        np.testing.assert_allclose(out, want, rtol=2e-6)
        assert (out[:3] == 7).all()
    a, b, _ = _data(1003, np.float32)
    b = b.astype(np.float64)
    out, want = np.zeros(1003), np.zeros(1003)
    mixed.on(dev.number)(a / 50, b, out)
    mixed.py_func(a / 50, b, want)
    np.testing.assert_allclose(out, want, rtol=0, atol=2e-7)     # float32 pow: 1 ulp
