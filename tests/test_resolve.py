"""`devices.resolve`: every row of its table of device numbers, under each
OMP_TARGET_OFFLOAD setting, for Python callers, compiled C and the omp_* routines."""
import warnings

import pytest

from pygomp import OffloadError, PluginError
from pygomp.runtime import devices
from pygomp.runtime.devices import (GOMP_DEVICE_HOST_FALLBACK, GOMP_DEVICE_ICV,
                                    INITIAL_DEVICE, INVALID_DEVICE, OffloadWarning, resolve)

from runtime_helpers import CountingHostPlugin, fresh_device, installed_devices, settings


class BrokenPlugin(CountingHostPlugin):
    def _init_impl(self, dev):
        raise OSError("no such hardware")


def test_the_constants_are_libgomps():
    # gomp-constants.h and omp.h (GCC 13 and later)
    assert (GOMP_DEVICE_ICV, GOMP_DEVICE_HOST_FALLBACK) == (-1, -2)
    assert (INITIAL_DEVICE, INVALID_DEVICE) == (-1, -4)
    import pygomp
    assert pygomp.omp_initial_device == INITIAL_DEVICE
    assert pygomp.omp_invalid_device == INVALID_DEVICE


@pytest.fixture(params=["default", "mandatory"])
def offload(request):
    return request.param


@pytest.fixture
def devs(offload):
    """Device 0 works, device 1 cannot be initialized, 2 is the initial device."""
    ds = [fresh_device(0), fresh_device(1, BrokenPlugin()), fresh_device(2, is_initial=True)]
    with installed_devices(ds, settings(OMP_TARGET_OFFLOAD=offload)):
        yield ds
        for d in ds:
            d.finalize()


def fails(offload, number, **how):
    """Resolving ``number`` is an error under mandatory, the initial device otherwise,
    with at most one OffloadWarning (the first time for a number)."""
    if offload == "mandatory":
        with pytest.raises(OffloadError, match="OMP_TARGET_OFFLOAD is set to MANDATORY"):
            resolve(number, **how)
        return True
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = resolve(number, **how)
    assert len(seen) <= 1 and all(w.category is OffloadWarning for w in seen), seen
    assert all(str(w.message).endswith(": running on the initial device instead")
               for w in seen)
    return got is devices.initial()


def test_a_fallback_warns_once_a_number(devs, offload):
    if offload == "mandatory":
        pytest.skip("no fallback under mandatory")
    for number, why in ((1, "device 1 cannot be initialized (host device 0: init failed: "
                            "OSError: no such hardware)"),
                        (7, "device 7 does not exist (2 offload devices, 0..1, and the "
                            "initial device 2)")):
        with pytest.warns(OffloadWarning) as seen:
            assert resolve(number) is devs[2]
        assert [str(w.message) for w in seen] == [
            f"{why}: running on the initial device instead"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert resolve(number) is devs[2] and resolve(number, compiled=True) is devs[2]


def test_offload_devices(devs, offload):
    assert resolve(0) is devs[0] and resolve(0, compiled=True) is devs[0]
    assert resolve(0, routine=True) is devs[0] and devs[0].state == "initialized"
    assert fails(offload, 1) and fails(offload, 1, compiled=True)
    with pytest.raises(PluginError, match="no such hardware"):
        resolve(1, routine=True)


def test_the_initial_device(devs, offload):
    for how in ({}, {"routine": True}, {"compiled": True}):
        assert resolve(2, **how) is devs[2]
    assert resolve(INITIAL_DEVICE) is devs[2]
    assert resolve(INITIAL_DEVICE, routine=True) is devs[2]
    assert resolve(GOMP_DEVICE_HOST_FALLBACK, compiled=True) is devs[2]


def test_the_default_device(devs, offload):
    assert resolve(None) is devs[0]
    assert resolve(GOMP_DEVICE_ICV, compiled=True) is devs[0]
    with pytest.raises(OffloadError, match="needs a device number"):
        resolve(None, routine=True)
    devices.set_default(1)
    assert fails(offload, None) and fails(offload, GOMP_DEVICE_ICV, compiled=True)
    devices.set_default(INITIAL_DEVICE)             # the ICV holds a Python number
    assert resolve(None) is devs[2] and resolve(GOMP_DEVICE_ICV, compiled=True) is devs[2]
    devices.set_default(INVALID_DEVICE)
    with pytest.raises(OffloadError):
        resolve(None)


def test_omp_invalid_device(devs, offload):
    for how in ({}, {"compiled": True}):
        with pytest.raises(OffloadError, match=r"-4\b"):
            resolve(INVALID_DEVICE, **how)
    with pytest.raises(OffloadError, match=r"^invalid device number -4: offload devices are "
                                           r"0\.\.1 and the initial device is 2$"):
        resolve(INVALID_DEVICE, routine=True)


@pytest.mark.parametrize("number", [3, 17, -3, GOMP_DEVICE_HOST_FALLBACK])
def test_other_numbers(devs, offload, number):
    assert fails(offload, number)
    if number != GOMP_DEVICE_HOST_FALLBACK:
        assert fails(offload, number, compiled=True)
    with pytest.raises(OffloadError, match=rf"^invalid device number {number}: "):
        resolve(number, routine=True)


def test_mandatory_without_offload_devices():
    initial = fresh_device(0, is_initial=True)
    with installed_devices([initial], settings(OMP_TARGET_OFFLOAD="mandatory")):
        assert devices.get_default() == INVALID_DEVICE
        for number in (None, 3, INVALID_DEVICE):
            with pytest.raises(OffloadError, match="^OMP_TARGET_OFFLOAD is set to MANDATORY, "
                                                   "but only the host device is available$"):
                resolve(number)
        assert resolve(0) is initial and resolve(INITIAL_DEVICE) is initial
        initial.finalize()


def test_disabled_offloads_nothing():
    initial = fresh_device(0, is_initial=True)
    with installed_devices([initial], settings(OMP_TARGET_OFFLOAD="disabled")):
        assert resolve(None) is initial
        with pytest.warns(OffloadWarning, match="^device 5 does not exist \\(no offload "
                                                "device, and the initial device 0\\)"):
            assert resolve(5) is initial
        assert resolve(0, routine=True) is initial
        with pytest.raises(OffloadError):
            resolve(INVALID_DEVICE)
        initial.finalize()
