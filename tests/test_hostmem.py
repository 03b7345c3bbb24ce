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


def test_freed_large_blocks_are_kept_for_the_same_size_and_trimmed():
    hostmem.trim()
    p = hostmem.alloc(hostmem.HUGE + 1)                 # 3 huge pages
    hostmem.free(p)
    assert hostmem.kept() == 3 * hostmem.PAGE
    q = hostmem.alloc(hostmem.HUGE + 100)               # the same pages: that block
    assert q == p and hostmem.kept() == 0
    r = hostmem.alloc(hostmem.LARGE + 1)                # whole 4 KiB pages, another size
    assert r != p and r % 4096 == 0
    hostmem.free(q)
    hostmem.free(r)
    assert hostmem.kept() == 3 * hostmem.PAGE + hostmem.LARGE + 4096
    assert hostmem.trim() == 3 * hostmem.PAGE + hostmem.LARGE + 4096
    assert hostmem.kept() == 0


@pygomp.target(boundscheck=False)
def fill(y, n: int):
    for i in pygomp.parallel_range(n):
        y[i] = 2.0


def test_reused_device_memory_keeps_its_guard_and_no_stale_entry():
    dev = next((d for d in devices.all_devices()
                if d.plugin.name == "host" and not d.is_initial), None)
    if dev is None:
        pytest.skip("no host device")
    from pygomp.runtime.faults import OverrunError
    hostmem.trim()
    k = fill.on(dev.number)
    n = hostmem.HUGE // 8
    a = np.zeros(n)
    with pygomp.target_data(dev.number, tofrom=[a]):
        first = pygomp.omp_get_mapped_ptr(a, dev.number)
    assert hostmem.kept() > 0                           # its memory kept for reuse
    b = np.zeros(n - 3)                                 # the same pages
    with pygomp.target_data(dev.number, tofrom=[b]):
        assert pygomp.omp_get_mapped_ptr(b, dev.number) == first
        assert not pygomp.omp_target_is_present(a, dev.number)      # a is gone
        with pytest.raises(OverrunError, match="array 'y'"):
            k(b, n - 2)                                 # one past b's end, not a's
        k(b, n - 3)
    assert (b == 2.0).all() and (a == 0).all()
