"""Runtime-core figures, measured side by side in one run.

    python bench/bench_runtime.py [--quick]

1. Lookup in an IntervalMap of 1,000 and of 100,000 live entries: time per lookup and
   its growth (the ratio; O(log n) means a small one), and a plain `bisect` over the
   sorted starts of the same entries (the floor a lookup in Python can reach).
2. target_enter_data + target_exit_data of one array that is already present (only the
   reference count changes): time per pair, through the Python construct and through the
   core's entry points with prebuilt items; a pair that maps and unmaps (alloc, copy,
   free) for comparison.

It runs on the host plugin's device (PYGOMP_DEVICES=host); numbers are the best of a
few repeats.
"""
from __future__ import annotations

import bisect
import os
import random
import sys
import time

os.environ.setdefault("PYGOMP_DEVICES", "host")

import numpy as np  # noqa: E402

import pygomp  # noqa: E402
from pygomp.constructs import array_item  # noqa: E402
from pygomp.runtime import devices, kinds, mapping  # noqa: E402
from pygomp.runtime.intervals import IntervalMap  # noqa: E402


class E:
    __slots__ = ("host_start", "host_end")

    def __init__(self, s, e):
        self.host_start, self.host_end = s, e


def best(fn, n, repeat=5):
    """Best time per call of fn over `repeat` runs of n calls (fn runs the n calls)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(n)
        times.append((time.perf_counter() - t) / n)
    return min(times)


def interval_map(n_entries, queries):
    m = IntervalMap()
    stride = 256
    base = 1 << 40
    for i in range(n_entries):
        m.insert(E(base + i * stride, base + i * stride + 128))
    rnd = random.Random(1)
    # half hit an entry somewhere inside, half fall into a gap
    qs = []
    for _ in range(queries):
        i = rnd.randrange(n_entries)
        off = rnd.randrange(0, 120) if rnd.random() < 0.5 else rnd.randrange(130, 250)
        qs.append(base + i * stride + off)
    lookup = m.lookup

    def run_lookup(n):
        for q in qs[:n]:
            lookup(q, q + 4)

    starts = [base + i * stride for i in range(n_entries)]
    ends = [s + 128 for s in starts]

    def run_bisect(n):                 # the entry whose start is the last <= q, if any
        for q in qs[:n]:
            i = bisect.bisect_right(starts, q) - 1
            i >= 0 and q < ends[i]

    find = m.find

    def run_find_zero_length(n):       # libgomp's rule: up to three lookups
        for q in qs[:n]:
            find(q, q)

    times = [float("inf")] * 3
    for _ in range(5):                  # in turns, so that all three see the same machine
        for k, run in enumerate((run_lookup, run_find_zero_length, run_bisect)):
            times[k] = min(times[k], best(run, queries, repeat=1))
    return times


def enter_exit(pairs):
    dev = devices.resolve(0)
    assert not dev.is_initial, "device 0 is not an offload device"
    a = np.zeros(1024)
    pygomp.target_enter_data(0, to=a)               # present from now on

    def construct(n):
        for _ in range(n):
            pygomp.target_enter_data(0, to=a)
            pygomp.target_exit_data(0, from_=a)

    to = [array_item(a, kinds.TO)]
    fr = [array_item(a, kinds.FROM)]

    def core(n):
        for _ in range(n):
            mapping.enter_data(dev, to)
            mapping.exit_data(dev, fr)

    b = np.zeros(1024)

    def map_unmap(n):                               # not present: alloc, copy in/out, free
        for _ in range(n):
            pygomp.target_enter_data(0, to=b)
            pygomp.target_exit_data(0, from_=b)

    def target_data(n):
        for _ in range(n):
            with pygomp.target_data(0, tofrom=a):
                pass

    res = {"construct": best(construct, pairs), "core": best(core, pairs),
           "target_data": best(target_data, pairs), "map_unmap": best(map_unmap, pairs)}
    pygomp.target_exit_data(0, from_=a)
    assert not pygomp.omp_target_is_present(a, 0)
    return res


def main(argv):
    quick = "--quick" in argv
    queries = 20_000 if quick else 100_000
    pairs = 2_000 if quick else 20_000
    small, large = 1_000, 100_000
    t0 = time.perf_counter()
    l_small, f_small, b_small = interval_map(small, queries)
    l_large, f_large, b_large = interval_map(large, queries)
    ee = enter_exit(pairs)
    us = 1e6
    print(f"pygomp runtime core ({sys.implementation.name} {sys.version.split()[0]}, "
          f"device 0 = {devices.all_devices()[0].plugin.name})")
    print()
    print(f"{'IntervalMap':<44}{'1,000 entries':>15}{'100,000 entries':>17}{'growth':>9}")
    print(f"{'  lookup [s, s+4), us/lookup':<44}{l_small * us:>15.3f}{l_large * us:>17.3f}"
          f"{l_large / l_small:>8.2f}x")
    print(f"{'  find [s, s) (zero-length rule), us/find':<44}{f_small * us:>15.3f}"
          f"{f_large * us:>17.3f}{f_large / f_small:>8.2f}x")
    print(f"{'  plain bisect over the starts, us':<44}{b_small * us:>15.3f}"
          f"{b_large * us:>17.3f}{b_large / b_small:>8.2f}x")
    print(f"{'  lookup / plain bisect':<44}{l_small / b_small:>14.2f}x"
          f"{l_large / b_large:>16.2f}x")
    print()
    print(f"{'one present array (8 KiB), host device':<44}{'us/pair':>15}")
    print(f"{'  target_enter_data + target_exit_data':<44}{ee['construct'] * us:>15.2f}")
    print(f"{'  mapping.enter_data + exit_data (items)':<44}{ee['core'] * us:>15.2f}")
    print(f"{'  with target_data(tofrom=a): pass':<44}{ee['target_data'] * us:>15.2f}")
    print(f"{'  not present: map + unmap (alloc, copies)':<44}{ee['map_unmap'] * us:>15.2f}")
    print()
    print(f"ratio lookup 100,000 / 1,000 entries: {l_large / l_small:.2f}  "
          f"(log n ratio {np.log2(large) / np.log2(small):.2f}; linear would be {large / small:.0f})")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
