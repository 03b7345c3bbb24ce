"""Kernels whose program loops (many launches a call) on PoCL: with the C launcher and
with one pyopencl enqueue per launch, against the same function on numpy arrays."""
import threading

import numpy as np
import pytest

import pygomp as omp
from pygomp.runtime import devices

pytest.importorskip("pyopencl")
from pygomp_plugins.opencl import launch  # noqa: E402


@pytest.fixture(scope="module")
def dev():
    for d in devices.all_devices():
        if d.plugin.name == "opencl":
            d.ensure_init()
            return d
    pytest.skip("no OpenCL device")


def waves(t: int, a, b):
    """A loop of launches in a loop of launches, a while of launches with a break."""
    n = a.shape[0]
    for s in range(t):
        for w in range(1, n):
            for i in omp.parallel_range(w, n):
                a[i] = a[i] * 0.5 + a[w - 1] + s     # a[w - 1]: the launch before
    k = 0
    while k < 100:
        for i in omp.parallel_range(n):
            b[i] += a[i] * k
        if b[0] > 50.0:
            break
        k += 1


@pytest.fixture(params=["launcher", "enqueues"])
def kernel(request, monkeypatch):
    """``waves`` as a new kernel (its plans made afresh), run through the C launcher or
    with it turned off."""
    if request.param == "launcher":
        assert launch.launcher() is not None, "no C compiler for the launcher"
    else:
        monkeypatch.setitem(launch._state, "run", None)
    return omp.target(waves)


def want(t, a, b):
    a, b = a.copy(), b.copy()
    waves(t, a, b)
    return a, b


def test_loops_of_launches_match_numpy(dev, kernel):
    a, b = np.linspace(0.0, 1.0, 37), np.zeros(37)
    wa, wb = want(3, a, b)
    kernel.on(dev.number)(3, a, b)
    np.testing.assert_allclose(a, wa, rtol=1e-12)
    np.testing.assert_allclose(b, wb, rtol=1e-12)
    kernel.on(dev.number)(0, a, b)          # no round of the first loop
    wa, wb = want(0, wa, wb)
    np.testing.assert_allclose(b, wb, rtol=1e-12)


def test_loops_of_launches_after_their_dependences(dev, kernel):
    """nowait calls chained by depend: each program starts after the one before."""
    a, b = np.linspace(0.0, 1.0, 21), np.zeros(21)
    wa, wb = a, b
    with omp.target_data(dev.number, tofrom=[a, b]):
        for t in (1, 2, 1):
            kernel.on(dev.number)(t, a, b, nowait=True, depend={"inout": [a, b]})
            wa, wb = want(t, wa, wb)
        omp.taskwait()
    np.testing.assert_allclose(a, wa, rtol=1e-12)
    np.testing.assert_allclose(b, wb, rtol=1e-12)


def test_threads_run_loops_of_launches_at_once(dev, kernel):
    n = 4
    arrays = [(np.linspace(0.0, 1.0, 19) + i, np.zeros(19)) for i in range(n)]
    wants = [want(2, *ab) for ab in arrays]
    errors = []

    def work(i):
        try:
            kernel.on(dev.number)(2, *arrays[i])
        except Exception as e:          # reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    for (a, b), (wa, wb) in zip(arrays, wants):
        np.testing.assert_allclose(a, wa, rtol=1e-12)
        np.testing.assert_allclose(b, wb, rtol=1e-12)


def test_flattened_programs_keep_their_loops():
    program = (0, ("repeat", 3, (1, ("while", 4, (2,)))), 3)
    assert launch.flatten(program) == [0, -1, 3, 5, 1, -2, 4, 1, 2, 3]
