"""pygomp.upc under `mpiexec -n 2` and `-n 3`, on host devices, PoCL, both in one rank,
and the initial device.

Each test launches mpiexec as a subprocess with a time limit (and PYGOMP_UPC_TIMEOUT on
every collective inside), so a rank that breaks fails the test instead of hanging it.
The ranks run tests/mpi/*.py and examples/upc_stencil.py; each rank prints its verdict.
"""
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
    shutil.which("mpiexec")
LIMIT = 240             # seconds for one whole mpiexec run (cold kernel builds included)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or MPIEXEC is None,
    reason="needs mpi4py and mpiexec: pip install 'pygomp[mpi]'")

DEVICES = [pytest.param("host", id="host"),
           pytest.param("none", id="initial"),      # no offload device: shared memory
           pytest.param("opencl:pocl", id="pocl", marks=pytest.mark.skipif(
               importlib.util.find_spec("pyopencl") is None, reason="needs pyopencl[pocl]")),
           pytest.param("opencl:pocl,host", id="pocl+host", marks=pytest.mark.skipif(
               importlib.util.find_spec("pyopencl") is None, reason="needs pyopencl[pocl]"))]


def mpirun(n, *argv, timeout=LIMIT, **env):
    """Run ``mpiexec -n n python argv...`` (an env value None: unset); (exit status,
    output, seconds)."""
    env = {k: v for k, v in {**os.environ, "PYGOMP_UPC_TIMEOUT": "60", **env}.items()
           if v is not None}
    start = time.monotonic()
    proc = subprocess.Popen([MPIEXEC, "-n", str(n), sys.executable, *map(str, argv)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=ROOT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"mpiexec -n {n} {argv} hung for {timeout} s:\n{out}")
    return proc.returncode, out, time.monotonic() - start


def ranks_ok(out, n):
    """Every rank printed its "rank R: ok" (mpiexec may glue lines of two ranks)."""
    return all(f"rank {r}: ok," in out for r in range(n))


@pytest.mark.parametrize("devices", DEVICES)
@pytest.mark.parametrize("n, per_rank", [(2, "2"), (3, None)])
def test_checks_on_every_rank(n, per_rank, devices):
    """Layout through MPI, remote reads/writes, pointers, forall, all_reduce, with the
    parts resident on their devices."""
    rc, out, _ = mpirun(n, "tests/mpi/upc_checks.py", PYGOMP_DEVICES=devices,
                        PYGOMP_UPC_DEVICES_PER_RANK=per_rank, PYGOMP_INFO="4")
    threads = n * int(per_rank or 1)
    assert rc == 0 and ranks_ok(out, n), out
    assert f"THREADS {threads}" in out, out
    assert "at exit" not in out, "the arrays left at exit are unmapped too"


PART = 8 << 14          # bytes of the one part in tests/mpi/upc_copies.py
COPIES = {"forall": [], "read one": [("from", 8)], "read a run": [("from", 800)],
          "write one": [("to", 8)], "write two runs": [("to", 24), ("to", 8)],
          "forall after writes": [], "local": [("from", PART)],
          "forall after local": [("to", PART)], "read all": [("from", PART)], "free": []}


@pytest.mark.parametrize("devices", [d for d in DEVICES if d.id in ("host", "pocl")])
def test_host_accesses_copy_just_the_elements_they_touch(devices):
    """The part stays on the device: a kernel copies nothing, a host access copies the
    elements it touches (PYGOMP_INFO=8 reports each copy)."""
    rc, out, _ = mpirun(1, "tests/mpi/upc_copies.py", PYGOMP_DEVICES=devices,
                        PYGOMP_INFO="8")
    assert rc == 0 and "copies: ok" in out, out
    made, step = {}, None
    for line in out.splitlines():
        if line.startswith("step "):
            step = line[len("step "):]
            made[step] = []
        copy = re.search(r"copy (to|from) device \[0x([0-9a-f]+)\.\.0x([0-9a-f]+)\)", line)
        if copy and step:
            made[step].append((copy[1], int(copy[3], 16) - int(copy[2], 16)))
    assert {k: made.get(k) for k in COPIES} == COPIES, out


@pytest.mark.parametrize("n, devices", [(2, None), (3, "host")])
def test_stencil_example(n, devices):
    """As the README runs it (every device: PoCL and the host CPU), and on 3 ranks."""
    rc, out, _ = mpirun(n, "examples/upc_stencil.py", "4099", "9", PYGOMP_DEVICES=devices)
    assert rc == 0 and "dot product ok" in out and "stencil ok" in out, out


def test_info_shows_each_rank():
    rc, out, _ = mpirun(2, "-m", "pygomp", "info", PYGOMP_DEVICES="host",
                        PYGOMP_UPC_DEVICES_PER_RANK="2")
    assert rc == 0, out
    assert "THREADS = 4 on 2 rank(s)" in out and "PYGOMP_UPC_DEVICES_PER_RANK = 2" in out
    assert "rank 1 (node-local rank 1 of 2): threads 2, 3 on devices 0, 0" in out, out
    assert out.count("devices:") == 1, "only rank 0 prints"


FAILURES = {
    "raise": "ValueError: rank {last} gives up",
    "skip": "the ranks are not in the same collective call",
    "stall": "waited 2 s (PYGOMP_UPC_TIMEOUT) for the other ranks",
    "mismatch": "shared_array: the ranks asked for different arrays",
    "kernel": "upc_fail.py:{line}: ",             # the kernel's file and line
}
BAD_LINE = next(i for i, text in enumerate((ROOT / "tests/mpi/upc_fail.py").read_text()
                                           .splitlines(), 1) if "{j: 1}" in text)


@pytest.mark.parametrize("n, how", [(2, how) for how in FAILURES if how != "stall"]
                         + [(3, "raise"), (3, "skip"), (3, "stall")])
def test_a_rank_that_fails_stops_the_job_with_its_error(n, how):
    rc, out, seconds = mpirun(n, "tests/mpi/upc_fail.py", how, timeout=60,
                              PYGOMP_DEVICES="host", PYGOMP_UPC_TIMEOUT="2")
    assert rc != 0 and "passed the barrier" not in out, out
    assert FAILURES[how].format(last=n - 1, line=BAD_LINE) in out, out
    assert "aborting all ranks" in out or "pygomp.upc: rank" in out, out
    assert seconds < 50, f"took {seconds:.0f} s"
