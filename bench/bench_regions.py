"""A target region of several parallel loops against the same loops as separate regions.

    .venv/bin/python bench/bench_regions.py [--n 4000000] [--repeat 15] [--device pocl]

A region whose statements need a grid-wide order runs as several launches (see
pygomp/compiler/steps.py); every parallel loop runs at the full launch width.  Rows:
- two loops: a cheap loop, then a heavy one reading what the first wrote;
- a time loop: ``for t in range(steps)`` around two stencil sweeps (launches driven by
  the region itself) against one region a sweep called from Python.
Data stays on the device (target_data); times are the best of --repeat runs, measured in
alternation; the ratio is the one region's time over the separate regions' (aim: <= 1.1).
"""
from __future__ import annotations

import argparse
import math

import numpy as np

import pygomp
import pygomp.kernels as omp
from timing import duel, opencl_device


@omp.target
def both(x, y, z):
    n = x.shape[0]
    for i in omp.parallel_range(n):
        y[i] = 2.0 * x[i] + 1.0
    for i in omp.parallel_range(n):
        z[i] = math.sin(y[i]) * math.cos(x[i]) + math.sqrt(y[i])


@omp.target
def first(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = 2.0 * x[i] + 1.0


@omp.target
def second(x, y, z):
    for i in omp.parallel_range(x.shape[0]):
        z[i] = math.sin(y[i]) * math.cos(x[i]) + math.sqrt(y[i])


@omp.target
def steps(a, b, count: int):
    n = a.shape[0]
    for t in range(count):
        for i in omp.parallel_range(1, n - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        for i in omp.parallel_range(1, n - 1):
            a[i] = (b[i - 1] + b[i] + b[i + 1]) / 3.0


@omp.target
def sweep(a, b):
    n = a.shape[0]
    for i in omp.parallel_range(1, n - 1):
        b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0


def row(name, ours, theirs):
    print(f"{name:<12} one region {ours * 1e3:9.3f} ms   separate regions "
          f"{theirs * 1e3:9.3f} ms   ratio {ours / theirs:5.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--device", default="pocl")
    args = ap.parse_args()
    dev = opencl_device(args.device)
    d = dev.number
    print(f"device {d}: {dev.info.name}, n = {args.n}, best of {args.repeat}")
    rng = np.random.default_rng(0)
    x, y, z = rng.random(args.n), np.zeros(args.n), np.zeros(args.n)
    k_both, k_first, k_second = both.on(d), first.on(d), second.on(d)
    with pygomp.target_data(d, to=[x], tofrom=[y, z]):
        times = duel({"one": lambda: k_both(x, y, z),
                      "two": lambda: (k_first(x, y), k_second(x, y, z))}, args.repeat)
    row("two loops", times["one"], times["two"])
    assert np.allclose(z, np.sin(2 * x + 1) * np.cos(x) + np.sqrt(2 * x + 1))

    count = 10
    a, b = rng.random(args.n // 4), np.zeros(args.n // 4)
    k_steps, k_sweep = steps.on(d), sweep.on(d)

    def separate():
        for _ in range(count):
            k_sweep(a, b)
            k_sweep(b, a)

    with pygomp.target_data(d, tofrom=[a, b]):
        times = duel({"one": lambda: k_steps(a, b, count), "two": separate}, args.repeat)
    row(f"{count} steps", times["one"], times["two"])


if __name__ == "__main__":
    main()
