"""A kernel that faults: one line names it (file and line), its device and the hint,
and the process dies as it would have; a store just past the end of an array on the
host device raises OverrunError when the kernel returns.  Each fault is a fresh process."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygomp as omp
from pygomp.runtime import devices
from pygomp.runtime.faults import OverrunError

PROGRAM = textwrap.dedent("""\
    import sys, numpy as np, pygomp as omp

    @omp.target(boundscheck=False)
    def far(x, y):
        for i in omp.parallel_range(x.shape[0]):
            y[i] = x[i + (1 << 40)]

    x, y = np.ones(1000), np.zeros(1000)
    far.on(int(sys.argv[1]))(x, y)
    print("not reached")
""")
HINT = ("faulted: a read or write outside an array? Rerun with PYGOMP_BOUNDSCHECK=1 to "
        "find it.")


def faulted(tmp_path, which, device, flags=()):
    """The return code and stderr's lines of PROGRAM on device ``device`` of the
    devices ``which`` (PYGOMP_DEVICES)."""
    (tmp_path / "far.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYGOMP_BOUNDSCHECK", "PYTHONFAULTHANDLER")}
    env["PYGOMP_DEVICES"] = which
    p = subprocess.run([sys.executable, *flags, str(tmp_path / "far.py"), str(device)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert "not reached" not in p.stdout
    return p.returncode, p.stderr.splitlines()


def test_a_far_read_on_the_host_device_names_the_kernel(tmp_path):
    rc, err = faulted(tmp_path, "host", 0)
    assert rc == -11
    assert [s for s in err if s.startswith("pygomp:")] == [
        f"pygomp: kernel 'far' ({tmp_path / 'far.py'}:4) on device 0 (host 0) {HINT}"], err


def test_a_far_read_on_the_initial_device_names_the_kernel(tmp_path):
    rc, err = faulted(tmp_path, "host", 1)
    assert rc == -11
    assert [s for s in err if s.startswith("pygomp:")] == [
        f"pygomp: kernel 'far' ({tmp_path / 'far.py'}:4) on device 1 (the initial device) "
        f"{HINT}"], err


def test_faulthandler_still_shows_the_python_stack(tmp_path):
    rc, err = faulted(tmp_path, "host", 0, flags=("-X", "faulthandler"))
    assert rc == -11
    assert [s for s in err if s.startswith("pygomp:")] == [
        f"pygomp: kernel 'far' ({tmp_path / 'far.py'}:4) on device 0 (host 0) {HINT}"], err
    assert any(s.startswith("Fatal Python error: Segmentation fault") for s in err), err


def test_a_far_read_on_pocl_names_the_last_launched_kernel(tmp_path):
    if not any(d.plugin.name == "opencl" and d.info.matches("pocl")
               for d in devices.all_devices()):
        pytest.skip("no PoCL device")
    rc, err = faulted(tmp_path, "opencl:pocl", 0)
    assert rc == -11
    assert [s for s in err if s.startswith("pygomp:")] == [
        f"pygomp: kernel 'far' ({tmp_path / 'far.py'}:4), the last launched on device 0 "
        f"(opencl 0), {HINT}"], err


@omp.target(boundscheck=False)
def over(x, y, k: int):
    for i in omp.parallel_range(x.shape[0]):
        y[i + k] = x[i]


def host_device():
    for d in devices.all_devices():
        if d.plugin.name == "host" and not d.is_initial:
            return d
    pytest.skip("no host device")


def test_a_store_past_the_end_on_the_host_device_raises(tmp_path):
    d = host_device()
    x, y = np.arange(100.0), np.zeros(97)
    with pytest.raises(OverrunError) as e:
        over.on(d.number)(x, y, 0)          # three elements past y's end
    assert str(e.value) == (f"kernel 'over' wrote past the end of array 'y' on device "
                            f"{d.number} (host 0): rerun with PYGOMP_BOUNDSCHECK=1 to "
                            f"find the index")
    assert (y == 0).all()                   # nothing copied back
    assert not omp.omp_target_is_present(y, d.number)
    z = np.zeros(103)
    over.on(d.number)(x, z, 3)              # the next call is right
    assert (z[3:] == x).all() and (z[:3] == 0).all()
    with pytest.raises(OverrunError):       # again: the guard was put back
        over.on(d.number)(x, y, 0)


def test_a_store_past_the_end_inside_target_data(tmp_path):
    d = host_device()
    x, y = np.arange(100.0), np.ones(98)
    with omp.target_data(d.number, to=[x], tofrom=[y]):
        with pytest.raises(OverrunError, match="array 'y'"):
            over.on(d.number)(x, y, 0)
        over.on(d.number)(x[:98], y, 0)     # the map is still good
    assert (y == x[:98]).all()


FAR_C = r"""
#include <stdio.h>
int main(void)
{
    double x[64] = {0}, s = 0;
    long far = 1L << 40;
    #pragma omp target map(tofrom: x, s) map(to: far)
    for (int k = 0; k < 64; k++)
        s += x[k + far];
    printf("%g\n", s);
    return 0;
}
"""


def test_a_c_program_under_the_shim_faults_as_under_libgomp(tmp_path):
    from pygomp.csrc import shim
    (tmp_path / "far.c").write_text(FAR_C)
    exe = tmp_path / "far"
    subprocess.run(["gcc", "-fopenmp", "-foffload=disable", "-O1", str(tmp_path / "far.c"),
                    "-o", str(exe)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_DEV"))}
    alone = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=60)
    shimmed = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120,
                             env=dict(env, PYGOMP_DEVICES="host", LD_PRELOAD=shim.path()))
    assert alone.returncode == shimmed.returncode == -11
    assert "pygomp" not in shimmed.stderr
