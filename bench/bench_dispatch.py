"""What a call costs: pygomp's dispatch against the same compiled code called directly,
side by side in one run.

    python bench/bench_dispatch.py [--calls 2000] [--repeat 7] [--only calls,process]
                                   [--processes 5]

- calls: kernels of 1, 3 and 6 arrays of 16x16 float64, kept present by target_data
  (nothing is copied), each adding 1 to one element of each array.  On the host device
  and the initial device against a direct cffi call of the same compiled function with
  the same argument words; on each OpenCL device against a raw enqueue (and wait) of the
  same cl.Kernel with its arguments set once.  Best of --repeat runs of --calls calls,
  the contenders in turn.  On the host device and the initial device, where a call runs
  in the calling thread, the time is that thread's CPU time: wall-clock time on a busy
  machine adds the time the process waits for a CPU, which hits long calls more often
  than short ones (figures that jumped from run to run).  With --processes N, the host device's rows again in N new
  processes, one line each: how much the figure moves from run to run.
- process: the first call of a cached kernel in a new process, as the whole command
  ``python first_call.py`` (import numpy and pygomp, define a kernel, call it) against
  the commands ``python -c "import numpy"`` and ``python -c "import numpy, pygomp"``
  (best of 15 runs each, in turns, on the host device; the cache is filled first).
  The differences are what a user waits for beyond importing numpy, and beyond
  importing pygomp.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import cffi
import numpy as np

import pygomp
import pygomp.kernels as omp
from pygomp.runtime import devices, mapping


@omp.target
def one(a):
    a[0, 0] += 1.0


@omp.target
def three(a, b, c):
    a[0, 0] += 1.0
    b[0, 0] += 1.0
    c[0, 0] += 1.0


@omp.target
def six(a, b, c, d, e, f):
    a[0, 0] += 1.0
    b[0, 0] += 1.0
    c[0, 0] += 1.0
    d[0, 0] += 1.0
    e[0, 0] += 1.0
    f[0, 0] += 1.0


KERNELS = {1: one, 3: three, 6: six}


def duel(fns, calls, repeat, chunk=100, clock=time.perf_counter):
    """Best time per call of each function over ``repeat`` rounds of ``calls`` calls; within
    a round the functions take turns every ``chunk`` calls, so that both see the same
    machine (which others may be loading)."""
    best = {k: float("inf") for k in fns}
    for f in fns.values():
        f()
    for _ in range(repeat):
        spent = dict.fromkeys(fns, 0.0)
        for _ in range(max(calls // chunk, 1)):
            for k, f in fns.items():
                t = clock()
                for _ in range(chunk):
                    f()
                spent[k] += clock() - t
        for k in fns:
            best[k] = min(best[k], spent[k] / (max(calls // chunk, 1) * chunk))
    return best


def words(dev, kernel, arrays):
    """The argument words the plugin gets for a call (each array's device address, then
    its extents)."""
    return [w for a in arrays for w in (mapping.device_address(dev, a.ctypes.data), *a.shape)]


def host_direct(dev, kernel, arrays):
    """A direct cffi call of the kernel's compiled function with the call's words."""
    spec = kernel.spec(tuple(arrays))
    image = spec.tables[dev.identity].images[0]
    entry = image.kernels[0].entries[0]
    ffi = cffi.FFI()
    ffi.cdef(f"void {entry}(uint64_t *, const int64_t *);")
    lib = ffi.dlopen(dev.plugin.image_path(image))
    fn = getattr(lib, entry)
    args = ffi.new("uint64_t[]", words(dev, kernel, arrays))
    launch = ffi.new("int64_t[3]")
    return lambda: fn(args, launch), (ffi, lib, args, launch)


def opencl_raw(dev, kernel, arrays):
    """A raw enqueue and wait of the kernel's cl.Kernel, its arguments set once."""
    import pyopencl as cl
    spec = kernel.spec(tuple(arrays))
    fn = mapping.function_address(dev, spec.symbol.address)
    plugin = dev.plugin
    k = plugin._kernels[fn]
    _, _, queue = plugin.cl_device(dev.local)
    plugin.run(dev.local, fn, words(dev, kernel, arrays))      # sets the arguments
    gangs, steps = k.plans[(0, 0, 0)][:2]
    (entry, gsize, local, _), = steps
    return lambda: cl.enqueue_nd_range_kernel(queue, entry, gsize, local).wait(), k


def calls_table(args, plugins=("host", "opencl")):
    rows = []
    for dev in devices.all_devices():
        if dev.plugin.name not in plugins:
            continue
        name = "initial" if dev.is_initial else dev.plugin.name
        for n, kernel in KERNELS.items():
            arrays = [np.zeros((16, 16)) for _ in range(n)]
            call = kernel.on(dev.number)
            with pygomp.target_data(dev.number, tofrom=arrays):
                call(*arrays)
                if dev.plugin.name == "host":     # all in this thread: its CPU time
                    direct, keep = host_direct(dev, kernel, arrays)
                    other, clock = "direct cffi", time.thread_time
                else:
                    direct, keep = opencl_raw(dev, kernel, arrays)
                    other, clock = "raw enqueue", time.perf_counter
                t = duel({"pygomp": lambda: call(*arrays), "other": direct},
                         args.calls, args.repeat, clock=clock)
            rows.append((f"{dev.number} {name}", n, t["pygomp"], t["other"], other))
    if args.brief:                      # one line: a run among --processes
        print("  " + "   ".join(f"{dev.split()[1]} {n}: {ours * 1e6:5.2f} us "
                                f"({ours / theirs:4.1f}x)" for dev, n, ours, theirs, _ in rows))
        return
    print(f"calls, 16x16 float64 arrays present, best of {args.repeat} x {args.calls}:")
    print(f"  {'device':<12} {'arrays':>6} {'pygomp us':>10} {'direct us':>10} "
          f"{'over us':>8} {'ratio':>6}  direct is")
    for dev, n, ours, theirs, what in rows:
        print(f"  {dev:<12} {n:>6} {ours * 1e6:>10.2f} {theirs * 1e6:>10.2f} "
              f"{(ours - theirs) * 1e6:>8.2f} {ours / theirs:>6.2f}  {what}")


def spread(args):
    """The host rows of the calls table in ``--processes`` new processes."""
    print(f"\nthe same, host and initial device, in {args.processes} new processes "
          f"(pygomp us, ratio to direct cffi):")
    for _ in range(args.processes):
        subprocess.run([sys.executable, __file__, "--only", "host-calls", "--brief",
                        "--calls", str(args.calls), "--repeat", str(args.repeat)],
                       check=True)


PROCESS = """
import numpy as np, pygomp as omp
@omp.target
def scale(x, a: float):
    for i in range(x.shape[0]):     # sequential: no OpenMP thread pool to start
        x[i] = x[i] * a + 1.0
x = np.ones(10)
scale(x, 2.0)
assert x[0] == 3.0
"""


def whole_command(cmd, env, runs=15):
    """Best wall-clock and best CPU time (user + system) of a command, in seconds."""
    wall = cpu = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        wall = min(wall, time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall, cpu


def process_table():
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)        # as a user's Python runs
        env.update(PYGOMP_DEVICES="host", PYGOMP_CACHE_DIR=os.path.join(d, "cache"))
        prog = os.path.join(d, "first_call.py")
        with open(prog, "w") as f:
            f.write(PROCESS)
        commands = {"python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
                    "python -c 'import numpy, pygomp'": [sys.executable, "-c",
                                                         "import numpy, pygomp"],
                    "python first_call.py": [sys.executable, prog]}
        subprocess.run(commands["python first_call.py"], env=env, check=True)   # caches
        best = dict.fromkeys(commands, (float("inf"), float("inf")))
        for _ in range(3):                                      # in turns
            for name, cmd in commands.items():
                best[name] = min(best[name], whole_command(cmd, env, 5))
    print("\na cached kernel's first call in a new process (host device), best of 15,")
    print("wall-clock and CPU (user + system) time of the whole command "
          "(PYGOMP_DEVICES=host):")
    for name, (wall, cpu) in best.items():
        print(f"  {name:<34} {wall * 1e3:8.1f} ms {cpu * 1e3:8.1f} ms CPU")
    (numpy, _), (imported, _), (first, _) = best.values()
    print(f"  first_call.py over import numpy    {(first - numpy) * 1e3:8.1f} ms "
          f"({first / numpy:.2f}x)")
    print(f"  first_call.py over import pygomp   {(first - imported) * 1e3:8.1f} ms "
          f"(the first call's own cost)")
    print("  first_call.py:" + PROCESS.replace("\n", "\n    ").rstrip())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="calls,process")
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--brief", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    parts = set(args.only.split(","))
    if "host-calls" in parts:           # one run of --processes
        calls_table(args, ("host",))
        return
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    if "calls" in parts:
        calls_table(args)
        if args.processes > 1:
            spread(args)
    if "process" in parts:
        process_table()


if __name__ == "__main__":
    main()
