"""Math functions in a vectorized loop (glibc's libmvec on the host) stay within the
ulps the README states of the correctly rounded values, on every device."""
import numpy as np
import pytest

import pygomp as omp
from pygomp.runtime import devices


@omp.target
def functions(x, e, l, s, c, p, t):
    for i in omp.parallel_range(x.shape[0]):
        e[i] = np.exp(x[i])
        l[i] = np.log(np.abs(x[i]))
        s[i] = np.sin(x[i])
        c[i] = np.cos(x[i])
        p[i] = np.power(np.abs(x[i]), x[i] / 8)
        t[i] = np.tanh(x[i])


NAMES = ("exp", "log", "sin", "cos", "pow", "tanh")
HOST = {"float32": 4, "float64": 3}                 # the README's bounds
OPENCL = dict(exp=3, log=3, sin=4, cos=4, pow=16, tanh=5)      # OpenCL C's, full profile


def _ulps(got, want, dtype):
    ints = np.int32 if dtype == np.float32 else np.int64
    w = want.astype(dtype)
    apart = np.abs(got.view(ints).astype(np.int64) - w.view(ints).astype(np.int64))
    return int(apart[np.isfinite(w)].max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_functions_within_stated_ulps(device, dtype):
    x = np.random.default_rng(0).uniform(-80, 80, 20000).astype(dtype)
    x[:5000] /= 64
    outs = [np.zeros_like(x) for _ in NAMES]
    functions.on(device)(x, *outs)
    X = x.astype(np.longdouble)
    exact = [np.exp(X), np.log(np.abs(X)), np.sin(X), np.cos(X), np.power(np.abs(X), X / 8),
             np.tanh(X)]
    dev = devices.all_devices()[device]
    opencl = not dev.is_initial and dev.plugin.name == "opencl"
    for name, got, want in zip(NAMES, outs, exact):
        bound = OPENCL[name] if opencl else HOST[np.dtype(dtype).name]
        assert _ulps(got, want, dtype) <= bound, name
