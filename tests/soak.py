"""A long run (`make soak`, not part of `make test`): threads calling kernels on every
device, synchronously, with nowait/depend, inside target_data and between enter and
exit data, while CPU hogs keep the cores busy; `make soak` runs it with glibc's
freed-memory fill (MALLOC_PERTURB_).

    python tests/soak.py [--minutes M] [--threads N] [--hogs H]

Every result is checked against numpy as it comes.  At the end no device holds a
mapping, and the process's memory (its RSS, which holds the host device's and PoCL's
memory too) has not grown past `BOUND_MIB` over what it was after the first minute;
it prints the rounds of each kind, the RSS along the way and exits 1 on any failure.
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time

import numpy as np

import pygomp as omp
from pygomp.runtime import devices

BOUND_MIB = 64


@omp.target
def saxpy(a: float, x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@omp.target
def twice_into(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = 2.0 * x[i]


@omp.target
def total(x):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i]
    return s


@omp.target
def rowsums(A, out):
    for i in omp.parallel_range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        out[i] = s


def expect(ok, what):
    if not ok:
        raise AssertionError(what)


def sync(dev, rng):
    n = int(rng.integers(1, 5000))
    x, y = rng.random(n), rng.random(n)
    want = 1.5 * x + y
    saxpy.on(dev)(1.5, x, y)
    expect(np.allclose(y, want), "saxpy")
    expect(np.isclose(total.on(dev)(x), x.sum()), "total")


def tasks(dev, rng):
    n = int(rng.integers(1, 5000))
    x, y = rng.random(n), np.zeros(n)
    x0 = x.copy()
    a = saxpy.on(dev)(1.0, np.ones(n), x, nowait=True, depend={"inout": [x]})
    b = twice_into.on(dev)(x, y, nowait=True, depend={"in": [x], "out": [y]})
    b.wait()
    a.wait()
    expect(np.allclose(x, x0 + 1) and np.allclose(y, 2 * (x0 + 1)), "nowait/depend")


def data_region(dev, rng):
    A = rng.random((int(rng.integers(1, 300)), int(rng.integers(1, 300))))
    out = np.zeros(A.shape[0])
    x = rng.random(A.shape[0])
    want = 2.0 * A.sum(axis=1) + x
    with omp.target_data(dev, to=[A], tofrom=[out, x]):
        rowsums.on(dev)(A, out)
        saxpy.on(dev)(2.0, out, x)
    expect(np.allclose(out, A.sum(axis=1)), "rowsums in target_data")
    expect(np.allclose(x, want), "saxpy after rowsums in target_data")


def enter_exit(dev, rng):
    n = int(rng.integers(1, 5000))
    x, y = rng.random(n), rng.random(n)
    want = 3.0 * x + y
    omp.target_enter_data(dev, to=[x, y])
    try:
        saxpy.on(dev)(3.0, x, y)
    finally:
        omp.target_exit_data(dev, from_=[y], release=[x])
    expect(np.allclose(y, want), "saxpy between enter and exit data")


KINDS = [sync, tasks, data_region, enter_exit]


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(k, numbers, deadline, counts, failures):
    rng = np.random.default_rng(k)
    pick = random.Random(k)
    while time.monotonic() < deadline and not failures:
        kind, dev = pick.choice(KINDS), pick.choice(numbers)
        try:
            kind(dev, rng)
        except BaseException as e:          # noqa: BLE001  (reported, then the run ends)
            failures.append(f"thread {k}, device {dev}, {kind.__name__}: "
                            f"{type(e).__name__}: {e}")
            return
        counts[kind.__name__] = counts.get(kind.__name__, 0) + 1   # this thread's


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    numbers = [d.number for d in devices.all_devices()]
    names = {d.number: "initial" if d.is_initial else d.plugin.name
             for d in devices.all_devices()}
    print(f"soak: {a.minutes} min, {a.threads} threads, {a.hogs} CPU hogs, devices "
          f"{', '.join(f'{n} ({names[n]})' for n in numbers)}, MALLOC_PERTURB_="
          f"{os.environ.get('MALLOC_PERTURB_', 'unset')}", flush=True)
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.hogs)]
    counts, failures = [{} for _ in range(a.threads)], []
    start = time.monotonic()
    deadline = start + a.minutes * 60
    threads = [threading.Thread(target=worker, args=(k, numbers, deadline, counts[k], failures))
               for k in range(a.threads)]
    try:
        for t in threads:
            t.start()
        base = None
        while any(t.is_alive() for t in threads):
            time.sleep(min(60, a.minutes * 60 / 4))
            base = base if base is not None else rss_mib()      # after the warm-up
            print(f"  {(time.monotonic() - start) / 60:5.1f} min: RSS {rss_mib():.0f} MiB, "
                  f"rounds {sum(sum(c.values()) for c in counts)}", flush=True)
        for t in threads:
            t.join()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    omp.taskwait()
    left = {n: [e for e in devices.resolve(n).map if e.refcount != float("inf")]
            for n in numbers if not devices.resolve(n).is_initial}
    grown = rss_mib() - base
    print(f"rounds: { {k.__name__: sum(c.get(k.__name__, 0) for c in counts) for k in KINDS} }")
    print(f"RSS grew {grown:.1f} MiB after the first sample (bound {BOUND_MIB} MiB)")
    print(f"mappings left: {sum(len(v) for v in left.values())}")
    problems = failures + [f"device {n}: still mapped: {v}" for n, v in left.items() if v]
    if grown > BOUND_MIB:
        problems.append(f"RSS grew {grown:.1f} MiB, more than {BOUND_MIB} MiB")
    for text in problems:
        print("FAILED:", text)
    print("soak: ok" if not problems else "soak: FAILED")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
