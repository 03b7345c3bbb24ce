"""Ctrl-C during a kernel call: the caller gets KeyboardInterrupt and the kernel stops,
on every device (OpenCL between launches: a launch runs to its end); a stopped region
copies nothing back and leaves nothing mapped, and the next call is right.  Each case
is a fresh process sent SIGINT as a terminal sends it."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import pygomp as omp

PROGRAM = textwrap.dedent("""
    import sys, time, numpy as np, pygomp as omp
    from pygomp.runtime import devices

    @omp.target
    def step(x):
        for i in omp.parallel_range(x.shape[0]):
            x[i] += 1.0

    @omp.target
    def forever(x, n: int):                 # a sequential loop far longer than a test
        for i in omp.parallel_range(x.shape[0]):
            s = 0.0
            k = 0
            while k < n:
                for j in range(n):
                    s += j * 1e-9
                k += 1
            x[i] = s

    dev, mode = int(sys.argv[1]), sys.argv[2]
    x = np.zeros(64)
    step.on(dev)(x), forever.on(dev)(x, 1)      # compiled and loaded: x is 0 again
    print("ready", flush=True)
    try:
        if mode == "launches":
            while True:
                step.on(dev)(x)
        elif mode == "tasks":               # Ctrl-C in taskwait stops what it waits for
            forever.on(dev)(x, 10**12, nowait=True, depend={"out": [x]})
            step.on(dev)(x, nowait=True, depend={"inout": [x]})
            omp.taskwait()
        else:
            forever.on(dev)(x, 10**12)
    except KeyboardInterrupt:
        d = devices.resolve(dev)
        mapped = [e for e in d.map if e.refcount != float("inf")]   # not the images'
        print("interrupted", "initial" if d.is_initial else "mapped %d" % len(mapped))
    before = x.copy()
    step.on(dev)(x)
    print("next call right", bool((x == before + 1).all()))
    if mode != "launches" and not d.is_initial:
        print("nothing copied back", bool((before == 0).all()))
""")


def interrupted(tmp_path, device, mode, devices="host,opencl"):
    """The lines PROGRAM prints when sent SIGINT once its kernels are ready."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    env = dict(os.environ, PYGOMP_DEVICES=devices)
    p = subprocess.Popen([sys.executable, str(tmp_path / "prog.py"), str(device), mode],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline() == "ready\n", p.stderr.read()
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    return out.splitlines()


@pytest.mark.parametrize("mode", ["one launch", "launches", "tasks"])
def test_ctrl_c_stops_a_kernel_on_the_host_device(tmp_path, mode):
    out = interrupted(tmp_path, 0, mode)
    assert out[:2] == ["interrupted mapped 0", "next call right True"]
    assert out[2:] == ([] if mode == "launches" else ["nothing copied back True"])


@pytest.mark.parametrize("mode", ["one launch", "launches", "tasks"])
def test_ctrl_c_stops_a_kernel_on_the_initial_device(tmp_path, mode):
    assert interrupted(tmp_path, 1, mode, devices="host") == [
        "interrupted initial", "next call right True"]


def test_ctrl_c_stops_opencl_between_launches(tmp_path):
    from pygomp.runtime import devices
    if not any(d.plugin.name == "opencl" for d in devices.all_devices()):
        pytest.skip("no OpenCL device")
    assert interrupted(tmp_path, 0, "launches", devices="opencl") == [
        "interrupted mapped 0", "next call right True"]


LONG_C = r"""
#include <stdio.h>
int main(void)
{
    double x[64] = {0};
    #pragma omp target map(tofrom: x)
    {
        printf("ready\n");
        fflush(stdout);
        for (long k = 0; k < 1000000000000L; k++)
            x[k % 64] += 1e-9;
    }
    printf("%g\n", x[0]);
    return 0;
}
"""


def test_sigint_ends_a_c_program_under_the_shim_as_under_libgomp(tmp_path):
    from pygomp.csrc import shim
    (tmp_path / "long.c").write_text(LONG_C)
    exe = tmp_path / "long"
    subprocess.run(["gcc", "-fopenmp", "-foffload=disable", "-O1", str(tmp_path / "long.c"),
                    "-o", str(exe)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_DEV"))}
    p = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, text=True,
                         env=dict(env, PYGOMP_DEVICES="host", LD_PRELOAD=shim.path()),
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline() == "ready\n"
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == -signal.SIGINT
    finally:
        p.kill()


def chunked_loops(x, out, n: int, step: int):
    for i in omp.parallel_range(out.shape[0]):
        s = 0.0
        k = 0
        for k in range(i, n, 3):                # past a chunk's end, a step of 3
            if k % 7 == 0:
                continue
            s += x[k % x.shape[0]]
        last = k
        for j in range(n - 1, -1, -2):          # a negative step
            s += j * 0.5
        for j in range(0, n, step):             # a step known only at run time
            s -= x[j % x.shape[0]]
        out[i] = s + last


@pytest.mark.parametrize("n", [1, 4096 * 3 + 5])
def test_loops_split_for_the_stop_test_compute_what_python_does(device, n):
    import numpy as np
    kernel = omp.target(chunked_loops)
    x, out, want = np.arange(1.0, 51.0), np.zeros(8), np.zeros(8)
    chunked_loops(x, want, n, 5)
    kernel.on(device)(x, out, n, 5)
    np.testing.assert_allclose(out, want)
    src = kernel.source(x, out, n, 5)
    assert src.count("pygomp_stops != stops_") == 3    # two in chunks, one each time
