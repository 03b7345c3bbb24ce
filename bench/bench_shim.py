"""The C face's cost: an empty target region with its data present, side by side.

    python bench/bench_shim.py [--quick]

1. C through libpygomp.so on the host device (separate memory; LD_PRELOAD),
2. the same C program under libgomp alone (its host fallback: shared memory, no map),
3. the same region from Python: an empty @omp.target kernel on the host device with
   its array present (target_data).

The C program times N regions `#pragma omp target map(tofrom: a)` over a 16-double
array entered with `target enter data`; every figure is the best of 7 repeats, in CPU
time of the calling thread (the regions run in it), so that other processes on a busy
machine change the figures little.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("PYGOMP_DEVICES", "host")

import numpy as np  # noqa: E402

import pygomp as omp  # noqa: E402
from pygomp import shim  # noqa: E402

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
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    double a[16] = {0}, best = 1e9;
    #pragma omp target enter data map(to: a)
    for (int rep = 0; rep < 8; rep++) {        /* the first one warms up */
        double t = now();
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


def c_region(exe, n, preload):
    env = dict(os.environ)
    if preload:
        env["LD_PRELOAD"] = preload
    out = subprocess.run([exe, str(n)], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout)


@omp.target(map={"a": "tofrom"})
def empty(a):
    pass


def python_region(n):
    a = np.zeros(16)
    dev = omp.omp_get_default_device()
    run = empty.on(dev)
    with omp.target_data(device=dev, tofrom=[a]):
        run(a)
        best = 1e9
        for _ in range(7):
            t = time.thread_time()
            for _ in range(n):
                run(a)
            best = min(best, (time.thread_time() - t) / n)
    return best * 1e6


def main(quick=False):
    n = 2000 if quick else 20000
    lib = shim.path()
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "region.c"), os.path.join(tmp, "region")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["gcc", "-O2", "-fopenmp", "-foffload=disable", src, "-o", exe],
                       check=True)
        rows = [("C through libpygomp.so, host device", c_region(exe, n, lib)),
                ("C under libgomp alone (host fallback)", c_region(exe, n * 10, None)),
                ("Python kernel, host device", python_region(n))]
    base = rows[1][1]
    print(f"empty target region, data present (PYGOMP_DEVICES={os.environ['PYGOMP_DEVICES']})")
    for name, us in rows:
        print(f"  {name:40s} {us:9.3f} us   {us / base:8.1f}x libgomp")


if __name__ == "__main__":
    main("--quick" in sys.argv)
