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


def rounds(m: int, a):
    """A loop of launches of one launch a round (an odd number, done as two copies):
    ``x``, carried from round to round, and a[w - 1], stored by the launch before."""
    n = a.shape[0]
    x = 0.0
    for w in range(1, m + 1):
        x = x * 0.5 + w
        for i in omp.parallel_range(w, n):
            a[i] = a[i] * 0.5 + a[w - 1] + x


@pytest.mark.parametrize("how", ["launcher", "enqueues"])
def test_odd_rounds_take_no_empty_launch(dev, monkeypatch, how):
    if how == "enqueues":
        monkeypatch.setitem(launch._state, "run", None)
    kernel = omp.target(rounds)
    for m in (0, 1, 2, 3, 6, 7, 30):
        a = np.linspace(0.0, 1.0, 31)
        w = a.copy()
        rounds(m, w)
        kernel.on(dev.number)(m, a)
        np.testing.assert_allclose(a, w, rtol=1e-12, err_msg=f"m={m}")
    infos = [k.info for k in dev.plugin._kernels.values() if k.info.name == "rounds"]
    assert infos
    for info in infos:          # a round's two copies, each a gang loop
        (_, _, body), = [op for op in info.program if not isinstance(op, int)]
        assert len(body) == 2 and all("g" in info.levels[k] for k in body)
