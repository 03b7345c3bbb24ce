"""Fortran under libpygomp.so: gfortran's array descriptors (GOMP_MAP_TO_PSET and the
pointer items after it) through the core, and the programs of tests/fortran/, built with
gfortran -fopenmp / -fopenacc -foffload=disable, run through the shim on the host device
and on OpenCL (PoCL).  Each program checks values that only memory separate from the
host gives, so libgomp alone (shared memory) runs it with ``separate memory F`` and the
shim with ``T``.  Without gfortran-12 or gfortran (`make` installs Debian's gfortran-12
as root) the programs' tests are skipped and say why.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from pygomp.csrc import shim
from pygomp.runtime import accmap, kinds, mapping
from pygomp.runtime.mapping import Item, MappingError

from runtime_helpers import addr, dev, dev_read, plugin, user_entries  # noqa: F401
from test_shim import _env, _opencl_devices, _passed

HERE = Path(__file__).parent / "fortran"
GFORTRAN = shutil.which("gfortran-12") or shutil.which("gfortran")
TIMEOUT = 180


class Descriptor(ctypes.Structure):
    """The first words of gfortran's rank-1 array descriptor: data, offset, dtype."""
    _fields_ = [("data", ctypes.c_uint64), ("offset", ctypes.c_int64),
                ("dtype", ctypes.c_uint64 * 2), ("span", ctypes.c_int64),
                ("dim", ctypes.c_int64 * 3)]


def _items(a, d, data_kind=kinds.TOFROM):
    """What gfortran passes for map(a) of an allocatable: the data, the descriptor, its
    data pointer."""
    base = ctypes.addressof(d)
    return [Item(addr(a), a.nbytes, data_kind, a), Item(base, ctypes.sizeof(d), kinds.TO_PSET, d),
            Item(base, 0, kinds.POINTER, d)]


def _device_copy(dev, word):
    return dev_read(dev, word, np.zeros(ctypes.sizeof(Descriptor) // 8, np.uint64))


def test_descriptor_is_copied_with_its_data_pointer_translated(dev):
    """The device copy of a descriptor is the host's, but for its data pointer, which
    holds the device address of the data; the pointer item's word is its slot.  The host
    descriptor keeps its own pointer, and the construct's end unmaps all three."""
    a = np.arange(10.0)
    d = Descriptor(addr(a), -1, (8, 0x30100000000), 8, (1, 1, 10))
    region = mapping.begin(dev, _items(a, d))
    copy = _device_copy(dev, region.args[1])
    assert copy[0] == region.args[0] != addr(a)
    assert list(copy[1:]) == list(np.frombuffer(bytes(d), np.uint64)[1:])
    assert region.args[2] == region.args[1]
    mapping.end(region)
    assert d.data == addr(a) and user_entries(dev) == []


def test_openacc_counts_the_descriptor_once_per_item(dev):
    """OpenACC's enter data: the descriptor takes a dynamic reference for itself and one
    for its pointer (libgomp's counts), so exit data's TO_PSET and POINTER items, one
    reference each, unmap it; the data goes with its FROM item, copied back."""
    a = np.arange(4.0)
    d = Descriptor(addr(a))
    mapping.enter_data(dev, _items(a, d, kinds.TO), acc=True)
    desc = dev.map.find(ctypes.addressof(d), ctypes.addressof(d) + 8)
    assert (desc.refcount, desc.dynamic_refcount) == (2, 2)
    data = dev.map.find(addr(a), addr(a) + a.nbytes)
    dev.plugin.host2dev(dev.local, data.dev_start, addr(np.full(4, 7.0)), a.nbytes)
    accmap.exit_data(dev, _items(a, d, kinds.FROM))
    assert user_entries(dev) == [] and list(a) == [7.0] * 4


def test_a_descriptor_mapped_while_unallocated_is_mapped_again(dev):
    """libgomp's rule for an array mapped before it is allocated: a descriptor mapped
    with a null data pointer is copied again, its pointer set, by a construct that finds
    it non-null; one mapped with data keeps its device copy (the host's later changes
    to it stay on the host)."""
    d = Descriptor(0, 5)
    outer = mapping.begin(dev, [Item(ctypes.addressof(d), ctypes.sizeof(d), kinds.TO_PSET, d),
                                Item(ctypes.addressof(d), 0, kinds.POINTER, d)])
    assert _device_copy(dev, outer.args[0])[0] == 0
    a = np.arange(3.0)
    d.data, d.offset = addr(a), 6
    inner = mapping.begin(dev, _items(a, d))
    copy = _device_copy(dev, inner.args[1])
    assert copy[0] == inner.args[0] and copy[1] == 6
    mapping.end(inner)
    mapping.end(outer)
    b = np.arange(3.0)
    e = Descriptor(addr(b), 1)
    outer = mapping.begin(dev, _items(b, e))
    e.offset = 2
    inner = mapping.begin(dev, _items(b, e))
    assert _device_copy(dev, inner.args[1])[1] == 1
    mapping.end(inner)
    mapping.end(outer)
    assert user_entries(dev) == []


def test_unmapped_data_is_an_error_that_leaves_nothing_mapped(dev):
    """A descriptor whose data pointer points to memory that is not mapped: libgomp's
    error, naming the pointer; the descriptor does not stay mapped."""
    a = np.arange(3.0)
    d = Descriptor(addr(a))
    with pytest.raises(MappingError, match=f"Pointer target of array section wasn't mapped "
                                           f"\\(the pointer at {ctypes.addressof(d):#x}"):
        mapping.begin(dev, _items(a, d)[1:])
    assert user_entries(dev) == []


# -- the programs -------------------------------------------------------------------

PROGRAMS = {"omp_arrays": "-fopenmp", "acc_arrays": "-fopenacc"}
needs_gfortran = pytest.mark.skipif(GFORTRAN is None, reason="no gfortran-12 or gfortran on "
                                    "PATH (`make` installs Debian's gfortran-12 as root)")


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("fortran-programs")

    def build(name):
        exe, modules = out / name, out / f"{name}.mod"
        modules.mkdir()
        cmd = [GFORTRAN, "-cpp", PROGRAMS[name], "-foffload=disable", "-O1", "-Wall",
               str(HERE / f"{name}.f90"), f"-J{modules}", "-o", str(exe)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
        return str(exe)

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 2)) as pool:
        exes = dict(zip(PROGRAMS, pool.map(build, PROGRAMS)))
    pre = {"LD_PRELOAD": shim.path()}
    todo = {}
    for name, exe in exes.items():
        todo[f"{name}-host"] = _env(**pre)
        todo[f"{name}-libgomp"] = _env(ACC_DEVICE_TYPE="host")
        if _opencl_devices():
            todo[f"{name}-opencl"] = _env(PYGOMP_DEVICES="opencl", **pre)

    def run(key):
        return subprocess.run([exes[key.rsplit("-", 1)[0]]], env=todo[key], capture_output=True,
                              text=True, timeout=TIMEOUT)

    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        return dict(zip(todo, pool.map(run, todo)))


@needs_gfortran
@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("where", ["host", "opencl"])
def test_program_passes_under_the_shim(runs, name, where):
    if f"{name}-{where}" not in runs:
        pytest.skip("no OpenCL device works here (tests/test_probe.py says why)")
    done = runs[f"{name}-{where}"]
    _passed(done)
    assert "separate memory T" in done.stdout


@needs_gfortran
@pytest.mark.parametrize("name", PROGRAMS)
def test_libgomp_alone_shares_memory(runs, name):
    """The same program under libgomp alone: its checks hold with shared memory too, so
    a pass under the shim with separate memory shows that the shim ran it."""
    done = runs[f"{name}-libgomp"]
    _passed(done)
    assert "separate memory F" in done.stdout


def test_update_leaves_a_descriptors_device_copy_alone(dev):
    """target update of a descriptor (TO_PSET, as libgomp: no copy kind) copies nothing:
    its device copy keeps the device address of the data."""
    a = np.arange(4.0)
    d = Descriptor(addr(a))
    region = mapping.begin(dev, _items(a, d))
    mapping.update(dev, _items(a, d, kinds.TO)[1:])
    assert _device_copy(dev, region.args[1])[0] == region.args[0]
    mapping.end(region)


def test_no_create_of_absent_data_skips_its_pointer(dev):
    """OpenACC's no_create (IF_PRESENT) of absent data maps nothing, and neither does the
    POINTER item after it (libgomp skips it); both words are host addresses.  Present
    data is used, and the pointer translated."""
    a = np.arange(4.0)
    ptr = ctypes.c_uint64(addr(a))
    items = [Item(addr(a), a.nbytes, kinds.IF_PRESENT, a),
             Item(ctypes.addressof(ptr), 0, kinds.POINTER, ptr)]
    region = mapping.begin(dev, items, acc=True)
    assert region.args == [addr(a), ctypes.addressof(ptr)] and user_entries(dev) == []
    mapping.end(region)
    mapping.enter_data(dev, [Item(addr(a), a.nbytes, kinds.TO, a)], acc=True)
    region = mapping.begin(dev, items, acc=True)
    assert dev_read(dev, region.args[1], np.zeros(1, np.uint64))[0] == region.args[0]
    mapping.end(region)
    accmap.exit_data(dev, [Item(addr(a), a.nbytes, kinds.DELETE, a)])
    assert user_entries(dev) == []
