"""Classic numerical loop nests: pygomp kernels against the same loops in OpenMP C.

    python bench/polybench/run.py [--devices initial,host,opencl] [--size medium]
                                  [--repeat 5] [--only gemm,lu]

Every kernel runs first as C (polybench.c, gcc -O3 -march=native -fopenmp, through
cffi), as Numba (``@njit(parallel=True)``, when Numba is installed: numba_anchor.py;
``--no-numba`` leaves it out) and as pygomp on each device, from the same data; the results are checked against
C and C against numpy (or, for "tiny", the original loops in plain Python) before
anything is timed.  Then each variant runs ``--repeat`` times, interleaved, each run from
the original data (restored untimed); a column is the best time and its ratio pygomp / C
(and pygomp / Numba).
An offload device (host, opencl) keeps the data mapped around its calls (target_data),
so nothing is copied in the timed calls; the initial device works on numpy's memory.
On a busy machine, OMP_NUM_THREADS=1 POCL_MAX_PTHREAD_COUNT=1 compares the code alone:
with two threads, fork/join waits on descheduled threads dominate the times.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from contextlib import ExitStack

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from bench.polybench import BENCHES, numba_anchor  # noqa: E402
from bench.polybench.harness import (SIZES, Variant, best_times, find_device,  # noqa: E402
                                     fresh, mismatch)
from pygomp.runtime import devices  # noqa: E402


def default_devices():
    words = ["initial", "host"]
    if any(d.plugin.name == "opencl" for d in devices.all_devices() if not d.is_initial):
        words.append("opencl")
    return ",".join(words)


def check(bench, data, variants, size):
    """C against numpy, then every pygomp variant against C; the first problem or None."""
    want = variants[0].result()
    if bench.reference is not None and (size == "tiny" or not bench.slow_reference):
        bad = mismatch(want, bench.reference(fresh(data)), "C against numpy")
        if bad:
            return bad
    for v in variants[1:]:
        bad = mismatch(v.result(), want, f"{v.name} against C")
        if bad:
            return bad
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", default=None,
                    help="comma-separated: initial, host, opencl, a device name word "
                         "(pocl) or number (default: initial,host,opencl)")
    ap.add_argument("--size", default="medium", choices=SIZES)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--no-numba", action="store_true", help="leave Numba out")
    args = ap.parse_args(argv)
    nb = numba_anchor.available and not args.no_numba
    devs = [find_device(w) for w in (args.devices or default_devices()).split(",")]
    only = set(filter(None, args.only.split(",")))
    benches = [b for b in BENCHES if not only or b.name in only]
    if only - {b.name for b in benches}:
        raise SystemExit(f"unknown kernels {sorted(only - {b.name for b in benches})}; "
                         f"known: {', '.join(b.name for b in BENCHES)}")

    print(f"{os.cpu_count()} cpus, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}, "
          f"load average {os.getloadavg()[0]:.1f}; best of {args.repeat}; "
          f"/C, /Nb = time / C's, Numba's")
    for d in devs:
        kind = "the initial device" if d.is_initial else f"{d.plugin.name}: {d.info.name}"
        print(f"  device {d.number}: {kind}")
    cols = ["Nb /C"] * nb + [f"{w} dev{d.number}" for d in devs for w in ("/C", "/Nb")[:1 + nb]]
    head = f"{'kernel':<15}{'size':>16}{'C ms':>9}" + f"{'Nb ms':>9}{'/C':>7}" * nb + "".join(
        f"{f'dev{d.number} ms':>11}{'/C':>7}" + f"{'/Nb':>7}" * nb for d in devs)
    print(head)
    print("-" * len(head))
    ratios = {c: [] for c in cols}
    failed = []
    for b in benches:
        data = b.data(args.size)
        size = "x".join(str(v) for v in b.sizes[args.size].values())
        with ExitStack() as stack:
            variants = [stack.enter_context(Variant(b, data))]
            if nb:
                variants.append(stack.enter_context(Variant(b, data, numba=True)))
            variants += [stack.enter_context(Variant(b, data, d)) for d in devs]
            bad = check(b, data, variants, args.size)
            if bad:
                failed.append(b.name)
                print(f"{b.name:<15}{size:>16}  WRONG: {bad}")
                continue
            t_c, *t_nb = best_times(variants, args.repeat)
        t_pg, t_nb = t_nb[nb:], t_nb[:nb]
        row = f"{b.name:<15}{size:>16}{t_c * 1e3:>9.2f}"
        for t in t_nb:
            ratios["Nb /C"].append(t / t_c)
            row += f"{t * 1e3:>9.2f}{t / t_c:>7.2f}"
        for d, t in zip(devs, t_pg):
            ratios[f"/C dev{d.number}"].append(t / t_c)
            row += f"{t * 1e3:>11.2f}{t / t_c:>7.2f}"
            for tn in t_nb:
                ratios[f"/Nb dev{d.number}"].append(t / tn)
                row += f"{t / tn:>7.2f}"
        print(row, flush=True)
    print("-" * len(head))
    print("geometric means: " + ", ".join(
        f"{c} {math.exp(sum(map(math.log, r)) / len(r)) if r else float('nan'):.2f}"
        for c, r in ratios.items()))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (other processes make the "
          f"times, and the ratios of fork/join-heavy kernels, unreliable)")
    if failed:
        raise SystemExit(f"wrong results: {', '.join(failed)}")


if __name__ == "__main__":
    main()
