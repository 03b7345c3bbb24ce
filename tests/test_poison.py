"""PYGOMP_POISON=1: device memory that a map allocates without copying into it (alloc,
from; OpenACC create, copyout) is filled with a signalling NaN per element for float
arrays (float32 0x7FA00000, float64 0x7FF4000000000000) and 0xA5 bytes otherwise, so
that a kernel that reads what was never copied in sees it at once.

The initial device maps nothing (memory is shared): there a kernel reads the host's own
values, poisoned or not.  Unset, nothing is filled and no copy is made for it.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp
from pygomp import openacc as acc
from pygomp.runtime import devices, env

F64 = 0x7FF4000000000000
F32 = 0x7FA00000


@omp.target
def copy(a, out):
    for i in omp.parallel_range(a.shape[0]):
        out[i] = a[i]


@pytest.fixture
def poison(monkeypatch):
    monkeypatch.setattr(env, "_settings", env.settings().replace(poison=True))


def _initial(device):
    return devices.all_devices()[device].is_initial


def _seen(device, a, **maps):
    """What ``copy`` reads from ``a`` on ``device`` inside target_data(**maps)."""
    out = np.zeros_like(a)
    with pygomp.target_data(device=device, **maps):
        copy.on(device)(a, out)
    return out


@pytest.mark.parametrize("dtype, bits, pattern", [
    (np.float64, np.uint64, F64), (np.float32, np.uint32, F32),
    (np.int32, np.uint32, 0xA5A5A5A5), (np.int64, np.uint64, 0xA5A5A5A5A5A5A5A5),
    (np.uint8, np.uint8, 0xA5)])
def test_alloc_reads_the_pattern(device, poison, dtype, bits, pattern):
    a = np.arange(16, dtype=dtype)
    out = _seen(device, a, alloc=[a])
    if _initial(device):
        np.testing.assert_array_equal(out, a)       # the host's own memory
        return
    assert (out.view(bits) == pattern).all(), out.view(bits)
    if out.dtype.kind == "f":
        assert np.isnan(out).all()
    np.testing.assert_array_equal(a, np.arange(16, dtype=dtype))    # alloc copies nothing back


def test_from_reads_and_returns_the_pattern(device, poison):
    a = np.arange(16, dtype=np.float32)
    out = _seen(device, a, from_=[a])
    if _initial(device):
        np.testing.assert_array_equal(out, np.arange(16))
        return
    assert (out.view(np.uint32) == F32).all()
    assert (a.view(np.uint32) == F32).all()         # never written: the pattern comes back


def test_to_is_untouched(device, poison):
    a, b = np.arange(16.0), np.arange(16, dtype=np.int32)
    out = np.zeros(16)
    with pygomp.target_data(device=device, to=[a], alloc=[b]):
        copy.on(device)(a, out)
    np.testing.assert_array_equal(out, np.arange(16.0))
    np.testing.assert_array_equal(b, np.arange(16))


def test_unset_fills_nothing(device, monkeypatch):
    assert not env.settings().poison
    d = devices.all_devices()[device]
    copies = []
    if not _initial(device):
        real = d.plugin.host2dev
        monkeypatch.setattr(d.plugin, "host2dev", lambda *a: (copies.append(a), real(*a)))
    a = np.arange(16.0)
    with pygomp.target_data(device=device, alloc=[a]):
        pass
    with pygomp.target_data(device=device, from_=[a]):
        pass
    assert copies == []


def test_openacc_create_and_copyout(device, poison):
    d = devices.all_devices()[device]
    if d.is_initial:
        pytest.skip("OpenACC's host maps nothing")
    acc.set_device_num(device, acc.device_not_host)
    try:
        a, b = np.zeros(8), np.zeros(8, dtype=np.int16)
        with acc.data(create=[a], copyout=[b]):
            out = np.empty(8)
            assert pygomp.omp_target_memcpy(out, acc.deviceptr(a), a.nbytes, 0, 0,
                                            devices.num_devices(), device) == 0
            assert (out.view(np.uint64) == F64).all()
        assert (b.view(np.uint16) == 0xA5A5).all()
    finally:
        acc.set_device_num(0, acc.device_default)


@pytest.mark.parametrize("dtype, bits, pattern", [(np.float64, np.uint64, F64),
                                                   (np.float32, np.uint32, F32)])
def test_a_kernels_own_from_map_of_floats(offload_device, poison, dtype, bits, pattern):
    @omp.target(map={"y": "from"})
    def read_back(y, out):
        for i in omp.parallel_range(y.shape[0]):
            out[i] = y[i]
    y, out = np.zeros(8, dtype), np.zeros(8, dtype)
    for _ in range(2):                          # the first call, and a repeated one
        out[:] = 0
        read_back.on(offload_device)(y, out)
        assert (out.view(bits) == pattern).all(), out.view(bits)


C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>

int main(void) {
  unsigned char a[64], ab[64];
  double d[4], db[4];
  int t[8], tb[8];
  memset(a, 0, sizeof a);
  memset(d, 0, sizeof d);
  for (int i = 0; i < 8; ++i) t[i] = i;
  #pragma omp target map(alloc: a, d) map(to: t) map(from: ab, db, tb)
  {
    for (int i = 0; i < 64; ++i) ab[i] = a[i];
    for (int i = 0; i < 4; ++i) db[i] = d[i];
    for (int i = 0; i < 8; ++i) tb[i] = t[i];
  }
  int bytes = 0;
  for (int i = 0; i < 64; ++i) bytes += ab[i] == 0xA5;
  const unsigned char *p = (const unsigned char *)db;
  for (int i = 0; i < (int)sizeof db; ++i) bytes += p[i] == 0xA5;
  int to = 0;
  for (int i = 0; i < 8; ++i) to += tb[i] == i;
  printf("%d %d\n", bytes, to);
  return 0;
}
"""


def test_c_program_under_the_shim(tmp_path):
    """C maps carry no type: 0xA5 bytes, a double array's too."""
    from pygomp.csrc import shim
    from test_shim import _env
    src, exe = tmp_path / "poison.c", tmp_path / "poison"
    src.write_text(C_PROGRAM)
    subprocess.run(["gcc", "-fopenmp", "-foffload=disable", "-O1", str(src), "-o", str(exe)],
                   check=True)
    pre = {"LD_PRELOAD": shim.path(), "PYGOMP_DEVICES": "host"}

    def run(**extra):
        done = subprocess.run([str(exe)], env=_env(**pre, **extra), capture_output=True,
                              text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        return [int(w) for w in done.stdout.split()]

    assert run(PYGOMP_POISON="1") == [64 + 32, 8]
    assert run()[1] == 8                # unset: the to array as before

