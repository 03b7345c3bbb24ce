"""Calls with new arrays of a signature already called (the initial device runs them as
repeated calls, its arrays' addresses and extents as words): results, and the checks
a first call makes, at every call."""
import numpy as np
import pytest

import pygomp as omp


@omp.target
def scale(x, y, a: float):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i]


@omp.target
def total(m):
    s = 0.0
    for i in omp.parallel_range(m.shape[0], reduction="+:s"):
        for j in range(m.shape[1]):
            s += m[i, j]
    return s


def test_new_arrays_each_call(device):
    k = scale.on(device)
    for n in (5, 5, 17, 0, 3):
        x, y = np.arange(n, dtype=np.float64), np.zeros(n)
        k(x, y, 2.0)
        assert y.tolist() == [2.0 * v for v in range(n)]


def test_new_arrays_of_two_dimensions_and_a_result(device):
    k = total.on(device)
    for shape in ((2, 3), (4, 1), (3, 5)):
        m = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        assert k(m) == m.sum()


def test_each_call_checks_what_a_first_call_checks(device):
    k = scale.on(device)
    x, y = np.ones(6), np.zeros(6)
    k(x, y, 1.0)
    with pytest.raises(TypeError, match="not C-contiguous"):
        k(x, np.zeros(12)[::2], 1.0)
    frozen = np.zeros(6)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="'y' is read-only"):
        k(x, frozen, 1.0)
    assert not frozen.any()
    y32 = np.zeros(6, np.float32)                   # another dtype: its own signature
    k(np.full(6, 1.5, np.float32), y32, 2.0)
    assert y32.tolist() == [3.0] * 6
    k(x, y, 3.0)
    assert y.tolist() == [3.0] * 6
