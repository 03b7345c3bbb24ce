"""Calls with new arrays of a signature already called (they run as repeated calls, the
arrays' addresses and extents as words; an offload device looks them up at each call):
results, map kinds, and the checks a first call makes, at every call."""
import math

import numpy as np
import pytest

import pygomp as omp
from pygomp.runtime import devices


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


@omp.target(map={"x": "to", "y": "from"})
def copy_twice(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = 2.0 * x[i]
        x[i] = -1.0                     # mapped "to": not copied back


def _mapped(dev):
    """The entries of ``dev``'s map that hold user data (not functions or variables)."""
    return [e for e in devices.resolve(dev).map if e.refcount != math.inf]


def test_new_arrays_on_an_offload_device_keep_map_kinds_and_leave_nothing(offload_device):
    k = copy_twice.on(offload_device)
    for n in (8, 8, 9, 8):
        x, y = np.arange(n, dtype=np.float64), np.full(n, 7.0)
        k(x, y)
        assert y.tolist() == [2.0 * v for v in range(n)]
        assert x.tolist() == list(range(n))
    assert _mapped(offload_device) == []


def test_new_arrays_present_in_a_data_region(offload_device):
    k = scale.on(offload_device)
    x, y = np.ones(10), np.zeros(10)
    k(np.ones(3), np.zeros(3), 1.0)                 # the call that new arrays repeat
    with omp.target_data(offload_device, to=[x], tofrom=[y]):
        k(x, y, 4.0)                                # present: no copy until the end
        y2 = np.zeros(10)
        k(x, y2, 3.0)                               # x present, y2 made for the call
        assert y2.tolist() == [3.0] * 10 and not y.any()
    assert y.tolist() == [4.0] * 10
    assert _mapped(offload_device) == []


def test_new_arrays_partly_present_raise_as_a_first_call(offload_device):
    k = scale.on(offload_device)
    x, y = np.ones(8), np.zeros(8)
    k(x, y, 1.0)
    big = np.zeros(16)
    with omp.target_data(offload_device, tofrom=[big[:8]]):
        with pytest.raises(omp.MappingError, match=r"argument 'y'.*\[0x"):
            k(np.ones(16), big, 1.0)                # extends the mapped section
    assert _mapped(offload_device) == []
    x, y = np.ones(20000), np.zeros(20000)          # above the size made per call
    k(x, y, 5.0)
    assert (y == 5.0).all() and _mapped(offload_device) == []
