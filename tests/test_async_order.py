"""Async queues keep program order (docs/architecture.md, "Async queues"), whatever the
timing.  C programs built with gcc -foffload=disable run through the shim on the host
device and on OpenCL (PoCL), each many times while other processes keep every core busy:

- tests/c/acc_async_order.c: consecutive copy constructs on one queue, GCC's
  deep-copy-10 (struct members on two queues in turn), implicit firstprivate scalars
  while the queue runs, a copied scalar the host rewrites before each construct, the
  acc_*_async routines on alternating queues, updates of one array on two queues
  ordered by acc_wait_async, and copies back on two queues the host waits for through
  a third;
- tests/c/acc_async_inputs.c: constructs queued behind a region that waits for the
  host take their firstprivate and copyin values when reached, and copy back only where
  their clauses say;
- tests/c/omp_nowait_chain.c: chains of 100 OpenMP target nowait tasks (regions,
  updates, enter and exit data, host tasks between) ordered by depend over one array;

and the same chain of Python kernels with ``nowait=True`` and ``depend``, on every device.

One wrong answer in any run fails the test.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp
from pygomp.csrc import shim

from test_fallback_regions import HERE, TIMEOUT
from test_shim import _env, _opencl_devices, _passed

PROGRAMS = {"acc_async_order": "-fopenacc", "acc_async_inputs": "-fopenacc",
            "omp_nowait_chain": "-fopenmp"}
RUNS = 6            # processes per program and device, each repeating its patterns
REPEATS = "3"


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    out = tmp_path_factory.mktemp("async-order")
    built = {}
    for name, flag in PROGRAMS.items():
        exe = out / name
        cmd = ["gcc", flag, "-foffload=disable", "-O1", "-Wall", str(HERE / f"{name}.c"),
               "-o", str(exe)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
        built[name] = str(exe)
    return built


@pytest.fixture(scope="module")
def busy():
    """A busy loop per core (and one more) for as long as the module's tests run."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range((os.cpu_count() or 2) + 1)]
    yield
    for h in hogs:
        h.kill()
        h.wait()


@pytest.mark.parametrize("where", ["host", "opencl"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_async_work_keeps_program_order_under_load(programs, busy, name, where):
    if where == "opencl" and not _opencl_devices():
        pytest.skip("no OpenCL device")
    for _ in range(RUNS):
        done = subprocess.run([programs[name], REPEATS],
                              env=_env(LD_PRELOAD=shim.path(), PYGOMP_DEVICES=where),
                              capture_output=True, text=True, timeout=TIMEOUT)
        _passed(done)
        assert f"{name} ok" in done.stdout


@omp.target
def add_index(y, k):
    for i in omp.parallel_range(y.shape[0]):
        y[i] += k + i


@pytest.mark.parametrize("present", [False, True], ids=["mapped", "present"])
def test_python_nowait_chain_keeps_order_under_load(device, busy, present):
    y = np.zeros(4096)
    with pygomp.target_data(device=device, tofrom=[y] if present else []):
        for k in range(100):
            add_index.on(device)(y, k, nowait=True, depend={"inout": [y]})
        pygomp.taskwait()
    np.testing.assert_array_equal(y, 100 * 99 // 2 + 100 * np.arange(4096.0))
