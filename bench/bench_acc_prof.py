"""What OpenACC's profiling interface costs, measured side by side in one run.

    python bench/bench_acc_prof.py [--quick] [--against PYTHON]

An empty `#pragma acc parallel present(a)` over a 16-double array entered with
`acc enter data`, built with `gcc -fopenacc -foffload=disable`:
1. under libgomp alone (its host fallback, shared memory),
2. through libpygomp.so on the host device, no callback registered,
3. the same with a callback registered for compute_construct_start/end;
and from Python, `acc.update_device` of 16 present doubles, without and with a callback
(`acc.prof_register`).  `--against PYTHON` times rows 2 and the Python one without a
callback with another pygomp too (PYTHON: the interpreter of an environment where
another checkout is installed, e.g. one before the profiling interface), in turns with
this one, and prints their ratio.  Figures are the best of 7 repeats (and of 3 turns),
in CPU time of the calling thread.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <acc_prof.h>
static long seen;
static void count(acc_prof_info *p, acc_event_info *e, acc_api_info *a) { seen++; }
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
    if (argc > 2) {
        acc_prof_register(acc_ev_compute_construct_start, count, acc_reg);
        acc_prof_register(acc_ev_compute_construct_end, count, acc_reg);
    }
    #pragma acc enter data copyin(a)
    for (int rep = 0; rep < 8; rep++) {        /* the first one warms up */
        double t = now();
        for (int i = 0; i < n; i++) {
            #pragma acc parallel present(a)
            { a[0] += 1; }
        }
        t = (now() - t) / n;
        if (rep && t < best)
            best = t;
    }
    #pragma acc exit data delete(a)
    printf("%.6f %ld\n", best * 1e6, seen);
    return 0;
}
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACC_", "PYGOMP_PYTHON", "LD_PRELOAD"))}
    env["PYGOMP_DEVICES"] = "host"
    env.update(extra)
    return env


def c_region(exe, n, preload=None, callback=False):
    env = _env(LD_PRELOAD=preload) if preload else _env()
    args = [exe, str(n)] + (["cb"] if callback else [])
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[0])


def python_update(n, callback=False):
    """Microseconds of one acc.update_device (run in a fresh process by `py_row`)."""
    import numpy as np
    from pygomp import openacc as acc
    a = np.zeros(16)
    seen = []
    if callback:
        for ev in (acc.ev_update_start, acc.ev_update_end):
            acc.prof_register(ev, seen.append)
    acc.copyin(a)
    best = 1e9
    for _ in range(7):
        t = time.thread_time()
        for _ in range(n):
            acc.update_device(a)
        best = min(best, (time.thread_time() - t) / n)
    acc.delete(a)
    return best * 1e6


def py_row(python, n, callback=False):
    args = [python, os.path.abspath(__file__), "--python-row", str(n)]
    out = subprocess.run(args + (["cb"] if callback else []), env=_env(),
                         capture_output=True, text=True, check=True)
    return float(out.stdout)


def library(python):
    return subprocess.run([python, "-m", "pygomp", "shim"], env=_env(), capture_output=True,
                          text=True, check=True).stdout.strip()


def main(quick=False, against=None):
    n = 2000 if quick else 20000
    lib = library(sys.executable)
    other = library(against) if against else None
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "region.c"), os.path.join(tmp, "region")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["gcc", "-O2", "-fopenacc", "-foffload=disable", src, "-o", exe],
                       check=True)
        runs = {"C under libgomp alone (host fallback)": lambda: c_region(exe, n * 10),
                "C through libpygomp.so, no callback": lambda: c_region(exe, n, lib),
                "C through libpygomp.so, a callback": lambda: c_region(exe, n, lib, True),
                "Python acc.update_device, no callback": lambda: py_row(sys.executable, n),
                "Python acc.update_device, a callback":
                    lambda: py_row(sys.executable, n, True)}
        if other:
            runs["C, no callback, --against's library"] = lambda: c_region(exe, n, other)
            runs["Python, no callback, --against's"] = lambda: py_row(against, n)
        best = {name: 1e9 for name in runs}
        for _ in range(1 if quick else 3):          # in turns: a busy machine drifts
            for name, fn in runs.items():
                best[name] = min(best[name], fn())
    base = best["C under libgomp alone (host fallback)"]
    print("empty acc parallel, data present (PYGOMP_DEVICES=host); acc.update_device")
    for name, us in best.items():
        print(f"  {name:42s} {us:9.3f} us   {us / base:8.1f}x libgomp")

    def ratio(label, a, b):
        print(f"  {label:42s} {best[a] / best[b]:9.3f}x")
    ratio("C: callback / no callback", "C through libpygomp.so, a callback",
          "C through libpygomp.so, no callback")
    ratio("Python: callback / no callback", "Python acc.update_device, a callback",
          "Python acc.update_device, no callback")
    if other:
        ratio("C, no callback: this / --against", "C through libpygomp.so, no callback",
              "C, no callback, --against's library")
        ratio("Python, no callback: this / --against",
              "Python acc.update_device, no callback", "Python, no callback, --against's")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--python-row"]:
        print(python_update(int(sys.argv[2]), len(sys.argv) > 3))
    else:
        main("--quick" in sys.argv,
             sys.argv[sys.argv.index("--against") + 1] if "--against" in sys.argv else None)
