"""What a call costs: pygomp's dispatch against the same compiled code called directly,
side by side in one run.

    python bench/bench_dispatch.py [--calls 2000] [--repeat 7] [--only calls,process]

- calls: kernels of 1, 3 and 6 arrays of 16x16 float64, kept present by target_data
  (nothing is copied), each adding 1 to one element of each array.  On the host device
  and the initial device against a direct cffi call of the same compiled function with
  the same argument words; on each OpenCL device against a raw enqueue (and wait) of the
  same cl.Kernel with its arguments set once.  Best of --repeat runs of --calls calls,
  the contenders in turn.
- process: the first call of a cached kernel in a new process, as the whole command
  ``python -c "import pygomp; <define a kernel>; <call it>"`` against the command
  ``python -c "import numpy, pygomp"`` (the script imports numpy too; best of 15 runs each, on the host device; the cache is
  filled first).  The difference is what a user waits for beyond importing pygomp.
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


def duel(fns, calls, repeat, chunk=100):
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
                t = time.perf_counter()
                for _ in range(chunk):
                    f()
                spent[k] += time.perf_counter() - t
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


def calls_table(args):
    rows = []
    for dev in devices.all_devices():
        if dev.plugin.name not in ("host", "opencl"):
            continue
        name = "initial" if dev.is_initial else dev.plugin.name
        for n, kernel in KERNELS.items():
            arrays = [np.zeros((16, 16)) for _ in range(n)]
            call = kernel.on(dev.number)
            with pygomp.target_data(dev.number, tofrom=arrays):
                call(*arrays)
                if dev.plugin.name == "host":
                    direct, keep = host_direct(dev, kernel, arrays)
                    other = "direct cffi"
                else:
                    direct, keep = opencl_raw(dev, kernel, arrays)
                    other = "raw enqueue"
                t = duel({"pygomp": lambda: call(*arrays), "other": direct},
                         args.calls, args.repeat)
            rows.append((f"{dev.number} {name}", n, t["pygomp"], t["other"], other))
    print(f"calls, 16x16 float64 arrays present, best of {args.repeat} x {args.calls}:")
    print(f"  {'device':<12} {'arrays':>6} {'pygomp us':>10} {'direct us':>10} "
          f"{'over us':>8} {'ratio':>6}  direct is")
    for dev, n, ours, theirs, what in rows:
        print(f"  {dev:<12} {n:>6} {ours * 1e6:>10.2f} {theirs * 1e6:>10.2f} "
              f"{(ours - theirs) * 1e6:>8.2f} {ours / theirs:>6.2f}  {what}")


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
        first = [sys.executable, prog]
        bare = [sys.executable, "-c", "import numpy, pygomp"]
        subprocess.run(first, env=env, check=True)              # fills the caches
        bare_t, first_t = (inf := float("inf"), inf), (inf, inf)
        for _ in range(3):                                      # in turns
            bare_t = min(bare_t, whole_command(bare, env, 5))
            first_t = min(first_t, whole_command(first, env, 5))
    print("\na cached kernel's first call in a new process (host device), best of 15,")
    print("wall-clock and CPU (user + system) time of the whole command:")
    print(f"  PYGOMP_DEVICES=host python -c 'import numpy, pygomp' {bare_t[0] * 1e3:6.1f} ms "
          f"{bare_t[1] * 1e3:8.1f} ms CPU")
    print(f"  PYGOMP_DEVICES=host python first_call.py        {first_t[0] * 1e3:8.1f} ms "
          f"{first_t[1] * 1e3:8.1f} ms CPU")
    print(f"  the first call's own cost                       "
          f"{(first_t[0] - bare_t[0]) * 1e3:8.1f} ms {(first_t[1] - bare_t[1]) * 1e3:8.1f} ms CPU")
    print("  first_call.py:" + PROCESS.replace("\n", "\n    ").rstrip())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="calls,process")
    args = ap.parse_args(argv)
    parts = set(args.only.split(","))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    if "calls" in parts:
        calls_table(args)
    if "process" in parts:
        process_table()


if __name__ == "__main__":
    main()
