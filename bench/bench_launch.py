"""What a launch costs on an OpenCL device: pygomp against raw pyopencl enqueues of the
same cl.Kernel objects with the same arguments set, side by side in one run.

    .venv/bin/python bench/bench_launch.py [--device pocl] [--calls 2000] [--repeat 7]
                                           [--clock wall|cpu]

- call: a kernel of 1, 3 and 6 arrays of 16x16 float64, kept present (target_data), each
  adding 1 to one element of each array: the whole call ``k(*arrays)``, against
  ``cl.enqueue_nd_range_kernel(...).wait()`` of its entry (arguments set once);
- launch: the prepared kernel's launch alone, ``plugin.run_async`` of its words (the
  queue finished every 50 launches; from C where plugins/opencl/fast.py could be
  built), against ``cl.enqueue_nd_range_kernel`` alone;
- program: a kernel whose sequential loop around a parallel loop becomes a loop of
  launches (--steps + 1 a call: a round's entry, made twice so that the carried
  scalars' areas alternate, and the first), against a Python loop enqueuing the same
  entries in the same order (its loop count read back as pygomp reads it), per launch.
The program row runs the launches (PYGOMP_OPENCL_ONE_GROUP=0: not the kernel's one-group
variant, which bench/polybench/run.py measures).  Best per-call (or per-launch) time of chunks of 50 calls (1 for program), the contenders
in turn.  With --clock cpu the time is the calling thread's CPU time: what a launch
costs the caller (Python and the driver's enqueue), not the device's work, which runs
on PoCL's threads; on a busy machine it moves far less than wall-clock time.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import pygomp
import pygomp.kernels as omp
from bench_dispatch import KERNELS, opencl_raw, words
from pygomp.runtime import mapping
from timing import opencl_device


@omp.target
def steps(t: int, a):
    for s in range(t):
        for i in omp.parallel_range(a.shape[0]):
            a[i] += 1.0


def duel(fns, calls, repeat, chunk=50, clock=time.perf_counter):
    """Best time per call of each function over the chunks of ``chunk`` calls of
    ``repeat`` rounds of ``calls`` calls; the functions take turns every chunk (the best
    chunk, not the sum, so that a loaded machine's pauses drop out)."""
    best = {k: float("inf") for k in fns}
    for f in fns.values():
        f()
    for _ in range(repeat * max(calls // chunk, 1)):
        for k, f in fns.items():
            t = clock()
            for _ in range(chunk):
                f()
            best[k] = min(best[k], (clock() - t) / chunk)
    return best


def loaded(dev, kernel, arrays):
    """The plugin's loaded kernel and its function address for a call with ``arrays``."""
    spec = kernel.spec(tuple(arrays))
    fn = mapping.function_address(dev, spec.symbol.address)
    return dev.plugin._kernels[fn], fn


def program_raw(dev, k, queue, t):
    """The entries of ``steps``'s program enqueued from Python in the program's order:
    a ``repeat`` reads its count from the scratch word as pygomp does; and the number
    of launches a call."""
    import pyopencl as cl
    gangs, plan = k.plans[(0, 0, 0)][:2]
    scratch = k.buffers["scratch"][0]
    word = np.zeros(1, np.int64)
    launches = [0]

    def walk(ops):
        for op in ops:
            if isinstance(op, int):
                entry, gsize, local, _ = plan[op]
                cl.enqueue_nd_range_kernel(queue, entry, gsize, local)
                launches[0] += 1
            else:           # steps has "repeat" loops only
                cl.enqueue_copy(queue, word, scratch, src_offset=8 * op[1], is_blocking=True)
                for _ in range(int(word[0])):
                    walk(op[2])
    walk(k.info.program)
    queue.finish()
    return lambda: (walk(k.info.program), queue.finish()), launches[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="pocl")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args()
    os.environ["PYGOMP_OPENCL_ONE_GROUP"] = "0"
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    import pyopencl as cl
    dev = opencl_device(args.device)
    dev.ensure_init()
    _, _, queue = dev.plugin.cl_device(dev.local)
    print(f"device {dev.number}: {dev.info.name}; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cpus; best of {args.repeat} x {args.calls}; "
          f"{args.clock} clock")
    print(f"  {'what':<9} {'arrays':>6} {'pygomp us':>10} {'raw us':>8} {'ratio':>6}")

    def row(what, n, t):
        print(f"  {what:<9} {n:>6} {t['pygomp'] * 1e6:>10.2f} {t['raw'] * 1e6:>8.2f} "
              f"{t['pygomp'] / t['raw']:>6.2f}", flush=True)

    for n, kernel in KERNELS.items():
        arrays = [np.zeros((16, 16)) for _ in range(n)]
        call = kernel.on(dev.number)
        with pygomp.target_data(dev.number, tofrom=arrays):
            call(*arrays)
            raw, k = opencl_raw(dev, kernel, arrays)
            row("call", n, duel({"pygomp": lambda: call(*arrays), "raw": raw},
                                args.calls, args.repeat))
            _, fn = loaded(dev, kernel, arrays)
            w = words(dev, kernel, arrays)
            (entry, gsize, local, _), = k.plans[(0, 0, 0)][1]
            count = [0]

            def every(f):
                def g():
                    f()
                    count[0] += 1
                    if count[0] % 50 == 0:
                        queue.finish()
                return g
            row("launch", n, duel(
                {"pygomp": every(lambda: dev.plugin.run_async(dev.local, fn, w)),
                 "raw": every(lambda: cl.enqueue_nd_range_kernel(queue, entry, gsize, local))},
                args.calls, args.repeat, clock=clock))
            queue.finish()

    a = np.zeros(1000)
    call = steps.on(dev.number)
    with pygomp.target_data(dev.number, tofrom=[a]):
        call(args.steps, a)
        k, _ = loaded(dev, steps, [args.steps, a])
        raw, launches = program_raw(dev, k, queue, args.steps)
        t = duel({"pygomp": lambda: call(args.steps, a), "raw": raw},
                 max(args.calls // 100, 1), args.repeat, chunk=1, clock=clock)
    row("program", 1, {key: v / launches for key, v in t.items()})
    print(f"  (program: {launches} launches a call, times per launch)")


if __name__ == "__main__":
    main()
