"""An array in two map clauses of one construct is an error (GCC refuses it) that names
the array and both kinds; nothing is mapped.  The same for OpenACC's data clauses."""
import re

import numpy as np
import pytest

import pygomp
from pygomp import openacc as acc
from pygomp.runtime import devices


def _array(a):
    return (f"an array (float64, shape {a.shape}) at "
            f"[{a.ctypes.data:#x}..{a.ctypes.data + a.nbytes:#x})")


def _twice(construct, a, k1, k2, hint=""):
    return re.escape(f"pygomp: {construct}: {_array(a)} is in two clauses, {k1} and {k2}; "
                     f"an array takes one map kind on a construct{hint}")


def _present(a, device):
    return pygomp.omp_target_is_present(a, device) and not \
        devices.all_devices()[device].is_initial


def test_target_data_to_and_from(device):
    a = np.zeros(8)
    with pytest.raises(ValueError, match=_twice("target_data", a, "to", "from",
                                                " (map it tofrom)")):
        with pygomp.target_data(device, to=[a], from_=[a]):
            pass
    assert not _present(a, device)


def test_target_enter_data_to_and_alloc(device):
    a, b = np.zeros(8), np.zeros(3)
    with pytest.raises(ValueError, match=_twice("target_enter_data", a, "to", "alloc")):
        pygomp.target_enter_data(device, to=[b, a], alloc=a)
    assert not _present(a, device) and not _present(b, device)


def test_a_section_in_another_clause(device):
    a = np.zeros(10)
    part = a[2:4]
    want = re.escape(f"pygomp: target_data: {_array(a)} is in tofrom and {_array(part)}, "
                     f"which shares its memory, in alloc; an array takes one map kind on "
                     f"a construct")
    with pytest.raises(ValueError, match=want):
        with pygomp.target_data(device, tofrom=a, alloc=[np.zeros(1), part]):
            pass


def test_exit_data_and_update(device):
    a = np.zeros(4)
    with pytest.raises(ValueError, match=_twice("target_exit_data", a, "from", "delete")):
        pygomp.target_exit_data(device, from_=[a], delete=[a])
    with pytest.raises(ValueError, match=_twice("target_update", a, "to", "from",
                                                " (map it tofrom)")):
        pygomp.target_update(device, to=[a], from_=[a])


def test_what_stays_allowed(device):
    a, b = np.arange(8.0), np.zeros(0)
    with pygomp.target_data(device, tofrom=[a, a], to=[a[:0]], alloc=[b]):
        pass                        # one clause twice, zero-length items: no conflict
    with pygomp.target_data(device, to=[a[:4]], from_=[a[4:]]):
        pass                        # two halves of one array: no shared memory
    assert (a[:4] == np.arange(4.0)).all()
    pygomp.target_enter_data(device, to=[a])
    pygomp.target_exit_data(device, release=[a], delete=[a])    # delete decides
    assert not _present(a, device)


def test_acc_data_copyin_and_copyout(device):
    d = devices.all_devices()[device]
    if d.is_initial:
        acc.set_device_num(0, acc.device_host)
    else:
        acc.set_device_num(device, acc.device_not_host)
    a = np.zeros(8)
    with pytest.raises(ValueError, match=_twice("acc.data", a, "copyin", "copyout",
                                                " (use copy)")):
        with acc.data(copyin=[a], copyout=[a]):
            pass
    with pytest.raises(ValueError, match=_twice("acc.data", a, "copy", "create")):
        with acc.data(copy=a, create=[a]):
            pass
    assert not acc.is_present(a) or d.is_initial
