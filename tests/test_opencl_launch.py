"""Kernels whose program loops (many launches a call) on PoCL: with the C launcher and
with one pyopencl enqueue per launch, against the same function on numpy arrays."""
import threading

import numpy as np
import pytest

import pygomp as omp
from pygomp.runtime import devices

pytest.importorskip("pyopencl")
from pygomp.plugins.opencl import launch  # noqa: E402


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


@pytest.fixture
def one_group(monkeypatch):
    """Set PYGOMP_OPENCL_ONE_GROUP for kernels loaded from now on; the runs of their
    programs of launches, counted."""
    from pygomp.plugins.opencl import plugin
    runs = []
    real = plugin._Kernel._launches
    monkeypatch.setattr(plugin._Kernel, "_launches",
                        lambda self, *a: runs.append(self.info.name) or real(self, *a))

    def set_mode(mode):
        monkeypatch.setenv("PYGOMP_OPENCL_ONE_GROUP", mode)
        return runs
    return set_mode


def loaded(dev, kernel, *args):
    """The plugin's loaded kernel of ``kernel`` called with ``args``."""
    from pygomp.runtime import mapping
    spec = kernel.spec(args)
    return dev.plugin._kernels[mapping.function_address(dev, spec.symbol.address)]


@pytest.mark.parametrize("mode", ["0", "1"])
def test_one_group_runs_the_same_kernel(dev, one_group, mode):
    """Each way gives numpy's results; "1" runs no program of launches, "0" no other."""
    runs = one_group(mode)
    kernel = omp.target(waves)
    a, b = np.linspace(0.0, 1.0, 37), np.zeros(37)
    for t in (3, 0, 2):
        wa, wb = want(t, a, b)
        kernel.on(dev.number)(t, a, b)
        np.testing.assert_allclose(a, wa, rtol=1e-12)
        np.testing.assert_allclose(b, wb, rtol=1e-12)
    k = loaded(dev, kernel, 2, a, b)
    assert k.info.one_group == len(k.info.entries) - 1 and k.info.program
    assert runs == ([] if mode == "1" else ["waves"] * 3)


def test_one_group_is_chosen_by_timing_both(dev, one_group):
    """auto: the first runs alternate, each timed; then the faster way without timing."""
    from pygomp.plugins.opencl import choice
    runs = one_group("auto")
    kernel = omp.target(rounds)
    a = np.linspace(0.0, 1.0, 31)
    for call in range(2 * choice.TRIES + 3):
        w = a.copy()
        rounds(5, w)
        kernel.on(dev.number)(5, a)
        np.testing.assert_allclose(a, w, rtol=1e-12, err_msg=f"call {call}")
    c = loaded(dev, kernel, 5, a).choice
    assert [len(t) for t in c.times] == [choice.TRIES, choice.TRIES]
    one = min(c.times[1]) < choice.MARGIN * min(c.times[0])
    assert len(runs) == choice.TRIES + (0 if one else 3)


def test_the_choice_is_checked_again_later():
    """A program slowed during the first calls is timed again and chosen once faster."""
    from pygomp.plugins.opencl.choice import MARGIN, TRIES, Choice
    c, ways = Choice("auto"), []
    for call in range(2 * TRIES + 40):
        one, timed = c.next()
        ways.append((one, timed))
        if timed:       # the program takes 3 s in its first runs, then 1 s; one group 2 s
            c.ran(one, 2.0 if one else (3.0 if call < 2 * TRIES else 1.0))
    assert ways[:2 * TRIES] == [(False, True), (True, True)] * TRIES
    after = ways[2 * TRIES:]
    assert 2.0 < MARGIN * 3.0 and all(one for one, _ in after[:7])
    assert after[7] == (False, True)            # the 8th call after: the program, timed
    assert all(w == (False, False) for w in after[8:15]) and after[15] == (True, True)
    assert all(w == (False, False) for w in after[16:31]) and after[31] == (True, True)


def test_one_group_is_not_taken_when_gangs_are_asked_for(dev, one_group):
    runs = one_group("1")
    kernel = omp.target(num_gangs=3)(rounds)
    a = np.linspace(0.0, 1.0, 31)
    w = a.copy()
    rounds(4, w)
    kernel.on(dev.number)(4, a)
    np.testing.assert_allclose(a, w, rtol=1e-12)
    assert runs == ["rounds"]


def test_one_group_setting_is_checked(dev, one_group):
    from pygomp.runtime.plugin import PluginError
    one_group("yes")
    with pytest.raises(PluginError, match="PYGOMP_OPENCL_ONE_GROUP='yes': expected "
                                           "auto, 0 or 1"):
        omp.target(rounds).on(dev.number)(2, np.zeros(4))


def test_kernels_that_need_their_gangs_have_no_variant():
    """A gang loop alone, gang_id() or a return before the end keeps the launches
    only."""
    def gangs(a):
        for s in range(3):
            for g in omp.gang(4):
                for i in omp.worker(a.shape[0]):
                    a[i] += 1.0

    def ids(a):
        for s in range(3):
            for i in omp.parallel_range(a.shape[0]):
                a[i] += omp.gang_id()

    def returns(a):
        for s in range(3):
            if a[0] > 1.0:
                return a[1]
            for i in omp.parallel_range(a.shape[0]):
                a[i] += 1.0
        return a[0]

    for f in (gangs, ids, returns):
        src = omp.target(f).source(np.zeros(4), target="opencl")
        assert "__e1(" in src and "__one(" not in src, f.__name__
    src = omp.target(rounds).source(3, np.zeros(4), target="opencl")
    assert "rounds__i64_f81__small__one(" in src


def relax(u, tmp, tol: float):
    """Jacobi sweeps until they change nothing by tol, then the sum: a while of launches
    with a max reduction, a sum reduction after it, and its result returned."""
    n = u.shape[0]
    err = 1.0
    while err > tol:
        err = 0.0
        for i in omp.parallel_range(1, n - 1, reduction="max:err"):
            tmp[i] = 0.5 * (u[i - 1] + u[i + 1])
            err = max(err, abs(tmp[i] - u[i]))
        for i in omp.parallel_range(1, n - 1):
            u[i] = tmp[i]
    s = 0.0
    for i in omp.parallel_range(n, reduction="+:s"):
        s += u[i]
    return s


@pytest.mark.parametrize("mode", ["0", "1"])
def test_one_group_keeps_reductions_and_the_result(dev, one_group, mode):
    runs = one_group(mode)
    kernel = omp.target(relax)
    u = np.zeros(33)
    u[-1] = 1.0
    w = u.copy()
    want = relax(w, np.zeros(33), 1e-3)
    got = kernel.on(dev.number)(u, np.zeros(33), 1e-3)
    np.testing.assert_allclose(u, w, rtol=1e-12)
    assert got == pytest.approx(want, rel=1e-12)
    assert runs == ([] if mode == "1" else ["relax"])
