"""Regions without an image, whose host code stands in for the device: tests/c/fallback.c
(OpenMP) and tests/c/acc_fallback.c (OpenACC), built with gcc -foffload=disable, run
through the shim on the host device and on OpenCL (PoCL), where a region has no image
and runs on the host with a host view of the device's data.  Each program checks that
its regions see and leave the data as a region on a device with memory of its own does:
nothing copied back stale, acc_map_data blocks, device pointers, attached pointers,
regions on two queues or tasks that write parts of one block.  Map errors are the same
on both devices."""
from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pygomp.csrc import shim

from test_shim import _env, _fatal, _opencl_devices, _passed

HERE = Path(__file__).parent / "c"
TIMEOUT = 180
DEVICES = ["host", "opencl"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    lib = shim.path()
    out = tmp_path_factory.mktemp("fallback-programs")
    builds = {"fallback": ("fallback.c", "-fopenmp"), "acc_fallback": ("acc_fallback.c", "-fopenacc"),
              "errors": ("errors.c", "-fopenmp"), "acc_errors": ("acc_errors.c", "-fopenacc")}

    def build(name):
        src, flag = builds[name]
        cmd = ["gcc", flag, "-foffload=disable", "-O1", "-Wall", str(HERE / src), "-o",
               str(out / name)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
        return str(out / name)

    with ThreadPoolExecutor(max_workers=4) as pool:
        exes = dict(zip(builds, pool.map(build, builds)))
    devices = DEVICES if _opencl_devices() else ["host"]
    todo = {}
    for d in devices:
        pre = _env(LD_PRELOAD=lib, PYGOMP_DEVICES=d, PYGOMP_INFO="0x10")
        todo[f"fallback-{d}"] = [exes["fallback"]], pre
        todo[f"acc_fallback-{d}"] = [exes["acc_fallback"]], pre
        todo[f"extend-{d}"] = [exes["errors"], "extend"], pre
        todo[f"present-{d}"] = [exes["acc_errors"], "present"], pre
    if "opencl" in devices:
        todo["deviceptr-opencl"] = ([exes["acc_fallback"], "deviceptr_unknown"],
                                    _env(LD_PRELOAD=lib, PYGOMP_DEVICES="opencl"))

    def run(argv, env):
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT)

    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        futures = {name: pool.submit(run, *job) for name, job in todo.items()}
        return {name: f.result() for name, f in futures.items()}


def _on(runs, name):
    if name not in runs:
        pytest.skip("no OpenCL device")
    return runs[name]


@pytest.mark.parametrize("where", DEVICES)
def test_openmp_regions_see_and_leave_the_device_data(runs, where):
    done = _on(runs, f"fallback-{where}")
    _passed(done)
    assert "fallback ok" in done.stdout
    said = re.findall(r"device 0 \(opencl\) has no image of the target region at 0x[0-9a-f]+: "
                      r"host fallback with the device's data", done.stderr)
    assert bool(said) == (where == "opencl"), done.stderr


@pytest.mark.parametrize("where", DEVICES)
def test_openacc_regions_see_and_leave_the_device_data(runs, where):
    done = _on(runs, f"acc_fallback-{where}")
    _passed(done)
    assert "acc_fallback ok" in done.stdout
    said = re.findall(r"device 0 \(opencl\) has no image of the compute region at "
                      r"0x[0-9a-f]+: its host code runs on the host with the device's data",
                      done.stderr)
    assert bool(said) == (where == "opencl"), done.stderr


@pytest.mark.parametrize("where", DEVICES)
def test_a_partial_overlap_is_the_same_error_on_every_device(runs, where):
    done = _on(runs, f"extend-{where}")
    a0, a8, m0, m1 = done.stdout.split()
    _fatal(done, re.escape(f"[{a0}..{a8}) when [{m0}..{m1}) is already mapped"))


@pytest.mark.parametrize("where", DEVICES)
def test_present_of_absent_data_is_the_same_error_on_every_device(runs, where):
    done = _on(runs, f"present-{where}")
    a = done.stdout.split()[0]
    _fatal(done, re.escape(f"present clause: !acc_is_present ({a}, 64 (0x40))"))


def test_deviceptr_into_no_known_device_memory_is_refused(runs):
    """On OpenCL a deviceptr whose value is in no device memory pygomp knows (here a host
    address) cannot be given a host view: the error names the region and the value."""
    done = _on(runs, "deviceptr-opencl")
    p = done.stdout.split()[0]
    _fatal(done, r"device 0 \(opencl\): the compute region at 0x[0-9a-f]+ has no image, and "
                 r"its host code cannot use deviceptr's " + re.escape(p) +
                 r": no device memory that pygomp knows holds it")
