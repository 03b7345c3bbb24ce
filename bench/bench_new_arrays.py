"""Calls with new arrays against repeated calls, and the host device's copies, side by
side in one run.

    python bench/bench_new_arrays.py [--quick]
    python bench/bench_new_arrays.py --callgrind    # instructions a call, under valgrind

1. ``y[i] = 2 * x[i]`` on 1000 float64, on the initial device, the host device and PoCL:
   a repeated call (the same two arrays every call), a call with new arrays (arrays
   other than the last call's: the runtime sees new ones, 8 pairs in turn, so that the
   caches hold them), a call with fresh copies (``x.copy()`` and a new ``y`` each call,
   as PolyBench's harness does; numpy's own time for making them is shown apart), and
   new/repeated.  For PoCL, the same round trip in raw pyopencl (new buffers from the
   host arrays, the kernel, two reads, finish) and mapped call / raw: with one
   work-item an element, and with the runtime's launch (as many work-groups of one
   work-item, each looping), which tells the call's cost from the launch's.
2. The host device's copies: a fresh device allocation, a copy to it and back, and its
   free, against numpy's copyto and ctypes.memmove of the same bytes there and back, in
   GB/s, at 1, 16 and 64 MB.
3. ``--callgrind``: the instructions of one call (repeated, with new arrays, raw
   pyopencl's) on each device, counted by valgrind's callgrind in a child run with
   OMP_NUM_THREADS=1, where wall time is noise on a busy machine.  It counts the
   calling thread alone, so PoCL's figures include what a wait for its threads spins.

Times are the best of several batches, measured in alternation (`timing.duel`).
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import tempfile

os.environ.setdefault("PYGOMP_DEVICES", "host,opencl:pocl")

import numpy as np  # noqa: E402

import pygomp as omp  # noqa: E402
from pygomp.runtime import devices  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import duel  # noqa: E402

N = 1000
PAIRS = 8


@omp.target
def double(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = 2 * x[i]


def batches(k, calls):
    """The repeated, new and fresh cases of kernel ``k`` (a bound kernel), ``calls``
    calls a batch."""
    x, y = np.ones(N), np.zeros(N)
    pairs = [(np.ones(N), np.zeros(N)) for _ in range(PAIRS)]

    def same():
        for _ in range(calls):
            k(x, y)

    def new():
        for i in range(calls):
            k(*pairs[i % PAIRS])

    def fresh():
        for _ in range(calls):
            k(x.copy(), np.empty_like(y))

    def numpy_only():
        for _ in range(calls):
            x.copy(), np.empty_like(y)
    return {"same": same, "new": new, "fresh": fresh, "numpy": numpy_only}


RAW = """
__kernel void k(__global const double *x, __global double *y, long n)
{
    long i = get_global_id(0);
    if (i < n)
        y[i] = 2 * x[i];
}
__kernel void g(__global const double *x, __global double *y, long n)
{
    for (long i = get_group_id(1); i < n; i += get_num_groups(1))
        y[i] = 2 * x[i];
}
"""


def raw_pyopencl(dev, calls, gangs=0):
    """The PoCL round trip in raw pyopencl, ``calls`` times a batch: one work-item an
    element in groups PoCL chooses, or (``gangs``) the runtime's launch of the kernel,
    that many groups of one work-item."""
    import pyopencl as cl
    _, ctx, _ = dev.plugin.cl_device(dev.local)
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, RAW).build()
    kernel, size, group = (prg.g, (1, gangs), (1, 1)) if gangs else (prg.k, (N,), None)
    pairs = [(np.ones(N), np.zeros(N)) for _ in range(PAIRS)]
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR

    def raw():
        for i in range(calls):
            x, y = pairs[i % PAIRS]
            bx, by = cl.Buffer(ctx, flags, hostbuf=x), cl.Buffer(ctx, flags, hostbuf=y)
            kernel(queue, size, group, bx, by, np.int64(N))
            cl.enqueue_copy(queue, x, bx, is_blocking=False)
            cl.enqueue_copy(queue, y, by, is_blocking=False)
            queue.finish()
    return raw


def _gangs(dev):
    """The work-groups the runtime launches ``double`` with on ``dev`` (it has run)."""
    for k in dev.plugin._kernels.values():
        if k.info.name.startswith("double"):
            for plan in k.plans.values():
                return plan[0]
    return dev.info.properties["default_gangs"]


def calls_table(quick):
    calls, repeat = (50, 3) if quick else (300, 7)
    print(f"y[i] = 2 * x[i], {N} float64: microseconds a call (best of {repeat} batches "
          f"of {calls})")
    print(f"{'device':10} {'repeated':>9} {'new':>9} {'fresh':>9} {'(numpy)':>9} "
          f"{'new/rep':>8} {'raw ocl':>9} {'new/raw':>8} {'raw same':>9} {'new/same':>8}")
    for dev in devices.all_devices():
        if dev.plugin.name not in ("host", "opencl"):
            continue
        fs = batches(double.on(dev.number), calls)
        raw = dev.plugin.name == "opencl" and dev.info.kind == "cpu"
        if raw:
            fs["same"]()
            fs["raw"] = raw_pyopencl(dev, calls)
            fs["rawg"] = raw_pyopencl(dev, calls, _gangs(dev))
        t = {k: v / calls * 1e6 for k, v in duel(fs, repeat).items()}
        name = "initial" if dev.is_initial else f"{dev.number} {dev.plugin.name}"
        line = (f"{name:10} {t['same']:9.1f} {t['new']:9.1f} {t['fresh']:9.1f} "
                f"{t['numpy']:9.1f} {t['new'] / t['same']:8.2f}")
        if raw:
            line += (f" {t['raw']:9.1f} {t['new'] / t['raw']:8.2f} {t['rawg']:9.1f} "
                     f"{t['new'] / t['rawg']:8.2f}")
        print(line, flush=True)
    print("raw ocl: new buffers, the kernel, two reads, finish, one work-item an element; "
          "raw same:\nthe same with the runtime's launch (its work-groups of one item)")


def copies_table(quick):
    dev = next((d for d in devices.all_devices()
                if d.plugin.name == "host" and not d.is_initial), None)
    if dev is None:
        print("no host device: no copies")
        return
    p, local = dev.plugin, dev.local
    p.init_device(local)
    print("host device: fresh allocation, copy there and back, free; GB/s (2 x bytes)")
    print(f"{'MB':>4} {'pygomp':>8} {'copyto':>8} {'memmove':>8} {'pygomp/copyto':>14}")
    for mb in (1, 16) if quick else (1, 16, 64):
        n = mb << 20
        src, dst = np.ones(n // 8), np.zeros(n // 8)
        s, d = src.ctypes.data, dst.ctypes.data

        def pygomp():
            a = p.alloc(local, n)
            p.host2dev(local, a, s, n)
            p.dev2host(local, d, a, n)
            p.free(local, a)

        def copyto():
            np.copyto(dst, src)
            np.copyto(src, dst)

        def memmove():
            ctypes.memmove(d, s, n)
            ctypes.memmove(s, d, n)
        t = duel({"pygomp": pygomp, "copyto": copyto, "memmove": memmove},
                 3 if quick else 7)
        gb = {k: 2 * n / v / 1e9 for k, v in t.items()}
        print(f"{mb:4} {gb['pygomp']:8.1f} {gb['copyto']:8.1f} {gb['memmove']:8.1f} "
              f"{gb['pygomp'] / gb['copyto']:14.2f}", flush=True)


# -- instructions a call, under callgrind --------------------------------------------

CALLS = 50
CASES = ("same", "new", "raw", "rawg")
MEASURE = r"""
#include <valgrind/callgrind.h>
void pyg_measure(void (*f)(void), const char *name)
{
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
    f();
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(name);
}
"""


def _cases():
    """``(name, function running CALLS calls)`` of every case on every device."""
    for dev in devices.all_devices():
        if dev.plugin.name not in ("host", "opencl"):
            continue
        fs = batches(double.on(dev.number), CALLS)
        if dev.plugin.name == "opencl" and dev.info.kind == "cpu":
            fs["same"]()
            fs["raw"] = raw_pyopencl(dev, CALLS)
            fs["rawg"] = raw_pyopencl(dev, CALLS, _gangs(dev))
        tag = "initial" if dev.is_initial else f"{dev.plugin.name}{dev.number}"
        for case in CASES:
            if case in fs:
                yield f"{tag}_{case}", fs[case]


def inner_callgrind(path):
    """In the child run under valgrind: each case's calls counted alone, and dumped
    under the case's name (valgrind's client requests)."""
    lib = ctypes.CDLL(path)
    fn = ctypes.CFUNCTYPE(None)
    for name, f in _cases():
        f()                             # compiled, warm
        f()
        lib.pyg_measure(fn(f), name.encode())


def callgrind():
    from pygomp.plugins.host.plugin import compile_c
    with tempfile.TemporaryDirectory() as tmp:
        # valgrind runs no AVX-512: gcc builds for x86-64-v3 (its last -march wins),
        # the host device's kernels too, in a cache of their own
        cc = os.path.join(tmp, "cc")
        with open(cc, "w") as f:
            f.write('#!/bin/sh\nexec gcc "$@" -march=x86-64-v3\n')
        os.chmod(cc, 0o755)
        env = dict(os.environ, OMP_NUM_THREADS="1", CC=cc,
                   PYGOMP_CACHE_DIR=os.path.join(tmp, "cache"))
        so, out = os.path.join(tmp, "measure.so"), os.path.join(tmp, "cg.out")
        os.environ["CC"] = cc
        with open(so, "wb") as f:
            f.write(compile_c(MEASURE, "measure"))
        subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                        f"--callgrind-out-file={out}", sys.executable, __file__,
                        "--inner-callgrind", so], env=env, check=True, capture_output=True)
        count = {}
        for name in os.listdir(tmp):    # one file a dump: its trigger names the case
            if name.startswith("cg.out"):
                with open(os.path.join(tmp, name)) as f:
                    text = f.read()
                case = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
                total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
                if case and total:
                    count[case.group(1)] = int(total.group(1)) / CALLS
    print(f"instructions a call (callgrind, OMP_NUM_THREADS=1, {CALLS} calls; the calling "
          f"thread's alone,\nits waits for PoCL's threads included)")
    print(f"{'device':10} {'repeated':>10} {'new':>10} {'new/rep':>8} {'raw ocl':>10} "
          f"{'new/raw':>8} {'raw same':>10} {'new/same':>8}")
    for tag in dict.fromkeys(n.rsplit("_", 1)[0] for n in count):
        same, new = count[f"{tag}_same"], count[f"{tag}_new"]
        line = f"{tag:10} {same:10.0f} {new:10.0f} {new / same:8.2f}"
        if f"{tag}_raw" in count:
            raw, rawg = count[f"{tag}_raw"], count[f"{tag}_rawg"]
            line += f" {raw:10.0f} {new / raw:8.2f} {rawg:10.0f} {new / rawg:8.2f}"
        print(line)


def main():
    if "--inner-callgrind" in sys.argv:
        return inner_callgrind(sys.argv[-1])
    if "--callgrind" in sys.argv:
        return callgrind()
    quick = "--quick" in sys.argv
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    calls_table(quick)
    copies_table(quick)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
