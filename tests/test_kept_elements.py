"""Elements a loop accumulates into, kept in a local while it runs (compiler/hoist.py):
the same bits as Python when the arrays are apart, and Python's results when the call
passes one memory twice."""
import numpy as np
import pytest

import pygomp as omp


@omp.target
def two_sums(A, x, tmp, y):
    n = A.shape[0]
    for i in range(n):          # sequential: one memory passed twice races in no thread
        tmp[i] = 0.5
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
            y[i] = y[i] * 0.75 + tmp[i]


@omp.target
def bump_far(x, out, k: int, m: int):
    for i in omp.parallel_range(1):
        for j in range(m):
            out[k] += x[j] + i


def _data(n=37, m=29):
    rng = np.random.default_rng(5)
    return rng.random((n, m)), rng.random(m), np.zeros(n), rng.random(n)


def test_accumulated_elements_give_pythons_bits(device):
    A, x, tmp, y = _data()
    want = [a.copy() for a in (A, x, tmp, y)]
    two_sums.py_func(*want)
    two_sums.on(device)(A, x, tmp, y)
    np.testing.assert_array_equal(tmp, want[2])
    np.testing.assert_array_equal(y, want[3])


@pytest.mark.parametrize("same", ["tmp is y", "x is tmp"])
def test_one_memory_passed_twice(device, same):
    A, x, tmp, y = _data(n=29)
    args = [A, x, tmp, tmp] if same == "tmp is y" else [A, x, x, y]
    want = [a.copy() for a in args]
    if same == "tmp is y":
        want[3] = want[2]
    else:
        want[2] = want[1]
    two_sums.py_func(*want)
    two_sums.on(device)(*args)
    for got, w in zip(args, want):
        np.testing.assert_array_equal(got, w)


def test_overlapping_views_on_the_initial_device():
    A, _, _, y = _data(n=29)
    buf = np.arange(32.0) / 7           # x[j] is tmp[j - 3]
    want, want_y = buf.copy(), y.copy()
    two_sums.py_func(A, want[:29], want[3:], want_y)
    two_sums.on(omp.omp_initial_device)(A, buf[:29], buf[3:], y)
    np.testing.assert_array_equal(buf, want)
    np.testing.assert_array_equal(y, want_y)


def test_a_loop_that_never_runs_touches_nothing(device):
    x, out = np.ones(4), np.zeros(3)
    bump_far.on(device)(x, out, 10**12, 0)      # the element is far out of bounds
    assert out.tolist() == [0.0, 0.0, 0.0]
    bump_far.on(device)(x, out, 1, 4)
    assert out.tolist() == [0.0, 4.0, 0.0]
