"""The C face, measured side by side in one run.

    python bench/bench_shim.py [--quick] [--startup]

An empty target region with its data present:
1. C through libpygomp.so on the host device (separate memory; LD_PRELOAD),
2. the same C program under libgomp alone (its host fallback: shared memory, no map),
3. the same region from Python: an empty @omp.target kernel on the host device with
   its array present (target_data).
The C program times N regions `#pragma omp target map(tofrom: a)` over a 16-double
array entered with `target enter data`; every figure is the best of 7 repeats, in CPU
time of the calling thread (the regions run in it), so that other processes on a busy
machine change the figures little.

A region that maps one small struct ``to`` (not present: mapped, copied in and
unmapped by every region, as in a launch-overhead benchmark's loop), the same C
program through libpygomp.so and under libgomp alone.

From its second time on, C runs either region by the plan Python gave it, without
entering Python (csrc/README.md, "How a construct runs").

saxpy on PoCL, examples/c/kernels.py's kernel on a million floats kept present by
`target data`: called from C through the table `python -m pygomp build` writes, and
called from Python (wall-clock time, best of 7 repeats: the kernel runs in PoCL's
threads).

Start-up: whole processes, best of 9 in wall-clock and in CPU time (the programs start
and end in turn): a program with one empty target region (`map(tofrom: x)`) and one
with none, under libgomp alone and under libpygomp.so on the host device, with every
device (PYGOMP_DEVICES unset: the region runs on the host plugin's device, PoCL's
devices are counted, not started), and with the region on PoCL (what starting the
embedded Python, pygomp and the devices costs a program).  ``--startup`` measures start-up alone.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("PYGOMP_DEVICES", "host,opencl:pocl")   # 0: host, 1: PoCL

import numpy as np  # noqa: E402

import pygomp as omp  # noqa: E402
from pygomp.csrc import shim  # noqa: E402

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
struct params { double x, y, z; int n; };
int main(int argc, char **argv)
{
    int n = atoi(argv[1]), small_to = argc > 2;
    double a[16] = {0}, best = 1e9;
    struct params p = {1, 2, 3, 4};
    #pragma omp target enter data map(to: a)
    for (int rep = 0; rep < 8; rep++) {        /* the first one warms up */
        double t = now();
        if (small_to)
            for (int i = 0; i < n; i++) {
                #pragma omp target map(to: p)
                { p.n += 1; }
            }
        else
            for (int i = 0; i < n; i++) {
                #pragma omp target map(tofrom: a)
                { }
            }
        t = (now() - t) / n;
        if (rep && t < best)
            best = t;
    }
    #pragma omp target exit data map(release: a)
    printf("%.6f\n", best * 1e6);
    return 0;
}
"""


def c_region(exe, n, preload, *mode):
    env = dict(os.environ, PYGOMP_DEVICES="host")
    if preload:
        env["LD_PRELOAD"] = preload
    out = subprocess.run([exe, str(n), *mode], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout)


SAXPY = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
void saxpy(float a, const float *x, int64_t x_n0, float *y, int64_t y_n0);
int main(int argc, char **argv)
{
    int64_t n = atol(argv[1]), calls = atol(argv[2]);
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    double best = 1e9;
    #pragma omp target data map(to: x[0:n]) map(tofrom: y[0:n])
    for (int rep = 0; rep < 8; rep++) {        /* the first one warms up */
        double t = omp_get_wtime();
        for (int64_t i = 0; i < calls; i++)
            saxpy(2.0f, x, n, y, n);
        t = (omp_get_wtime() - t) / calls;
        if (rep && t < best)
            best = t;
    }
    printf("%.6f\n", best * 1e6);
    return 0;
}
"""
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "c")

STARTUP = {"one empty region": "int main(void) { int x = 0;\n"
                               "#pragma omp target map(tofrom: x)\n x += 1;\n return x != 1; }\n",
           "no region": "int main(void) { int s = 0;\n#pragma omp parallel for reduction(+: s)\n"
                        " for (int i = 0; i < 100; i++) s += i;\n return s != 4950; }\n"}


def _cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def startup(tmp, lib, repeat=9):
    """{program: {runtime: (best wall-clock seconds, best CPU seconds)}} of whole
    processes, run in turn (CPU time, every thread's, changes less on a busy machine)."""
    runtimes = {"libgomp alone": {}, "shim, host device": {"LD_PRELOAD": lib,
                                                           "PYGOMP_DEVICES": "host"},
                "shim, every device": {"LD_PRELOAD": lib},       # PYGOMP_DEVICES unset
                "shim, region on PoCL": {"LD_PRELOAD": lib, "OMP_DEFAULT_DEVICE": "1",
                                         "PYGOMP_DEVICES": "host,opencl:pocl"}}
    out = {}
    for name, text in STARTUP.items():
        src, exe = os.path.join(tmp, "start.c"), os.path.join(tmp, name.replace(" ", "_"))
        with open(src, "w") as f:
            f.write(text)
        subprocess.run(["gcc", "-O2", "-fopenmp", "-foffload=disable", src, "-o", exe],
                       check=True)
        best = dict.fromkeys(runtimes, (1e9, 1e9))
        for _ in range(repeat):
            for rt, extra in runtimes.items():
                env = {k: v for k, v in os.environ.items()
                       if k not in ("LD_PRELOAD", "PYGOMP_DEVICES", "OMP_DEFAULT_DEVICE")}
                cpu, t = _cpu(), time.perf_counter()
                subprocess.run([exe], env={**env, **extra}, check=True)
                t, cpu = time.perf_counter() - t, _cpu() - cpu
                best[rt] = (min(best[rt][0], t), min(best[rt][1], cpu))
        out[name] = best
    return out


@omp.target(map={"a": "tofrom"})
def empty(a):
    pass


def python_region(n):
    a = np.zeros(16)
    run = empty.on(0)
    with omp.target_data(device=0, tofrom=[a]):
        run(a)
        best = 1e9
        for _ in range(7):
            t = time.thread_time()
            for _ in range(n):
                run(a)
            best = min(best, (time.thread_time() - t) / n)
    return best * 1e6


def python_saxpy(size, calls):
    import runpy
    saxpy = runpy.run_path(os.path.join(EXAMPLE, "kernels.py"))["saxpy"]
    x, y = np.zeros(size, np.float32), np.zeros(size, np.float32)
    run = saxpy.on(1)
    a = np.float32(2.0)
    with omp.target_data(device=1, to=[x], tofrom=[y]):
        run(a, x, y)
        best = 1e9
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(calls):
                run(a, x, y)
            best = min(best, (time.perf_counter() - t) / calls)
    return best * 1e6


def c_saxpy(tmp, lib, size, calls):
    tables, src, exe = (os.path.join(tmp, f) for f in ("tables.c", "saxpy.c", "saxpy"))
    subprocess.run([sys.executable, "-m", "pygomp", "build", os.path.join(EXAMPLE, "kernels.py"),
                    "-o", tables], check=True)
    with open(src, "w") as f:
        f.write(SAXPY)
    subprocess.run(["gcc", "-O2", "-fopenmp", "-foffload=disable", src, tables, "-o", exe],
                   check=True)
    env = dict(os.environ, LD_PRELOAD=lib, OMP_DEFAULT_DEVICE="1")
    out = subprocess.run([exe, str(size), str(calls)], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout)


def print_startup(starts):
    print("start-up, whole processes (best of runs in turn): wall clock, CPU time")
    for name, best in starts.items():
        base = best["libgomp alone"]
        print(f"  {name}:")
        for rt, (t, cpu) in best.items():
            more = (f"   +{(t - base[0]) * 1e3:6.1f} ms, +{(cpu - base[1]) * 1e3:6.1f} ms"
                    if rt != "libgomp alone" else "")
            print(f"    {rt:24s} {t * 1e3:7.1f} ms {cpu * 1e3:7.1f} ms{more}")


def main(quick=False, only_startup=False):
    n = 2000 if quick else 20000
    size, calls = 1_000_000, (20 if quick else 100)
    lib = shim.path()
    if only_startup:
        with tempfile.TemporaryDirectory() as tmp:
            starts = startup(tmp, lib, 3 if quick else 9)
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
        print_startup(starts)
        return
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "region.c"), os.path.join(tmp, "region")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["gcc", "-O2", "-fopenmp", "-foffload=disable", src, "-o", exe],
                       check=True)
        rows = [("C through libpygomp.so, host device", c_region(exe, n, lib)),
                ("C under libgomp alone (host fallback)", c_region(exe, n * 10, None)),
                ("Python kernel, host device", python_region(n))]
        small = [("C through libpygomp.so, host device", c_region(exe, n, lib, "to")),
                 ("C under libgomp alone (host fallback)", c_region(exe, n * 10, None, "to"))]
        starts = startup(tmp, lib, 3 if quick else 9)
        pocl = omp.omp_get_num_devices() > 1 and [
            ("C through its table (python -m pygomp build)", c_saxpy(tmp, lib, size, calls)),
            ("Python", python_saxpy(size, calls))]
    base = rows[1][1]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    print(f"empty target region, data present (PYGOMP_DEVICES={os.environ['PYGOMP_DEVICES']})")
    for name, us in rows:
        print(f"  {name:46s} {us:9.3f} us   {us / base:8.1f}x libgomp")
    print("target region mapping one small struct `to` (absent: mapped in each region)")
    for name, us in small:
        print(f"  {name:46s} {us:9.3f} us   {us / small[1][1]:8.1f}x libgomp")
    if pocl:
        print(f"saxpy of {size} floats on PoCL, data present")
        for name, us in pocl:
            print(f"  {name:46s} {us:9.1f} us   {us / pocl[1][1]:8.2f}x Python")
    else:
        print("saxpy on PoCL: no OpenCL device")
    print_startup(starts)


if __name__ == "__main__":
    main("--quick" in sys.argv, "--startup" in sys.argv)
