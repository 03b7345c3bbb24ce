"""A finished kernel call or task keeps no user array alive: once the user lets go of an
array (``del`` and ``gc.collect()``), a weak reference to it is dead, on every device."""
import gc
import weakref

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp
from pygomp.runtime import accqueues, devices


@omp.target
def add_one(y):
    for i in omp.parallel_range(y.shape[0]):
        y[i] += 1.0


@omp.target
def total(x):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i]
    return s


def _gone(ref):
    gc.collect()
    return ref() is None


@pytest.fixture
def default_device(device):
    old = pygomp.omp_get_default_device()
    pygomp.omp_set_default_device(device)
    yield device
    pygomp.omp_set_default_device(old)


def test_plain_calls(default_device):
    y, x = np.zeros(64), np.ones(64)
    for _ in range(3):                  # the second call on takes the repeated-call path
        add_one(y)
        assert total(x) == 64.0
    assert (y == 3).all()
    ys, xs = weakref.ref(y), weakref.ref(x)
    del y, x
    assert _gone(ys) and _gone(xs)


def test_calls_on_a_device(device):
    y, x = np.zeros(64), np.ones(64)
    for _ in range(3):
        add_one.on(device)(y)
        assert total.on(device)(x) == 64.0
    assert (y == 3).all()
    ys, xs = weakref.ref(y), weakref.ref(x)
    del y, x
    assert _gone(ys) and _gone(xs)


def test_nowait_tasks(device):
    y, x = np.zeros(64), np.ones(64)
    tasks = []
    for _ in range(3):
        tasks += [add_one.on(device)(y, nowait=True), total.on(device)(x, nowait=True)]
        for t in tasks[-2:]:
            t.wait()
    assert (y == 3).all() and tasks[-1].wait() == 64.0
    ys, xs = weakref.ref(y), weakref.ref(x)
    del y, x
    assert _gone(ys) and _gone(xs)      # the finished tasks are still held here
    pygomp.taskwait()


def test_depend_tasks(device):
    y, x = np.zeros(64), np.ones(64)
    tasks = []
    for _ in range(3):
        tasks.append(add_one.on(device)(y, nowait=True, depend={"inout": [y]}))
        tasks.append(total.on(device)(x, nowait=True, depend={"in": [x]}))
        add_one.on(device)(y, depend={"inout": [y]})        # waits: no task to hold
    pygomp.taskwait()
    assert (y == 6).all() and tasks[-1].wait() == 64.0
    ys, xs = weakref.ref(y), weakref.ref(x)
    del y, x
    assert _gone(ys) and _gone(xs)


def test_nowait_kernel(device):
    @omp.target(nowait=True, depend=None)
    def bump(y):
        for i in omp.parallel_range(y.shape[0]):
            y[i] += 2.0
    y = np.zeros(16)
    t = bump.on(device)(y)
    t.wait()
    bump.on(device)(y).wait()
    assert (y == 4).all()
    ys = weakref.ref(y)
    del y
    assert _gone(ys)


def test_calls_inside_target_data(device):
    y = np.zeros(64)
    with pygomp.target_data(device=device, tofrom=[y]):
        for _ in range(3):                  # the repeated-call path finds y's entry
            add_one.on(device)(y)
    assert (y == 3).all()
    ys = weakref.ref(y)
    del y
    assert _gone(ys)


def test_tasks_inside_target_data(device):
    y, x = np.zeros(64), np.ones(64)
    with pygomp.target_data(device=device, tofrom=[y], to=[x]):
        t = add_one.on(device)(y, nowait=True)
        t.wait()
        add_one.on(device)(y, nowait=True, depend={"inout": [y]})
        s = total.on(device)(x, nowait=True, depend={"in": [x]})
        pygomp.taskwait()
        assert s.wait() == 64.0
    assert (y == 2).all()
    ys, xs = weakref.ref(y), weakref.ref(x)
    del y, x
    assert _gone(ys) and _gone(xs)


def test_enter_and_exit_data(device):
    y = np.zeros(64)
    pygomp.target_enter_data(device=device, to=[y])
    for _ in range(2):
        add_one.on(device)(y)
    pygomp.target_exit_data(device=device, from_=[y])
    assert (y == 2).all()
    ys = weakref.ref(y)
    del y
    assert _gone(ys)


def test_a_new_array_at_a_freed_address_is_mapped_anew(device):
    """The repeated-call path must not take a new array for the old one it replaced."""
    for k in range(4):
        y = np.full(64, float(k))
        add_one.on(device)(y)
        add_one.on(device)(y)
        assert (y == k + 2).all()
        del y


def test_openacc_async_copyout_keeps_its_array_until_done(device):
    """A queued copy-back still holds its array after the entry is gone from the map;
    once the queue has done it, nothing does."""
    import threading
    from pygomp import openacc as acc
    d = devices.all_devices()[device]
    if d.is_initial:
        acc.set_device_type(acc.device_host)
    else:
        acc.set_device_num(device, acc.device_not_host)
    try:
        go = threading.Event()
        accqueues.enqueue(d, 1, go.wait)          # queue 1 waits until the array is dropped
        a = np.arange(64.0)
        acc.copyin(a, async_=1)
        acc.copyout(a, async_=1)
        ref = weakref.ref(a)
        del a
        gc.collect()
        assert (ref() is not None) != d.is_initial     # its copies are still queued
        go.set()
        acc.wait(1)
        assert _gone(ref)
    finally:
        go.set()
        acc.wait()
        acc.set_device_num(0, acc.device_default)
