"""What the fault report and the guard cost a call on the host device.

    python bench/bench_faults.py [--calls 20000] [--repeat 7]

A kernel of 1, 3 and 6 arrays of 16 float64 (each call adds 1 to the first element of
each, sequentially: no OpenMP region, whose cost varies more than what is measured)
is loaded on the host device; its compiled entry is then called with the same argument
words in two ways, in turns: directly through cffi, and as the plugin calls it
(`pygomp.runtime.faults`: the kernel's line held while it runs, then the guards of
its arrays compared, in C, and the result tested in Python).  The difference is what
the report and the guard add to each call; "reported alone" is the initial device's
way, the line held and no guard compared (one C call, no Python frame).  Best of --repeat runs of --calls calls,
in the calling thread's CPU time (ns per call).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pygomp as omp  # noqa: E402
from pygomp.runtime import devices, faults  # noqa: E402

from pygomp.plugins.host import plugin as host  # noqa: E402


@omp.target(boundscheck=False)
def one(a):
    a[0] += 1.0


@omp.target(boundscheck=False)
def three(a, b, c):
    a[0] += 1.0
    b[0] += 1.0
    c[0] += 1.0


@omp.target(boundscheck=False)
def six(a, b, c, d, e, f):
    a[0] += 1.0
    b[0] += 1.0
    c[0] += 1.0
    d[0] += 1.0
    e[0] += 1.0
    f[0] += 1.0


def best(fn, calls, repeat):
    out = []
    for _ in range(repeat):
        t = time.thread_time_ns()
        for _ in range(calls):
            fn()
        out.append((time.thread_time_ns() - t) / calls)
    return min(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    dev = next((d for d in devices.all_devices()
                if d.plugin.name == "host" and not d.is_initial), None)
    if dev is None:
        sys.exit("no host device")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    print(f"host device {dev.number}, best of {a.repeat} x {a.calls} calls, ns per call:")
    print("  arrays  direct  reported+guarded  added  reported alone  added")
    for kernel in (one, three, six):
        arrays = [np.zeros(16) for _ in kernel.param_names]
        kernel.on(dev.number)(*arrays)          # built and loaded
        k = next(k for k in dev.plugin._kernels.values()
                 if k.info.name == kernel.__name__)
        addrs = [dev.plugin.alloc(0, 128) for _ in arrays]
        words = []
        for p in addrs:
            words += [p, 16]
        array = host._words_array(words)
        plan = k.plan((0, 0, 0))[1]
        raw = host._ffi.cast(host.KERNEL_TYPE, k.address)
        run = faults.runner(host.compile_c, host._compiler_id())
        who = faults.line(k.info, dev.plugin.label(0))
        reported = host._reported(k.info, k.address, run, who, True, dev.plugin.label(0))
        initial = host._reported(k.info, k.address, run, who, False, dev.plugin.label(0))
        times = {"direct": [], "reported": [], "initial": []}
        for _ in range(3):                      # in turns
            times["direct"].append(best(lambda: raw(array, plan), a.calls, a.repeat))
            times["reported"].append(best(lambda: reported(array, plan), a.calls, a.repeat))
            times["initial"].append(best(lambda: initial(array, plan), a.calls, a.repeat))
        d, r, i = (min(times[k]) for k in ("direct", "reported", "initial"))
        print(f"  {len(arrays):6d}  {d:6.0f}  {r:16.0f}  {r - d:5.0f}  {i:14.0f}  {i - d:5.0f}")
        for p in addrs:
            dev.plugin.free(0, p)


if __name__ == "__main__":
    main()
