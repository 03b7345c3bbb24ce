"""nowait and depend: results, order, failures that are never lost, and the device's own
queue instead of Python threads where a device has one."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp
from pygomp import MappingError
from pygomp.runtime import devices, tasks


@omp.target
def add_one(y):
    for i in omp.parallel_range(y.shape[0]):
        y[i] += 1.0


@omp.target
def twice_into(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = 2.0 * x[i]


@omp.target
def total(x):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i]
    return s


@omp.target(map={"x": "present,tofrom"})
def needs_present(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] = -1.0


@pytest.fixture
def no_threads(device, monkeypatch):
    """On a device with a queue, a task never takes a worker thread."""
    if devices.all_devices()[device].plugin.asynchronous:
        def refuse(*args):
            raise AssertionError("a Python thread was used for a task on a queued device")
        monkeypatch.setattr(tasks, "_thread", refuse)


def test_nowait_results_and_values(device, no_threads):
    xs = [np.full(1000, float(k)) for k in range(4)]
    ts = [add_one.on(device)(x, nowait=True) for x in xs]
    s = total.on(device)(np.ones(777), nowait=True)
    for t in ts:
        assert t.wait() is None
    assert s.wait() == 777.0
    for k, x in enumerate(xs):
        assert (x == k + 1).all()
    pygomp.taskwait()


def test_dependences_on_present_data(device, no_threads):
    y = np.zeros(5000)
    with pygomp.target_data(device=device, tofrom=[y]):
        for _ in range(6):
            add_one.on(device)(y, nowait=True, depend={"inout": [y]})
        pygomp.taskwait()
        assert not y.any() or devices.all_devices()[device].is_initial
    assert (y == 6).all()


def test_dependences_between_mapped_arrays(device):
    x, y = np.zeros(3000), np.zeros(3000)
    add_one.on(device)(x, nowait=True, depend={"out": [x]})
    twice_into.on(device)(x, y, nowait=True, depend={"in": [x], "out": [y]})
    t = add_one.on(device)(y, nowait=True, depend={"inout": [y]})
    t.wait()
    assert (x == 1).all() and (y == 3).all()
    pygomp.taskwait()


def test_failures_are_raised_and_dependents_do_not_run(device):
    dev = devices.all_devices()[device]
    if dev.is_initial:
        pytest.skip("the initial device maps nothing: present cannot fail")
    x, y = np.zeros(100), np.zeros(100)
    bad = needs_present.on(device)(x, nowait=True, depend={"out": [x]})
    after = twice_into.on(device)(x, y, nowait=True, depend={"in": [x], "out": [y]})
    fine = add_one.on(device)(np.zeros(10), nowait=True)
    with pytest.raises(MappingError, match="is not present") as first:
        bad.wait()
    with pytest.raises(pygomp.DependencyFailed) as second:
        after.wait()
    assert str(second.value) == ("this task did not run: a task it depends on failed "
                                 f"(MappingError: {str(first.value).splitlines()[0]})")
    assert second.value.__cause__ is first.value
    assert not y.any() and not x.any()           # the dependent kernel never ran
    fine.wait()
    with pytest.raises(MappingError, match="is not present") as info:
        pygomp.taskwait()
    assert info.value is first.value
    assert any(re.fullmatch(r"pygomp: 2 of 3 deferred tasks failed; this is the first failure",
                            n) for n in info.value.__notes__)
    pygomp.taskwait()                            # reported once: nothing is pending now


def test_a_kernel_compiles_outside_the_tasks_lock(device, monkeypatch):
    """Other threads may submit tasks while a nowait call's kernel is being built."""
    dev = devices.all_devices()[device]
    seen = []
    real = type(dev.plugin).compile

    def compile(self, *args):
        free = tasks._lock.acquire(timeout=5)   # another thread could submit a task now
        if free:
            tasks._lock.release()
        seen.append(free)
        return real(self, *args)
    monkeypatch.setattr(type(dev.plugin), "compile", compile)

    @omp.target
    def fresh(y):               # a new kernel: its first call compiles it
        for i in omp.parallel_range(y.shape[0]):
            y[i] += 3.0
    y = np.zeros(10)
    fresh.on(device)(y, nowait=True, depend={"inout": [y]}).wait()
    assert (y == 3).all() and seen == [True]


EXIT = """
import numpy as np, pygomp, pygomp.kernels as omp

@omp.target(map={"x": "present,tofrom"})
def needs_present(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] = -1.0

@omp.target
def add_one(y):
    for i in omp.parallel_range(y.shape[0]):
        y[i] += 1.0

x = np.zeros(10)
needs_present.on(0)(x, nowait=True, depend={"out": [x]})
try:
    pygomp.taskwait()
except pygomp.MappingError:
    print("caught")
add_one.on(0)(x, nowait=True, depend={"inout": [x]})   # never waited for
"""


def test_the_exit_message_of_a_dependent_never_waited_for_names_the_first_error(tmp_path):
    (tmp_path / "prog.py").write_text(EXIT)
    r = subprocess.run([sys.executable, str(tmp_path / "prog.py")], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYGOMP_DEVICES="host"))
    assert r.returncode == 0 and r.stdout == "caught\n", r.stderr
    assert r.stderr.startswith(
        "pygomp: 1 deferred task(s) never waited for failed (1 did not run: a task they "
        "depend on failed); the first error: MappingError: "), r.stderr
    assert "is not present" in r.stderr.splitlines()[0]
