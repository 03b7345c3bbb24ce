"""pygomp on a CUDA GPU against CuPy, side by side in one run.

    python bench/bench_cuda.py [--log2n 28] [--repeat 20]

- float32 sum and dot of 2**log2n elements (CuPy arrays used in place): the bandwidth the
  kernel reaches (bytes read / device time) against the device-to-device copy bandwidth
  measured here ((read + written) / time, what a reduction can hope for) and against
  cupy.sum / cupy.dot on the same arrays.  Device times come from CUDA events around
  --repeat calls queued back to back (nowait); the wall time of one ordinary call (which
  also copies the result back) is shown too.
- dispatch: a call of a tiny kernel whose data are present (target_data) against
  cupy.RawKernel launching the very same CUDA C with the same words and geometry, each
  followed by a wait; the ratio is pygomp's time over RawKernel's.

The last lines are a short table (what bench/gpu_check.sh prints).
"""
from __future__ import annotations

import argparse

import numpy as np

import pygomp
import pygomp.kernels as omp
from pygomp.runtime import devices, mapping
from timing import duel


@omp.target
def sum_into(x, out):
    s = x[0] - x[0]                     # the type of x's elements: float32 throughout
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i]
    out[0] = s


@omp.target
def dot_into(x, y, out):
    s = x[0] - x[0]
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * y[i]
    out[0] = s


@omp.target(map={"y": "tofrom"})
def touch(y):
    for i in omp.parallel_range(y.shape[0]):
        y[i] += 1.0


def device_time(cupy, stream, f, repeat):
    """Seconds of GPU time per call of ``f`` (which queues its work), over ``repeat``
    calls queued back to back on ``stream``."""
    f()
    stream.synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    for _ in range(repeat):
        f()
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1e3 / repeat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    import cupy
    found = [d for d in devices.all_devices() if not d.is_initial and d.plugin.name == "cuda"]
    if not found:
        p = devices.plugins().get("cuda")
        print(f"bench_cuda: nothing to measure, no CUDA device: "
              f"{getattr(p, 'unavailable', p)}")
        return
    dev = found[0]
    dev.ensure_init()
    plugin, num = dev.plugin, dev.number
    stream = plugin.cupy_stream(dev.local)
    props = dev.info.properties
    n = 1 << args.log2n
    print(f"device {num}: {dev.info.name} (compute capability {props['compute_capability']}, "
          f"{props['multiprocessors']} SMs), n = 2^{args.log2n} float32, "
          f"{args.repeat} calls a figure", flush=True)
    rows = []

    with cupy.cuda.Device(dev.local):
        x = cupy.random.random(n, dtype=cupy.float32)
        y = cupy.random.random(n, dtype=cupy.float32)
        z = cupy.empty_like(x)
        out = cupy.zeros(1, cupy.float32)
    nbytes = x.nbytes
    rt = cupy.cuda.runtime
    t_copy = device_time(cupy, stream, lambda: rt.memcpyAsync(
        z.data.ptr, x.data.ptr, nbytes, rt.memcpyDeviceToDevice, stream.ptr), args.repeat)
    copy_bw = 2 * nbytes / t_copy
    print(f"copy device to device: {copy_bw / 1e9:8.1f} GB/s (read + written)", flush=True)
    rows.append(("copy device to device", f"{copy_bw / 1e9:.0f} GB/s", ""))

    k_sum, k_dot = sum_into.on(num), dot_into.on(num)
    cases = [("sum", lambda **kw: k_sum(x, out, **kw), lambda: cupy.sum(x), nbytes,
              float(cupy.sum(x, dtype=cupy.float64)), "cupy.sum"),
             ("dot", lambda **kw: k_dot(x, y, out, **kw), lambda: cupy.dot(x, y), 2 * nbytes,
              float(cupy.dot(x.astype(cupy.float64), y.astype(cupy.float64))), "cupy.dot")]
    for name, ours, theirs, moved, want, other in cases:
        ours()
        got = float(out[0])
        assert abs(got - want) <= 1e-3 * abs(want), (name, got, want)
        t_ours = device_time(cupy, stream, lambda: ours(nowait=True), args.repeat)
        pygomp.taskwait()
        t_cupy = device_time(cupy, cupy.cuda.get_current_stream(), theirs, args.repeat)
        wall = duel({"pygomp": ours, "cupy": lambda: float(theirs())}, args.repeat)
        bw, bw_cupy = moved / t_ours, moved / t_cupy
        print(f"{name} float32: pygomp {t_ours * 1e3:7.3f} ms {bw / 1e9:7.1f} GB/s "
              f"({bw / copy_bw:5.1%} of copy) | {other} {t_cupy * 1e3:7.3f} ms "
              f"{bw_cupy / 1e9:7.1f} GB/s ({bw_cupy / copy_bw:5.1%}) | wall per call: pygomp "
              f"{wall['pygomp'] * 1e3:.3f} ms, {other} {wall['cupy'] * 1e3:.3f} ms", flush=True)
        rows.append((f"{name} float32 2^{args.log2n}", f"{bw / copy_bw:.0%} of copy",
                     f"x{t_ours / t_cupy:.2f} {other}'s time"))

    small = np.zeros(1024)
    t = touch.on(num)
    with pygomp.target_data(num, tofrom=[small]):
        t(small)
        fn = mapping.function_address(dev, touch.spec((small,)).symbol.address)
        kern = plugin._kernels[fn]
        info = kern.info
        assert len(info.entries) == 1 and not info.has_scratch, "touch is one plain launch"
        gangs, steps = kern.plans[(0, 0, 0)]
        _, grid, block, shared = steps[0]
        words = [mapping.device_address(dev, small.ctypes.data), small.size]
        from pygomp.plugins.cuda.plugin import OPTIONS
        raw = cupy.RawKernel(touch.spec((small,)).unit(plugin.target_hooks()).source,
                             info.entries[0], options=OPTIONS)
        raw_args = tuple(np.uint64(w) for w in words)
        null = cupy.cuda.Stream.null

        def raw_call():                 # on CuPy's default stream, then wait
            raw((grid,), block, raw_args, shared_mem=shared)
            null.synchronize()

        def batch(f):
            return lambda: [f() for _ in range(50)]

        times = duel({"pygomp": batch(lambda: t(small)),
                      "plugin.run": batch(lambda: plugin.run(dev.local, fn, words)),
                      "RawKernel": batch(raw_call)}, max(args.repeat, 10))
    per = {k: v / 50 for k, v in times.items()}
    print(f"dispatch (present data): pygomp {per['pygomp'] * 1e6:.1f} us, plugin.run "
          f"{per['plugin.run'] * 1e6:.1f} us, cupy.RawKernel {per['RawKernel'] * 1e6:.1f} us "
          f"(x{per['pygomp'] / per['RawKernel']:.2f})", flush=True)
    rows.append(("dispatch, present data", f"{per['pygomp'] * 1e6:.1f} us",
                 f"x{per['pygomp'] / per['RawKernel']:.2f} RawKernel's time"))

    print("\nfigure                     pygomp            against")
    for name, a, b in rows:
        print(f"{name:<26} {a:<17} {b}")


if __name__ == "__main__":
    main()
