"""pygomp on an OpenCL device against PyOpenCL and numpy, side by side in one run.

    .venv/bin/python bench/bench_opencl.py [--n 10000000] [--repeat 20] [--device pocl]

- dot (float32, float64), data present on the device, against
  pyopencl.reduction.ReductionKernel (needs mako) and np.dot on the same CPU;
- saxpy, data present, against a hand-written one-element-per-work-item kernel.
What one call costs against a raw enqueue of the same cl.Kernel: bench/bench_dispatch.py.
Times are the best of --repeat runs; ratios are pygomp's time over the other's.
"""
from __future__ import annotations

import argparse

import numpy as np

import pygomp
import pygomp.kernels as omp
from timing import duel, opencl_device


@omp.target
def dot(x, y):
    s = x[0] - x[0]
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * y[i]
    return s


@omp.target(map={"x": "to", "y": "tofrom"})
def saxpy(a: np.float32, x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


HAND_SAXPY = """
__kernel void hand_saxpy(float a, __global const float *x, __global float *y)
{
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""


def row(name, ours, others):
    cells = "  ".join(f"{k} {v * 1e3:8.3f} ms (x{ours / v:5.2f})" for k, v in others.items())
    print(f"{name:<14} pygomp {ours * 1e3:8.3f} ms   {cells}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--device", default="pocl")
    args = ap.parse_args()
    import pyopencl as cl
    dev = opencl_device(args.device)
    dev.ensure_init()
    cldev, ctx, queue = dev.plugin.cl_device(dev.local)
    print(f"device {dev.number}: {dev.info.name} ({dev.info.platform}), n = {args.n}, "
          f"best of {args.repeat}")
    rng = np.random.default_rng(0)
    k = dot.on(dev.number)

    try:
        from pyopencl.reduction import ReductionKernel
        import pyopencl.array as cla
    except ImportError as e:
        ReductionKernel = None
        print(f"(no ReductionKernel: {e})")

    for dtype in (np.float32, np.float64):
        x = rng.random(args.n).astype(dtype)
        y = rng.random(args.n).astype(dtype)
        fs = {"np.dot": lambda: np.dot(x, y)}
        if ReductionKernel is not None:
            ctype = "float" if dtype == np.float32 else "double"
            rk = ReductionKernel(ctx, dtype, neutral="0", reduce_expr="a+b",
                                 map_expr="x[i]*y[i]",
                                 arguments=f"__global const {ctype} *x, __global const {ctype} *y")
            ax, ay = cla.to_device(queue, x), cla.to_device(queue, y)
            fs["ReductionKernel"] = lambda: rk(ax, ay).get()
        with pygomp.target_data(dev.number, to=[x, y]):
            got = k(x, y)
            want = float(np.dot(x.astype(np.float64), y))
            assert abs(got - want) <= 1e-3 * abs(want), (got, want)
            times = duel({"pygomp": lambda: k(x, y), **fs}, args.repeat)
        ours = times.pop("pygomp")
        row(f"dot {np.dtype(dtype).name}", ours, times)

    x = rng.random(args.n).astype(np.float32)
    y = rng.random(args.n).astype(np.float32)
    prg = cl.Program(ctx, HAND_SAXPY).build()
    hand = cl.Kernel(prg, "hand_saxpy")
    hand.set_scalar_arg_dtypes([np.float32, None, None])
    bx = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    by = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=y)
    s = saxpy.on(dev.number)
    with pygomp.target_data(dev.number, to=[x], tofrom=[y]):
        times = duel({"pygomp": lambda: s(np.float32(2.0), x, y),
                      "hand kernel": lambda: hand(queue, (args.n,), None, np.float32(2.0),
                                                  bx, by).wait()}, args.repeat)
    ours = times.pop("pygomp")
    row("saxpy float32", ours, times)


if __name__ == "__main__":
    main()
