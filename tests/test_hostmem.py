"""Device memory that is host memory (the host device, OpenCL on the CPU): big buffers
sit on 2 MiB-aligned memory advised to use transparent huge pages."""
import ctypes
import os

import numpy as np
import pytest

import pygomp
from pygomp.runtime import devices, hostmem


def vm_flags(addr):
    """The VmFlags of the mapping of this process that holds ``addr`` (Linux)."""
    try:
        with open("/proc/self/smaps") as f:
            lines = f.read().splitlines()
    except OSError:
        pytest.skip("no /proc/self/smaps")
    inside = False
    for line in lines:
        head = line.split()[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= addr < hi
        elif inside and line.startswith("VmFlags:"):
            return line.split()[1:]
    return []


def host_memory(dev, a):
    """The host address of the device memory that holds ``a`` on ``dev``."""
    p = pygomp.omp_get_mapped_ptr(a, dev.number)
    if dev.plugin.name == "host":
        return p
    buf = dev.plugin._space.resolve(p)[0]
    return ctypes.addressof(buf.hostbuf) if buf.hostbuf is not None else None


def test_big_buffers_are_on_huge_pages(offload_device):
    dev = devices.all_devices()[offload_device]
    if dev.info.kind != "cpu":
        pytest.skip("device memory of this device is not host memory")
    big, small = np.ones(hostmem.HUGE // 8 + 1), np.ones(100)
    with pygomp.target_data(offload_device, tofrom=[big, small]):
        addr = host_memory(dev, big)
        assert addr is not None and addr % hostmem.PAGE == 0
        if os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"):
            assert "hg" in vm_flags(addr)           # madvise(MADV_HUGEPAGE) was given
        assert pygomp.omp_get_mapped_ptr(small, offload_device)
    assert (big == 1).all() and (small == 1).all()


def test_alloc_sizes_and_alignment():
    for size in (1, 100, hostmem.HUGE - 1):
        p = hostmem.alloc(size)
        assert p % hostmem.ALIGNMENT == 0
        hostmem.free(p)
    p = hostmem.alloc(hostmem.HUGE + 1)                 # rounded up to whole huge pages
    assert p % hostmem.PAGE == 0
    ctypes.memset(p + 2 * hostmem.PAGE + hostmem.PAGE - 1, 7, 1)  # the last page is ours
    hostmem.free(p)
