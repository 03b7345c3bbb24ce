"""pygomp.upc figures: a distributed dot product and a 1-D stencil on 1, 2 and 3 ranks.

    python bench/bench_upc.py [--quick]

Runs examples/upc_stencil.py's kernels under `mpiexec -n R` for R = 1, 2, 3 (one UPC
thread per rank, on the host plugin's device unless PYGOMP_DEVICES says otherwise), the
same total size on every R.  For each: the time of one dot product (forall with a "+"
reduction across the ranks) and of one stencil step (halo reads through MPI, forall,
barrier), each call timed alone, the best of a few dozen calls on the slowest rank; the
share of it that the ranks spent in MPI calls (mean over ranks; waiting in a barrier for
a slower rank counts); the one-sided MPI operations per step on each rank; and the
speed-up over 1 rank.

On 1 rank it also times, in turn with the shared arrays' calls, the same kernels called
on plain numpy arrays kept on the same device by `target_data`, and numpy on the host.
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
    """The best seconds of one call of fn over repeat * calls calls, each timed alone
    (other users of the machine slow some of them), and the MPI seconds and one-sided
    operations of that call."""
    from pygomp import upc
    best = None
    for _ in range(repeat):
        upc.barrier()
        for _ in range(calls):
            s0, t0 = upc.stats(), time.perf_counter()
            fn()
            t, s1 = time.perf_counter() - t0, upc.stats()
            run = (t, s1["mpi_seconds"] - s0["mpi_seconds"], s1["rma_ops"] - s0["rma_ops"])
            best = run if best is None or run[0] < best[0] else best
    return best


def rank_main(n_dot, n_stencil, steps):
    """One rank's part: measure, gather to rank 0, which prints one JSON line."""
    import numpy as np
    from mpi4py import MPI

    from pygomp import upc
    sys.path.insert(0, ROOT)
    from examples.upc_stencil import dot, fill, stepper

    x = upc.shared_array(n_dot, np.float64, blocksize=None)
    y = upc.shared_array(n_dot, np.float64, blocksize=None)
    fill(x, np.sin)
    fill(y, np.cos)
    u = upc.shared_array(n_stencil, np.float64, blocksize=None)
    v = upc.shared_array(n_stencil, np.float64, blocksize=None)
    fill(u, lambda g: (g % 101) / 101.0)
    upc.barrier()
    step = stepper(u, v)
    upc.forall(dot, x, y, reduce="+")          # builds the kernels
    step()
    rows = {"dot": measure(lambda: upc.forall(dot, x, y, reduce="+"), 5),
            "stencil": measure(step, steps)}
    every = MPI.COMM_WORLD.gather(rows, root=0)
    if MPI.COMM_WORLD.rank == 0:
        out = {}
        for name in rows:
            per_rank = [r[name] for r in every]
            out[name] = {"seconds": max(p[0] for p in per_rank),
                         "mpi_share": sum(p[1] / p[0] for p in per_rank) / len(per_rank),
                         "rma_ops": max(p[2] for p in per_rank)}
        print("RESULT " + json.dumps(out), flush=True)
    if MPI.COMM_WORLD.size == 1:
        print("SIDE " + json.dumps(side_by_side(x, y, u, v, step, steps)), flush=True)
    upc.barrier()
    for a in (x, y, u, v):
        a.free()


def side_by_side(x, y, u, v, step, steps):
    """On 1 rank: {kernel: {"upc": s, "target_data": s, "numpy": s}}, the best seconds
    of one call or step of the shared arrays' kernel, of the same kernel on plain arrays
    that target_data keeps on the same device, and of numpy, timed in turn (each first
    in its turn) so that the machine's other load falls on all three alike."""
    import numpy as np

    import pygomp as omp
    from pygomp import upc
    from examples.upc_stencil import dot, smooth

    n, dev = u.size, upc.thread_device(0)
    xp, yp, up = x[...], y[...], u[...]
    pair, halo = [up, np.zeros_like(up)], np.zeros(2)
    host = [up.copy(), np.zeros_like(up)]

    def td_step():
        smooth.on(dev)(pair[1], 0, n, 1, pair[0], halo, n)
        pair.reverse()

    def np_step():
        a, b = host
        b[0], b[-1] = a[0], a[-1]
        np.add(a[:-2], a[2:], out=b[1:-1])
        b[1:-1] *= 0.25
        b[1:-1] += 0.5 * a[1:-1]
        host.reverse()

    def in_turn(fns, calls):
        best = [float("inf")] * len(fns)
        for c in range(calls):
            for k in range(len(fns)):           # each goes first in its turn
                i = (c + k) % len(fns)
                t0 = time.perf_counter()
                fns[i]()
                best[i] = min(best[i], time.perf_counter() - t0)
        return dict(zip(("upc", "target_data", "numpy"), best))

    with omp.target_data(dev, to=[xp, yp], tofrom=pair):
        td_step()
        return {"dot": in_turn([lambda: upc.forall(dot, x, y, reduce="+"),
                                lambda: dot.on(dev)(xp, 0, xp.size, 1, yp),
                                lambda: np.dot(xp, yp)], 30),
                "stencil": in_turn([step, td_step, np_step], 3 * steps)}


def main(quick):
    n_dot, n_stencil, steps = (1 << 20, 1 << 16, 10) if quick else (1 << 23, 1 << 20, 40)
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("bench_upc: needs mpiexec: pip install 'pygomp[mpi]'")
    print(f"pygomp.upc on PYGOMP_DEVICES={os.environ['PYGOMP_DEVICES']}, one UPC thread per "
          f"rank, {os.cpu_count()} CPU(s): dot of {n_dot} float64, stencil step on "
          f"{n_stencil} points")
    print(f"{'ranks':>5} {'kernel':<8} {'time':>10} {'MPI share':>10} {'RMA ops':>8} "
          f"{'speed-up':>9}")
    first, side = {}, None
    for ranks in (1, 2, 3):
        cmd = [mpiexec, "-n", str(ranks), sys.executable, os.path.abspath(__file__),
               "--rank", str(n_dot), str(n_stencil), str(steps)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYGOMP_UPC_TIMEOUT": "120"})
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not line:
            sys.exit(f"bench_upc: {ranks} rank(s) failed:\n{proc.stdout}\n{proc.stderr}")
        side = side or [json.loads(x[len("SIDE "):]) for x in proc.stdout.splitlines()
                        if x.startswith("SIDE ")][0]
        for name, r in json.loads(line[0][len("RESULT "):]).items():
            first.setdefault(name, r["seconds"])
            print(f"{ranks:>5} {name:<8} {r['seconds'] * 1e3:>7.2f} ms {r['mpi_share']:>9.0%} "
                  f"{r['rma_ops']:>8.0f} {first[name] / r['seconds']:>8.2f}x")
    print(f"\n1 rank, timed in turn: shared arrays, the same kernel on plain arrays inside "
          f"target_data on the same device, numpy")
    print(f"{'kernel':<8} {'upc':>10} {'target_data':>12} {'numpy':>10} {'upc/td':>7} "
          f"{'upc/numpy':>10}")
    for name, r in side.items():
        print(f"{name:<8} {r['upc'] * 1e3:>7.2f} ms {r['target_data'] * 1e3:>9.2f} ms "
              f"{r['numpy'] * 1e3:>7.2f} ms {r['upc'] / r['target_data']:>6.2f}x "
              f"{r['upc'] / r['numpy']:>9.2f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        rank_main(*map(int, sys.argv[2:5]))
    else:
        main("--quick" in sys.argv)
