"""Complex kernels against numpy, on the host offload device and on PoCL, in one run.

    .venv/bin/python bench/bench_complex.py [--n 2000000] [--repeat 20] [--device pocl]

Rows, for complex64 and complex128: zaxpy (y = a*x + y), zdot (sum of x*conj(y), a
reduction) with the data present on the device (inside target_data), and a Mandelbrot
set (z = z*z + c, escape counts) against numpy's masked whole-array version.  Times are
the best of --repeat runs, measured in alternation; ratios are numpy's time over
pygomp's (above 1: pygomp is faster).
"""
from __future__ import annotations

import argparse

import numpy as np

import pygomp
import pygomp.kernels as omp
from pygomp.runtime import devices
from timing import duel, opencl_device


@omp.target(map={"x": "to", "y": "tofrom"})
def zaxpy(a, x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@omp.target
def zdot(x, y):
    s = x[0] - x[0]
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * np.conj(y[i])
    return s


@omp.target(map={"xs": "to", "ys": "to", "counts": "from"})
def mandelbrot(xs, ys, limit: int, counts):
    for i in omp.parallel_range(ys.shape[0]):
        for j in range(xs.shape[0]):
            c = complex(xs[j], ys[i])
            z = 0j
            k = 0
            while k < limit and abs(z) <= 2.0:
                z = z * z + c
                k += 1
            counts[i, j] = k


def np_mandelbrot(xs, ys, limit):
    c = xs[None, :] + 1j * ys[:, None]
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, np.int64)
    live = np.ones(c.shape, bool)
    for _ in range(limit):
        live &= np.abs(z) <= 2.0
        if not live.any():
            break
        z[live] = z[live] * z[live] + c[live]
        counts += live
    return counts


def row(name, ours, theirs):
    print(f"  {name:<20} pygomp {ours * 1e3:9.3f} ms   numpy {theirs * 1e3:9.3f} ms   "
          f"numpy/pygomp {theirs / ours:6.2f}", flush=True)


def bench(dev, n, repeat, rng):
    for dtype in (np.complex64, np.complex128):
        name = np.dtype(dtype).name
        x = (rng.random(n) + 1j * rng.random(n)).astype(dtype)
        y = (rng.random(n) + 1j * rng.random(n)).astype(dtype)
        a = dtype(0.5 - 0.25j)
        with pygomp.target_data(dev, to=[x], tofrom=[y]):
            k = zaxpy.on(dev)
            t = duel({"pygomp": lambda: k(a, x, y), "numpy": lambda: np.add(a * x, y, out=y)},
                     repeat)
        row(f"zaxpy {name}", t["pygomp"], t["numpy"])
        with pygomp.target_data(dev, to=[x, y]):
            k = zdot.on(dev)
            got, want = k(x, y), np.vdot(y, x)
            assert abs(got - want) <= 1e-3 * abs(want), (got, want)
            t = duel({"pygomp": lambda: k(x, y), "numpy": lambda: np.vdot(y, x)}, repeat)
        row(f"zdot {name}", t["pygomp"], t["numpy"])
    xs, ys = np.linspace(-2.0, 0.6, 600), np.linspace(-1.2, 1.2, 400)
    counts = np.zeros((400, 600), np.int64)
    k = mandelbrot.on(dev)
    k(xs, ys, 100, counts)
    assert (counts != np_mandelbrot(xs, ys, 100)).mean() < 1e-3
    t = duel({"pygomp": lambda: k(xs, ys, 100, counts),
              "numpy": lambda: np_mandelbrot(xs, ys, 100)}, max(2, repeat // 3))
    row("mandelbrot 600x400", t["pygomp"], t["numpy"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--device", default="pocl")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    host = next(d for d in devices.all_devices() if d.plugin.name == "host" and not d.is_initial)
    cl = opencl_device(args.device)
    for d in (host, cl):
        d.ensure_init()
        print(f"device {d.number} ({d.plugin.name}: {d.info.name}), n = {args.n}, "
              f"best of {args.repeat}")
        bench(d.number, args.n, args.repeat, rng)


if __name__ == "__main__":
    main()
