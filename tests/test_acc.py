"""pygomp.openacc: OpenACC's data routines and data region on numpy arrays, on every device.

On an offload device memory is separate: the tests read the device copy back through
acc.deviceptr + omp_target_memcpy and see stale values where nothing was copied.  On the
initial device (OpenACC's host) memory is shared: the data routines change nothing and
every array is present.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pygomp as omp
from pygomp import openacc as acc
from pygomp.runtime import accqueues, devices, mapping


@omp.target(map={"x": "to", "y": "tofrom"})
def axpy_gwv(x, y):
    for g in omp.gang(x.shape[0] // 64):
        for w in omp.worker(8):
            for v in omp.vector(8):
                i = g * 64 + w * 8 + v
                y[i] += 2.0 * x[i]


@pytest.fixture
def dev(device):
    """pygomp device ``device`` as this thread's OpenACC device."""
    d = devices.all_devices()[device]
    if d.is_initial:
        acc.set_device_type(acc.device_host)
    else:
        acc.set_device_num(device, acc.device_not_host)
    assert acc.get_device_type() == acc.type_of(d)
    yield d
    acc.wait()
    acc.set_device_num(0, acc.device_default)
    assert [e for e in d.map if e.refcount != mapping.INFINITY] == [], "left mapped"


def on_device(dev, a):
    """What the current device holds for ``a``."""
    out = np.empty_like(a)
    initial = devices.num_devices()
    assert omp.omp_target_memcpy(out, acc.deviceptr(a), a.nbytes, 0, 0, initial,
                                 dev.number) == 0
    return out


def test_copyin_copyout_and_stale_values(dev):
    a = np.arange(8.0)
    p = acc.copyin(a)
    assert acc.is_present(a) and p == acc.deviceptr(a)
    a[:] = -1                                   # the host copy only
    if dev.is_initial:
        assert p == a.ctypes.data and (on_device(dev, a) == -1).all()
        acc.copyout(a)
        assert acc.is_present(a)                # the host: everything is present
        return
    assert p != a.ctypes.data
    np.testing.assert_array_equal(on_device(dev, a), np.arange(8.0))    # stale
    acc.update_device(a[2:4])                   # a view: inside the mapped block
    np.testing.assert_array_equal(on_device(dev, a), [0, 1, -1, -1, 4, 5, 6, 7])
    a[:] = 9
    acc.copyout(a)                              # the last reference: copied back
    np.testing.assert_array_equal(a, [0, 1, -1, -1, 4, 5, 6, 7])
    assert not acc.is_present(a) and acc.deviceptr(a) == 0


def test_dynamic_reference_counts(dev):
    if dev.is_initial:
        pytest.skip("the host keeps no reference counts")
    a = np.zeros(16, np.int32)
    acc.create(a)
    acc.copyin(a)                               # present: a second reference, no copy
    a[:] = 5
    acc.copyout(a)                              # 2 -> 1: nothing copied
    assert acc.is_present(a) and (a == 5).all()
    acc.copyin(a)
    acc.copyin(a)
    acc.delete(a, finalize=True)                # every dynamic reference at once
    assert not acc.is_present(a) and (a == 5).all()
    acc.copyin(a)
    acc.copyin(a)
    a[:] = 0
    acc.copyout(a, finalize=True)
    assert not acc.is_present(a) and (a == 5).all()
    acc.copyout(a)                              # absent: nothing, no error
    acc.delete(a, finalize=True)


def test_data_region_clauses(dev):
    a, b, c, d = (np.full(4, float(i)) for i in range(4))
    with acc.data(copy=a, copyin=[b], copyout=[c], create=[d]):
        assert all(acc.is_present(x) for x in (a, b, c, d))
        if not dev.is_initial:
            np.testing.assert_array_equal(on_device(dev, a), 0)
            np.testing.assert_array_equal(on_device(dev, b), 1)
            for x in (a, b, c, d):              # what a compute region would write
                omp.omp_target_memcpy(acc.deviceptr(x), np.full(4, 7.0), 32, 0, 0,
                                      dev.number, devices.num_devices())
    if dev.is_initial:
        assert [x[0] for x in (a, b, c, d)] == [0, 1, 2, 3]
        return
    assert [x[0] for x in (a, b, c, d)] == [7, 1, 7, 3]     # copy and copyout came back
    assert not any(acc.is_present(x) for x in (a, b, c, d))


def test_present_and_no_create(dev):
    a, b = np.zeros(10), np.ones(3)
    if not dev.is_initial:
        with pytest.raises(mapping.MappingError, match=re.escape(
                f"present clause: !acc_is_present ({a.ctypes.data:#x}, 80 (0x50))")):
            with acc.data(present=[a], copyin=[b]):
                pass
        assert not acc.is_present(b)            # nothing stays half mapped
    acc.copyin(a)
    with acc.data(present=a, no_create=[b]):    # absent no_create: nothing is mapped
        assert acc.is_present(a)
        assert acc.is_present(b) == dev.is_initial
    acc.delete(a)
    with pytest.raises(TypeError, match="unknown clause"):
        with acc.data(copy_in=[a]):
            pass


def test_structured_and_dynamic_references(dev):
    """A data region's reference and acc_copyin's are counted apart: copyout takes
    only a dynamic one (unlike OpenMP's exit data, which takes any)."""
    if dev.is_initial:
        pytest.skip("the host keeps no reference counts")
    a = np.zeros(4)
    with acc.data(copy=[a]):
        acc.copyin(a)
        acc.copyout(a)                          # the dynamic reference goes
        acc.copyout(a)                          # none left: nothing happens
        assert acc.is_present(a) and (a == 0).all()
        omp.omp_target_memcpy(acc.deviceptr(a), np.full(4, 3.0), 32, 0, 0, dev.number,
                              devices.num_devices())
    np.testing.assert_array_equal(a, 3)         # the region's end copied back
    acc.copyin(a)
    with acc.data(copy=[a]):
        a[:] = 8
    assert acc.is_present(a) and (a == 8).all()   # the dynamic reference holds it
    acc.copyout(a)
    np.testing.assert_array_equal(a, 3)
    b = np.zeros(4)                             # OpenMP on the same map: one count
    with omp.target_data(dev.number, tofrom=[b]):
        omp.target_exit_data(dev.number, from_=[b])
        assert not acc.is_present(b)


def test_errors_as_libgomp_words_them(dev):
    if dev.is_initial:
        pytest.skip("the host maps nothing")
    a = np.arange(8.0)
    h = a.ctypes.data
    with pytest.raises(mapping.MappingError, match=re.escape(f"[{h:#x},64] is not mapped")):
        acc.update_self(a)
    acc.copyin(a[:4])
    with pytest.raises(mapping.MappingError, match=re.escape(
            f"[{h:#x},+64] outside mapped block [{h:#x},+32]")):
        acc.copyout(a)
    with pytest.raises(mapping.MappingError, match=re.escape(f"[{h:#x},+64] not mapped")):
        acc.copyin(a)
    with pytest.raises(mapping.MappingError, match=r"\[0x0,\+8\] is a bad range"):
        acc.enter(0, 8, 0)
    assert acc.is_present(a[:4]) and not acc.is_present(a)
    acc.delete(a[:4])


def test_kernel_finds_entered_data_present(dev):
    """acc.copyin maps x on the device; a kernel with gang, worker and vector loops then
    uses the device copy (stale where the host changed x) and copies nothing in."""
    x, y = np.ones(512), np.zeros(512)
    acc.copyin(x)
    x[:] = 5
    axpy_gwv.on(dev.number)(x, y)
    np.testing.assert_array_equal(y, 10.0 if dev.is_initial else 2.0)
    with acc.data(copy=[y]):
        axpy_gwv.on(dev.number)(x, y)
        assert (y == (20.0 if dev.is_initial else 2.0)).all()     # on a device: not yet back
    np.testing.assert_array_equal(y, 20.0 if dev.is_initial else 4.0)
    acc.delete(x)


def test_repeated_kernel_calls_follow_acc_counts(dev):
    """The same bound kernel called again (its prepared call) finds data entered with
    acc.copyin present and copies nothing; after acc.delete(finalize=True) the next call
    maps afresh, and after a new acc.copyin it uses the new device copy, not the old
    address (whose memory another array now holds)."""
    separate = not dev.is_initial
    x, y = np.ones(512), np.zeros(512)
    k = axpy_gwv.on(dev.number)
    acc.copyin(x)
    acc.copyin(x)                               # two dynamic references
    acc.copyin(y)
    x[:], y[:] = 5, -1                          # the host copies only
    for _ in range(3):
        k(x, y)
    assert k.repeats[0].call.words is not None      # the prepared path ran
    if separate:
        assert (y == -1).all()                  # present: nothing copied back
        np.testing.assert_array_equal(on_device(dev, y), 6.0)      # x's device copy: 1
    acc.delete(x)                               # one reference left: still present
    k(x, y)
    acc.delete(x, finalize=True)
    assert acc.is_present(x) != separate
    k(x, y)                                     # absent: mapped, copied in, unmapped
    assert acc.is_present(x) != separate
    w = np.full(512, 100.0)
    acc.copyin(w)                               # may take x's old device memory
    x[:] = 3
    acc.copyin(x)
    k(x, y)
    acc.copyout(x, finalize=True)
    acc.copyout(y)
    acc.delete(w)
    np.testing.assert_array_equal(y, 2 * (4 * 1 + 5 + 3) if separate else -1 + 2 * 5 * 5 + 6)
    np.testing.assert_array_equal(x, 3)


def test_async_queues_keep_order(dev):
    a = np.arange(1000.0)
    p = acc.copyin(a, async_=3)
    assert p == acc.deviceptr(a) and acc.is_present(a)     # mapped at once
    for _ in range(5):
        acc.update_self(a, async_=3)            # after the copyin, in order
    acc.wait(3)
    assert acc.async_test(3) and acc.async_test_all() and acc.is_present(a)
    a[:] = 1
    acc.update_device(a, async_=1)
    acc.wait_async(1, 2)                        # queue 2's later work comes after queue 1's
    acc.copyout(a, async_=2)
    acc.wait()
    np.testing.assert_array_equal(a, 1)
    assert not acc.is_present(a) or dev.is_initial
    with pytest.raises(mapping.MappingError, match="invalid async-argument: -7"):
        acc.wait(-7)


def test_errors_of_async_operations(dev):
    """The map changes at the call, so its errors come at once (as in libgomp); an
    error of a queue's work comes from `wait`, and stops the queue's later work."""
    if dev.is_initial:
        pytest.skip("the host maps nothing")
    a = np.zeros(3)
    with pytest.raises(mapping.MappingError, match="is not mapped"):
        acc.update_device(a, async_=4)
    done = []

    def fails():
        raise RuntimeError("the device failed")

    accqueues.enqueue(dev, 4, fails)
    accqueues.enqueue(dev, 4, lambda: done.append(1))
    with pytest.raises(RuntimeError, match="the device failed"):
        acc.wait(4)
    assert done == []
    acc.wait(4)                                 # raised once


def test_device_types_and_numbers():
    devs = devices.all_devices()
    n = len(devs) - 1
    assert acc.get_num_devices(acc.device_not_host) == n
    assert acc.get_num_devices(acc.device_host) == 1
    assert acc.get_num_devices(acc.device_none) == 0
    assert acc.get_num_devices(acc.device_radeon) == 0
    hosts = [d for d in devs[:-1] if d.plugin.name == "host"]
    assert acc.get_num_devices(acc.device_host_nonshm) == len(hosts)
    for i, d in enumerate(devs[:-1]):
        acc.set_device_num(i, acc.device_not_host)
        assert acc.current() is d and acc.get_device_num(acc.device_not_host) == i
        assert acc.get_device_num(acc.type_of(d)) == [x for x in devs[:-1]
                                                     if acc.type_of(x) == acc.type_of(d)
                                                     ].index(d)
    with pytest.raises(mapping.MappingError, match=f"device {n} out of range"):
        acc.set_device_num(n, acc.device_not_host)
    with pytest.raises(mapping.MappingError, match="unknown device type 77"):
        acc.get_num_devices(77)
    assert acc.get_device_num(acc.device_not_host) == n - 1    # the failure changed nothing
    acc.set_device_num(0, acc.device_not_host)
    acc.set_device_type(acc.device_host)
    assert acc.current() is devs[-1] and acc.get_device_type() == acc.device_host
    assert acc.on_device(acc.device_host) and not acc.on_device(acc.device_not_host)
    acc.set_device_num(0, acc.device_default)


def test_device_properties():
    """acc_get_property(_string): the initial device answers as libgomp's host does; an
    offload device with its plugin's name and memory."""
    get = acc.get_property
    assert [get(0, acc.device_host, p) for p in (acc.property_memory, acc.property_vendor,
                                                 acc.property_name, acc.property_driver)
            ] == [0, "GNU", "GOMP", "1.0"]
    for i, d in enumerate(devices.all_devices()[:-1]):
        assert get(i, acc.device_not_host, acc.property_memory) == d.info.memory
        assert get(i, acc.device_not_host, acc.property_free_memory) == 0
        assert get(i, acc.device_not_host, acc.property_name) == \
            f"{d.info.name} ({d.plugin.name} plugin)"
        assert get(i, acc.device_not_host, acc.property_driver) == f"pygomp {omp.__version__}"
        assert get(i, acc.device_not_host, 16058) is None
    n = acc.get_num_devices(acc.device_not_host)
    with pytest.raises(mapping.MappingError, match=f"device {n} out of range"):
        get(n, acc.device_not_host, acc.property_name)


def _python(code, **environ):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ACC_", "PYGOMP_DEV"))}
    e.update(environ)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=e, timeout=120)


def test_acc_device_type_and_num_from_the_environment():
    code = ("from pygomp import openacc as acc; d = acc.current(); "
            "print(d.number, d.plugin.name if not d.is_initial else 'initial', "
            "acc.get_device_type(), acc.get_device_num(acc.get_device_type()))")
    r = _python(code, PYGOMP_DEVICES="host", ACC_DEVICE_TYPE="host")
    assert r.stdout.split() == ["1", "initial", "2", "0"], r.stderr
    r = _python(code, PYGOMP_DEVICES="host", ACC_DEVICE_TYPE="HOST_NONSHM")
    assert r.stdout.split() == ["0", "host", "2", "0"], r.stderr
    r = _python(code, PYGOMP_DEVICES="host", ACC_DEVICE_TYPE="nvidia")
    assert r.returncode != 0 and "device type nvidia not supported" in r.stderr
    r = _python(code, PYGOMP_DEVICES="host", ACC_DEVICE_NUM="1")
    assert r.returncode != 0 and "device 1 out of range" in r.stderr
    r = _python(code, PYGOMP_DEVICES="host", ACC_DEVICE_NUM="x")
    assert r.returncode != 0 and "invalid value for environment variable ACC_DEVICE_NUM" \
        in r.stderr
    if not any(d.plugin.name == "opencl" for d in devices.all_devices()):
        return
    r = _python(code, PYGOMP_DEVICES="host,opencl", ACC_DEVICE_NUM="1")   # not_host's 1
    assert r.stdout.split() == ["1", "opencl", "16", "0"], r.stderr
    r = _python(code, PYGOMP_DEVICES="host,opencl", ACC_DEVICE_TYPE="opencl")
    assert r.stdout.split() == ["1", "opencl", "16", "0"], r.stderr
