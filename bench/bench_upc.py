"""pygomp.upc figures: a distributed dot product and a 1-D stencil on 1, 2 and 3 ranks.

    python bench/bench_upc.py [--quick]

Runs examples/upc_stencil.py's kernels under `mpiexec -n R` for R = 1, 2, 3 (one UPC
thread a rank, on the host plugin's device unless PYGOMP_DEVICES says otherwise), the
same total size on every R.  For each: the time of one dot product (forall with a "+"
reduction across the ranks) and of one stencil step (halo reads through MPI, forall,
barrier), the best of a few repeats and the slowest rank; the share of it that the ranks
spent in MPI calls (mean over ranks; waiting in a barrier for a slower rank counts); the
one-sided MPI operations a step issued on each rank; and the speed-up over 1 rank.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.environ.setdefault("PYGOMP_DEVICES", "host")


def measure(fn, calls, repeat=3):
    """Best seconds per call over `repeat` runs of `calls` calls, and the MPI seconds and
    one-sided operations per call in that best run."""
    from pygomp import upc
    best = None
    for _ in range(repeat):
        upc.barrier()
        s0, t0 = upc.stats(), time.perf_counter()
        for _ in range(calls):
            fn()
        t, s1 = time.perf_counter() - t0, upc.stats()
        run = (t / calls, (s1["mpi_seconds"] - s0["mpi_seconds"]) / calls,
               (s1["rma_ops"] - s0["rma_ops"]) / calls)
        best = run if best is None or run[0] < best[0] else best
    return best


def rank_main(n_dot, n_stencil, steps):
    """One rank's part: measure, gather to rank 0, which prints one JSON line."""
    import numpy as np
    from mpi4py import MPI

    from pygomp import upc
    sys.path.insert(0, ROOT)
    from examples.upc_stencil import dot, fill, stencil

    x = upc.shared_array(n_dot, np.float64, blocksize=None)
    y = upc.shared_array(n_dot, np.float64, blocksize=None)
    fill(x, np.sin)
    fill(y, np.cos)
    u = upc.shared_array(n_stencil, np.float64, blocksize=None)
    v = upc.shared_array(n_stencil, np.float64, blocksize=None)
    fill(u, lambda g: (g % 101) / 101.0)
    upc.barrier()
    upc.forall(dot, x, y, reduce="+")          # builds the kernels
    stencil(u, v, 2)
    rows = {"dot": measure(lambda: upc.forall(dot, x, y, reduce="+"), 5),
            "stencil": measure(lambda: stencil(u, v, steps), 1)}
    rows["stencil"] = tuple(v / steps for v in rows["stencil"])
    every = MPI.COMM_WORLD.gather(rows, root=0)
    if MPI.COMM_WORLD.rank == 0:
        out = {}
        for name in rows:
            per_rank = [r[name] for r in every]
            out[name] = {"seconds": max(p[0] for p in per_rank),
                         "mpi_share": sum(p[1] / p[0] for p in per_rank) / len(per_rank),
                         "rma_ops": max(p[2] for p in per_rank)}
        print("RESULT " + json.dumps(out), flush=True)
    upc.barrier()
    for a in (x, y, u, v):
        a.free()


def main(quick):
    n_dot, n_stencil, steps = (1 << 20, 1 << 16, 10) if quick else (1 << 23, 1 << 20, 40)
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("bench_upc: needs mpiexec: pip install 'pygomp[mpi]'")
    print(f"pygomp.upc on PYGOMP_DEVICES={os.environ['PYGOMP_DEVICES']}, one UPC thread a "
          f"rank, {os.cpu_count()} CPU(s): dot of {n_dot} float64, stencil step on "
          f"{n_stencil} points")
    print(f"{'ranks':>5} {'kernel':<8} {'time':>10} {'MPI share':>10} {'RMA ops':>8} "
          f"{'speed-up':>9}")
    first = {}
    for ranks in (1, 2, 3):
        cmd = [mpiexec, "-n", str(ranks), sys.executable, os.path.abspath(__file__),
               "--rank", str(n_dot), str(n_stencil), str(steps)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYGOMP_UPC_TIMEOUT": "120"})
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not line:
            sys.exit(f"bench_upc: {ranks} rank(s) failed:\n{proc.stdout}\n{proc.stderr}")
        for name, r in json.loads(line[0][len("RESULT "):]).items():
            first.setdefault(name, r["seconds"])
            print(f"{ranks:>5} {name:<8} {r['seconds'] * 1e3:>7.2f} ms {r['mpi_share']:>9.0%} "
                  f"{r['rma_ops']:>8.0f} {first[name] / r['seconds']:>8.2f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        rank_main(*map(int, sys.argv[2:5]))
    else:
        main("--quick" in sys.argv)
