"""OpenACC async compute constructs take their host inputs at the construct:
tests/c/acc_async_inputs.c, built with gcc -fopenacc -foffload=disable, queues loops of
constructs (implicit, firstprivate and copyin scalars, a scalar captured from a block,
copyin sections the host changes right after) behind a region that waits for the host,
on the host device and on OpenCL (PoCL); each must see the values of its own iteration,
and copies back must land only where their clauses say."""
from __future__ import annotations

import subprocess

import pytest

from pygomp import shim

from test_fallback_regions import HERE, TIMEOUT
from test_shim import _env, _opencl_devices, _passed


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    exe = tmp_path_factory.mktemp("acc-async-inputs") / "acc_async_inputs"
    cmd = ["gcc", "-fopenacc", "-foffload=disable", "-O1", "-Wall",
           str(HERE / "acc_async_inputs.c"), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
    return str(exe)


@pytest.mark.parametrize("where, type_", [("host", 2), ("opencl", 16)])
def test_async_constructs_read_their_inputs_when_reached(program, where, type_):
    if where == "opencl" and not _opencl_devices():
        pytest.skip("no OpenCL device")
    done = subprocess.run([program], env=_env(LD_PRELOAD=shim.path(), PYGOMP_DEVICES=where),
                          capture_output=True, text=True, timeout=TIMEOUT)
    _passed(done)
    assert f"device type {type_}\n" in done.stdout and "acc_async_inputs ok" in done.stdout
