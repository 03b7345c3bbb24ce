"""The OpenMP device routines, as a C programmer would use them, on a device list of the
host plugin's device (0), a PoCL device (1, when PoCL is there) and the initial device."""
import errno
import threading

import numpy as np
import pytest

import pygomp
from pygomp import (OffloadError, omp_get_default_device, omp_get_device_num,
                    omp_get_initial_device, omp_get_mapped_ptr, omp_get_num_devices,
                    omp_initial_device, omp_is_initial_device, omp_set_default_device,
                    omp_target_alloc, omp_target_associate_ptr, omp_target_disassociate_ptr,
                    omp_target_free, omp_target_is_accessible, omp_target_is_present,
                    omp_target_memcpy, omp_target_memcpy_rect, target_data,
                    target_enter_data, target_exit_data, target_update)

from runtime_helpers import (CountingHostPlugin, addr, fresh_device, installed_devices,
                             settings, user_entries)

HOSTDEV, CL, INITIAL = 0, 1, 2


@pytest.fixture(scope="module")
def pocl():
    """A PoCL device of a plugin instance of our own, or a skip saying why not."""
    try:
        from pygomp.plugins.opencl.plugin import OpenCLPlugin
        p = OpenCLPlugin()
        found = p.select("pocl")
    except Exception as e:                  # noqa: BLE001
        pytest.skip(f"the OpenCL plugin cannot be used here: {type(e).__name__}: {e}")
    if not found:
        pytest.skip("no PoCL device (pip install pyopencl[pocl])")
    return p, found[0]


@pytest.fixture
def plugin():
    return CountingHostPlugin()


def _devices(plugin, pocl, environ):
    from pygomp.runtime.devices import Device
    p, local = pocl
    cl = Device(CL, p, local, p.devices()[local])
    return [fresh_device(HOSTDEV, plugin), cl, fresh_device(INITIAL, plugin, is_initial=True)]


@pytest.fixture
def devs(plugin, pocl, request):
    environ = getattr(request, "param", {})
    ds = _devices(plugin, pocl, environ)
    with installed_devices(ds, settings(**environ)):
        yield ds
        for d in ds:
            d.finalize()
    assert plugin.live == {}, "leaked host-device memory"


# -- devices and numbers --------------------------------------------------------------

def test_device_numbers(devs):
    assert omp_get_num_devices() == 2
    assert omp_get_initial_device() == INITIAL
    assert omp_get_device_num() == INITIAL          # Python code runs on the host
    assert omp_is_initial_device() == 1
    assert pygomp.omp_initial_device == -1 and pygomp.omp_invalid_device == -4


def test_default_device_get_set(devs):
    assert omp_get_default_device() == 0
    omp_set_default_device(CL)
    assert omp_get_default_device() == CL
    seen = []
    t = threading.Thread(target=lambda: seen.append(omp_get_default_device()))
    t.start()
    t.join()
    assert seen == [0]                              # an ICV of this thread only
    a = np.arange(4.0)
    target_enter_data(to=a)                         # device=None: the default, PoCL
    assert omp_target_is_present(a, CL) and not omp_target_is_present(a, HOSTDEV)
    target_exit_data(from_=a)
    omp_set_default_device(INITIAL)
    target_enter_data(to=a)                         # the initial device maps nothing
    assert not user_entries(devs[0]) and not user_entries(devs[1])
    omp_set_default_device(HOSTDEV)
    with target_data(tofrom=a):
        assert omp_target_is_present(a, HOSTDEV)
    assert not omp_target_is_present(a, HOSTDEV)


@pytest.mark.parametrize("devs", [{"OMP_DEFAULT_DEVICE": "1"}], indirect=True)
def test_default_device_from_environment(devs):
    assert omp_get_default_device() == 1
    a = np.zeros(2)
    with target_data(to=a):
        assert omp_target_is_present(a, CL)


def test_invalid_device_numbers(devs):
    for n in (3, -3, 17):
        with pytest.raises(OffloadError, match=rf"^invalid device number {n}: offload "
                                               rf"devices are 0\.\.1 and the initial device is 2$"):
            omp_target_alloc(8, n)
    p = omp_target_alloc(8, omp_initial_device)    # -1: the initial device
    assert p
    omp_target_free(p, omp_initial_device)


# -- allocation and copies ------------------------------------------------------------

def test_target_alloc_free(devs, plugin):
    p = omp_target_alloc(1000, HOSTDEV)
    assert p and plugin.live == {p: 1000}
    omp_target_free(p, HOSTDEV)
    assert plugin.live == {}
    omp_target_free(None, HOSTDEV)                  # NULL: nothing
    omp_target_free(0, CL)
    q = omp_target_alloc(64, CL)
    assert q
    omp_target_free(q, CL)


@pytest.mark.parametrize("dev", [HOSTDEV, CL, INITIAL])
def test_target_alloc_beyond_the_device_is_null(devs, plugin, dev):
    # C's value (NULL), not an exception, as for every other failure of the routine
    assert omp_target_alloc(1 << 50, dev) == 0
    assert omp_target_alloc(-1, dev) == 0
    assert plugin.live == {}


def test_routines_take_array_likes(devs):
    import array
    import ctypes
    src = array.array("i", range(10))
    out = bytearray(40)
    p = omp_target_alloc(40, CL)
    try:
        assert omp_target_memcpy(p, src, 40, 0, 0, CL, INITIAL) == 0
        assert omp_target_memcpy(memoryview(out), p, 40, 0, 0, INITIAL, CL) == 0
        assert np.frombuffer(out, np.int32).tolist() == list(range(10))
        c = (ctypes.c_int32 * 10)()
        assert omp_target_memcpy(c, p, 20, 4, 0, INITIAL, CL) == 0
        assert list(c) == [0] + list(range(5)) + [0] * 4
    finally:
        omp_target_free(p, CL)
    with target_data(HOSTDEV, tofrom=[src]):
        assert omp_target_is_present(src, HOSTDEV) and omp_get_mapped_ptr(src, HOSTDEV)
    with pytest.raises(TypeError, match="expected an array .*, an int address or None, "
                                        "not str"):
        omp_target_is_present("abc", HOSTDEV)


@pytest.mark.parametrize("dev", [HOSTDEV, CL])
def test_memcpy_host_device_host(devs, dev):
    src = np.arange(100, dtype=np.int32)
    out = np.zeros(100, dtype=np.int32)
    p = omp_target_alloc(400, dev)
    try:
        assert omp_target_memcpy(p, src, 400, 0, 0, dev, INITIAL) == 0
        assert omp_target_memcpy(out, p, 400, 0, 0, INITIAL, dev) == 0
        np.testing.assert_array_equal(out, src)
        # offsets in bytes on both sides
        assert omp_target_memcpy(p, src, 40, 200, 0, dev, INITIAL) == 0     # src[0:10] -> [50:60]
        assert omp_target_memcpy(out, p, 80, 80, 180, INITIAL, dev) == 0   # [45:65] -> out[20:40]
        np.testing.assert_array_equal(out[20:40], np.r_[45:50, 0:10, 60:65])
        np.testing.assert_array_equal(out[:20], src[:20])
        # device to device on the same device
        q = omp_target_alloc(400, dev)
        assert omp_target_memcpy(q, p, 400, 0, 0, dev, dev) == 0
        out[:] = 0
        assert omp_target_memcpy(out, q, 400, 0, 0, INITIAL, dev) == 0
        np.testing.assert_array_equal(out[50:60], np.arange(10))
        omp_target_free(q, dev)
        assert omp_target_memcpy(None, src, 4, 0, 0, INITIAL, INITIAL) == errno.EINVAL
        assert omp_target_memcpy(out, 0, 4, 0, 0, INITIAL, dev) == errno.EINVAL
    finally:
        omp_target_free(p, dev)


def test_memcpy_across_devices(devs):
    src = np.linspace(-1, 1, 257)
    h = omp_target_alloc(src.nbytes, HOSTDEV)
    c = omp_target_alloc(src.nbytes, CL)
    out = np.zeros_like(src)
    try:
        assert omp_target_memcpy(h, src, src.nbytes, 0, 0, HOSTDEV, INITIAL) == 0
        assert omp_target_memcpy(c, h, src.nbytes, 0, 0, CL, HOSTDEV) == 0      # host plugin -> PoCL
        assert omp_target_memcpy(h, np.zeros_like(src), src.nbytes, 0, 0, HOSTDEV, INITIAL) == 0
        assert omp_target_memcpy(h, c, 800, 8, 0, HOSTDEV, CL) == 0             # PoCL -> host plugin
        assert omp_target_memcpy(out, h, src.nbytes, 0, 0, INITIAL, HOSTDEV) == 0
        np.testing.assert_array_equal(out[1:101], src[:100])
        assert (out[0] == 0) and (out[101:] == 0).all()
        out[:] = 0
        assert omp_target_memcpy(out, c, src.nbytes, 0, 0, INITIAL, CL) == 0
        np.testing.assert_array_equal(out, src)
    finally:
        omp_target_free(h, HOSTDEV)
        omp_target_free(c, CL)


def test_memcpy_rect_2d(devs):
    src = np.arange(6 * 7, dtype=np.float64).reshape(6, 7)
    p = omp_target_alloc(4 * 5 * 8, HOSTDEV)
    dev_view = np.full((4, 5), -1.0)
    try:
        assert omp_target_memcpy(p, dev_view, dev_view.nbytes, 0, 0, HOSTDEV, INITIAL) == 0
        # a 3x4 box of src at (2, 1) into the device's 4x5 array at (1, 0)
        assert omp_target_memcpy_rect(p, src, 8, 2, (3, 4), (1, 0), (2, 1), (4, 5), (6, 7),
                                      HOSTDEV, INITIAL) == 0
        expect = np.full((4, 5), -1.0)
        expect[1:4, 0:4] = src[2:5, 1:5]
        got = np.empty((4, 5))
        assert omp_target_memcpy(got, p, got.nbytes, 0, 0, INITIAL, HOSTDEV) == 0
        np.testing.assert_array_equal(got, expect)
        # and a 2x2 box back, device (2, 3) -> host (0, 5)
        dst = np.zeros((6, 7))
        assert omp_target_memcpy_rect(dst, p, 8, 2, (2, 2), (0, 5), (2, 3), (6, 7), (4, 5),
                                      INITIAL, HOSTDEV) == 0
        expect_dst = np.zeros((6, 7))
        expect_dst[0:2, 5:7] = expect[2:4, 3:5]
        np.testing.assert_array_equal(dst, expect_dst)
    finally:
        omp_target_free(p, HOSTDEV)


def test_memcpy_rect_3d_through_pocl(devs):
    rng = np.random.default_rng(7)
    src = rng.integers(0, 1000, size=(5, 6, 7), dtype=np.int32)
    dims = (4, 4, 4)
    c = omp_target_alloc(int(np.prod(dims)) * 4, CL)
    try:
        assert omp_target_memcpy(c, np.zeros(dims, np.int32), 256, 0, 0, CL, INITIAL) == 0
        assert omp_target_memcpy_rect(c, src, 4, 3, (2, 3, 4), (1, 0, 0), (3, 2, 1),
                                      dims, src.shape, CL, INITIAL) == 0
        expect = np.zeros(dims, np.int32)
        expect[1:3, 0:3, 0:4] = src[3:5, 2:5, 1:5]
        back = np.full((3, 4, 5), -7, np.int32)
        # the whole device box into a host array of another shape, at (0, 0, 1)
        assert omp_target_memcpy_rect(back, c, 4, 3, (3, 4, 4), (0, 0, 1), (1, 0, 0),
                                      back.shape, dims, INITIAL, CL) == 0
        expect_back = np.full((3, 4, 5), -7, np.int32)
        expect_back[:, :, 1:5] = expect[1:4]
        np.testing.assert_array_equal(back, expect_back)
    finally:
        omp_target_free(c, CL)


def test_memcpy_rect_limits(devs):
    assert omp_target_memcpy_rect(None, None, 8, 0, (), (), (), (), (), INITIAL, INITIAL) \
        == 2 ** 31 - 1                               # how many dimensions are supported
    a = np.zeros(4)
    assert omp_target_memcpy_rect(a, a, 8, 0, (), (), (), (), (), INITIAL, INITIAL) == errno.EINVAL
    assert omp_target_memcpy_rect(a, None, 8, 1, (1,), (0,), (0,), (4,), (4,),
                                  INITIAL, INITIAL) == errno.EINVAL
    b = np.arange(4.0)
    assert omp_target_memcpy_rect(a, b, 8, 1, (2,), (2,), (1,), (4,), (4,), INITIAL, INITIAL) == 0
    np.testing.assert_array_equal(a, [0, 0, 1, 2])


# -- presence ---------------------------------------------------------------------------

def test_is_present_and_mapped_ptr(devs):
    a = np.arange(10.0)
    assert omp_target_is_present(a, HOSTDEV) == 0
    assert omp_get_mapped_ptr(a, HOSTDEV) == 0
    assert omp_target_is_present(a, INITIAL) == 1          # always, on the initial device
    assert omp_get_mapped_ptr(a, INITIAL) == addr(a)
    assert omp_get_mapped_ptr(None, HOSTDEV) == 0
    with target_data(HOSTDEV, to=a), target_data(CL, to=a[2:6]):
        assert omp_target_is_present(a, HOSTDEV) == 1
        assert omp_target_is_present(a[7:], HOSTDEV) == 1
        assert omp_target_is_present(addr(a) + 8, HOSTDEV) == 1    # an int address
        base = omp_get_mapped_ptr(a, HOSTDEV)
        assert base not in (0, addr(a))
        assert omp_get_mapped_ptr(a[3:], HOSTDEV) == base + 24
        assert omp_target_is_present(a[2:], CL) == 1
        assert omp_target_is_present(a, CL) == 0           # a[0] is not mapped there
        out = np.zeros(4)
        assert omp_target_memcpy(out, omp_get_mapped_ptr(a[2:6], CL), 32, 0, 0,
                                 INITIAL, CL) == 0
        np.testing.assert_array_equal(out, [2, 3, 4, 5])
    assert omp_target_is_present(a, HOSTDEV) == 0


def test_is_accessible(devs):
    a = np.zeros(4)
    assert omp_target_is_accessible(a, a.nbytes, INITIAL) == 1
    assert omp_target_is_accessible(a, a.nbytes, HOSTDEV) == 0    # separate memory
    assert omp_target_is_accessible(a, a.nbytes, CL) == 0


# -- associated pointers ---------------------------------------------------------------

def test_associate_disassociate(devs, plugin):
    a = np.arange(10.0)
    d = omp_target_alloc(a.nbytes + 16, HOSTDEV)
    try:
        assert omp_target_associate_ptr(a, d, a.nbytes, 16, HOSTDEV) == 0
        assert omp_target_is_present(a, HOSTDEV) == 1
        assert omp_get_mapped_ptr(a, HOSTDEV) == d + 16
        assert omp_get_mapped_ptr(a[4:], HOSTDEV) == d + 16 + 32
        allocs = plugin.allocs
        with target_data(HOSTDEV, tofrom=a):                   # uses the associated memory
            assert plugin.allocs == allocs
            target_update(HOSTDEV, to=a)
        out = np.zeros(10)
        assert omp_target_memcpy(out, d, 80, 0, 16, INITIAL, HOSTDEV) == 0
        np.testing.assert_array_equal(out, a)
        # associating again: the same is fine, anything else is EINVAL
        assert omp_target_associate_ptr(a, d, a.nbytes, 16, HOSTDEV) == 0
        assert omp_target_associate_ptr(a[2:4], d, 16, 32, HOSTDEV) == 0      # inside, same place
        assert omp_target_associate_ptr(a, d, a.nbytes, 0, HOSTDEV) == errno.EINVAL
        assert omp_target_associate_ptr(a, d, a.nbytes + 8, 16, HOSTDEV) == errno.EINVAL
        assert omp_target_associate_ptr(a, d, a.nbytes, 0, INITIAL) == errno.EINVAL
        # exit data never removes it
        target_exit_data(HOSTDEV, delete=a)
        assert omp_target_is_present(a, HOSTDEV) == 1
        # disassociate: only the associated pointer itself
        assert omp_target_disassociate_ptr(a[1:], HOSTDEV) == errno.EINVAL
        assert omp_target_disassociate_ptr(a, INITIAL) == errno.EINVAL
        assert omp_target_disassociate_ptr(a, HOSTDEV) == 0
        assert omp_target_is_present(a, HOSTDEV) == 0
        assert omp_target_disassociate_ptr(a, HOSTDEV) == errno.EINVAL
        # a pointer mapped by the map clauses cannot be disassociated
        target_enter_data(HOSTDEV, to=a)
        assert omp_target_disassociate_ptr(a, HOSTDEV) == errno.EINVAL
        assert omp_target_associate_ptr(a, d, a.nbytes, 0, HOSTDEV) == errno.EINVAL
        target_exit_data(HOSTDEV, delete=a)
    finally:
        omp_target_free(d, HOSTDEV)
    assert user_entries(devs[0]) == []
