"""pygomp.upc on real MPI ranks: run by tests/test_upc_mpi.py under mpiexec.

Every rank checks the layout as seen through MPI, remote reads and writes (one MPI
operation per target rank), pointers to shared, forall updates and all_reduce against
numpy, then prints "rank R: ok, N checks".
"""
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import pygomp as omp
from pygomp import upc
from pygomp.upc.layout import Layout

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples.upc_stencil import dot  # noqa: E402

RANK, SIZE = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
done = 0


def check(ok, what):
    global done
    if not ok:
        raise AssertionError(f"rank {RANK}: {what}")
    done += 1


def remote_ranks(a, flat):
    """How many ranks other than this one own some of the flat indices."""
    threads = np.atleast_1d(a.layout.place(flat)[0])
    return len({OWNER[int(t)] for t in np.unique(threads)} - {RANK})


OWNER = {t: r for r, ts in enumerate(MPI.COMM_WORLD.allgather(upc.my_threads())) for t in ts}


def ops(fn):
    """The one-sided operations that fn() issued here, and its result."""
    before = upc.stats()["rma_ops"]
    got = fn()
    return upc.stats()["rma_ops"] - before, got


def check_layout(shape, blocksize):
    a = upc.shared_array(shape, np.int64, blocksize=blocksize)
    n = a.size
    lay = Layout(shape, 8, blocksize, upc.THREADS)
    check(upc.blocksizeof(a) == lay.blocksize and upc.elemsizeof(a) == 8
          and upc.localsizeof(a) == lay.localsizeof, f"queries of {a}")
    for t in upc.my_threads():
        a.local(t)[:] = a.global_indices(t)            # each thread fills its own part
    upc.barrier()
    flat = np.arange(n)
    count, got = ops(lambda: a[...])
    check(np.array_equal(got, flat.reshape(shape)), f"{a}: a[...] = {got}")
    check(count == remote_ranks(a, flat), f"{a}: a[...] took {count} MPI operations")
    for i in range(0, n, max(1, n // 7)):
        p = a.ptr(int(i))
        thread, addr = lay.place(i)
        check((upc.threadof(p), upc.addrfield(p)) == (thread, addr * 8), f"{a}: ptr({i})")
        check(p[0] == i and (p + 1 == a.ptr(i + 1)), f"{a}: *ptr({i})")
        if thread in upc.my_threads():
            check(p.local()[0] == i, f"{a}: local cast of ptr({i})")
        else:
            try:
                p.local()
                check(False, f"{a}: a local cast of a remote pointer must fail")
            except ValueError as e:
                check(f"thread {thread} is not one of this rank's" in str(e), str(e))
    upc.barrier()
    a.free()


def check_remote_writes():
    a = upc.shared_array((29,), np.float64, blocksize=3)
    mine = np.arange(RANK, 29, SIZE)
    count, _ = ops(lambda: a.__setitem__(slice(RANK, None, SIZE), -mine))
    check(count == remote_ranks(a, mine), f"a[{RANK}::{SIZE}] = ... took {count} operations")
    upc.barrier()
    for t in upc.my_threads():
        check(np.array_equal(a.local(t), -a.global_indices(t)), f"thread {t} after writes")
    upc.barrier()
    b = upc.shared_array((6, 9), np.float64, blocksize=4)
    if RANK == SIZE - 1:
        b[1:5, ::2] = 7.0
        b[np.array([0, 5, 0]), 8] = [1.0, 2.0, 3.0]     # the last of a repeat wins
        b[2, 3] = 5.0
    upc.barrier()
    want = np.zeros((6, 9))
    want[1:5, ::2] = 7.0
    want[0, 8], want[5, 8], want[2, 3] = 3.0, 2.0, 5.0
    check(np.array_equal(b[...], want), f"b after remote writes: {b[...]}")
    check(b[2, 3] == 5.0 and np.array_equal(b[:, 8], want[:, 8]), "element and column reads")
    upc.barrier()
    a.free()
    b.free()


@omp.target(map={"y": "to"})
def axpy_plus_index(x, thread: int, block: int, threads: int, y, alpha: float):
    for j in omp.parallel_range(x.shape[0]):
        x[j] = x[j] + alpha * y[j] + upc.global_index(j, thread, block, threads)


@omp.target
def bump_even(x, thread: int, block: int, threads: int):
    for j in omp.parallel_range(x.shape[0]):
        if upc.global_index(j, thread, block, threads) % 2 == 0:
            x[j] = x[j] + 1.0


def on_devices(a):
    """[(part, device)] for this rank's parts of a on a device of their own."""
    initial = omp.omp_get_initial_device()
    return [(a.local(t), upc.thread_device(t)) for t in upc.my_threads()
            if a.layout.count(t) and upc.thread_device(t) != initial]


def check_forall():
    rng = np.random.default_rng(7)               # the same numbers on every rank
    x0, y0 = rng.random((6, 9)), rng.random((6, 9))
    x = upc.shared_array((6, 9), np.float64, blocksize=4)
    y = upc.shared_array((6, 9), np.float64, blocksize=4)
    if RANK == 0:
        x[...], y[...] = x0, y0
    upc.barrier()
    results = upc.forall(axpy_plus_index, x, y, 2.0)
    check(set(results) == set(upc.my_threads()) - {t for t in upc.my_threads()
                                                  if x.layout.count(t) == 0}, str(results))
    upc.barrier()
    want = x0 + 2.0 * y0 + np.arange(54).reshape(6, 9)
    check(np.allclose(x[...], want), f"forall update: {x[...]} != {want}")
    total = upc.forall(dot, x, y, reduce="+")
    check(np.isclose(total, np.sum(want * y0)), f"dot {total} != {np.sum(want * y0)}")
    upc.barrier()
    if RANK == SIZE - 1:                         # host writes, then the next forall
        x[1:5, 2] = -3.0
        y[0, :] = 0.5
    upc.barrier()
    upc.forall(axpy_plus_index, x, y, 1.0)
    upc.barrier()
    want[1:5, 2] = -3.0
    y0[0, :] = 0.5
    want = want + y0 + np.arange(54).reshape(6, 9)
    check(np.allclose(x[...], want), f"forall after host writes: {x[...]} != {want}")
    for t in upc.my_threads():                   # a local view, then forall
        x.local(t)[:] = 1.0
    upc.forall(axpy_plus_index, x, y, 0.0)
    upc.barrier()
    check(np.allclose(x[...], 1.0 + np.arange(54).reshape(6, 9)), f"after local: {x[...]}")
    z = upc.shared_array((6, 9), np.float64, blocksize=5)
    try:
        upc.forall(dot, x, z)
        check(False, "a shared argument laid out unlike a must fail")
    except ValueError as e:
        check("is not laid out like a" in str(e), str(e))
    try:
        upc.forall(dot, x)
        check(False, "a kernel given too few arguments must fail")
    except TypeError as e:
        check("forall passes local, thread, block, threads" in str(e), str(e))
    try:
        upc.forall(omp.target(axpy_plus_index, map={"y": "always,to"}), x, y, 1.0)
        check(False, "a shared array mapped always must fail")
    except ValueError as e:
        check("maps 'y' \"always\"" in str(e), str(e))
    upc.barrier()
    for a in (x, y, z):
        parts = on_devices(a)
        check(all(omp.omp_target_is_present(p, d) for p, d in parts), f"{a}: on its devices")
        a.free()
        check(not any(omp.omp_target_is_present(p, d) for p, d in parts),
              f"{a}: free leaves nothing mapped")
    try:
        upc.forall(axpy_plus_index, x, y, 1.0)
        check(False, "forall on a freed array must fail")
    except ValueError as e:
        check("has been freed" in str(e), str(e))


def check_one_epoch():
    """A forall writes the even elements while another rank puts the odd ones, with
    no barrier between: after the barrier both are there."""
    n = 41
    a = upc.shared_array(n, np.float64, blocksize=3)
    if RANK == 0:
        a[:] = np.arange(n, dtype=np.float64)
    upc.barrier()
    upc.forall(bump_even, a)
    if RANK == SIZE - 1:
        a[1::2] = -1.0
        check(np.array_equal(a[1::2], np.full(n // 2, -1.0)), "own puts seen at once")
    upc.barrier()
    want = np.arange(n, dtype=np.float64)
    want[::2] += 1
    want[1::2] = -1
    check(np.array_equal(a[...], want), f"forall and puts in one epoch: {a[...]}")
    upc.barrier()
    a.free()


def check_all_reduce():
    rng = np.random.default_rng(3)
    for op, data in (("+", rng.random(101)), ("max", rng.random(101)),
                     ("*", 1 + rng.random(37) / 50), ("min", rng.integers(-99, 99, 101)),
                     ("^", rng.integers(0, 1 << 40, 101))):
        a = upc.shared_array(data.shape, data.dtype, blocksize=None if op == "*" else 2)
        if RANK == SIZE - 1:
            a[:] = data
        upc.barrier()
        got = upc.all_reduce(a, op)
        ufunc = {"+": np.add, "max": np.maximum, "*": np.multiply, "min": np.minimum,
                 "^": np.bitwise_xor}[op]
        want = ufunc.reduce(data)
        ok = np.isclose(got, want, rtol=1e-12) if data.dtype.kind == "f" else got == want
        check(ok, f"all_reduce {op} {data.dtype}: {got} != {want}")
        a.free()


if __name__ == "__main__":
    check(upc.THREADS == len(OWNER) and list(upc.my_threads()) == sorted(
        t for t in OWNER if OWNER[t] == RANK), "THREADS and my_threads")
    for shape, blocksize in (((23,), 0), ((23,), 1), ((5, 7), 3), ((11,), 50),
                             ((4, 3, 5), None)):
        check_layout(shape, blocksize)
    check_remote_writes()
    check_forall()
    check_one_epoch()
    check_all_reduce()
    left = upc.shared_array(17, np.float64, blocksize=2)      # freed at exit
    upc.forall(bump_even, left)
    print(f"rank {RANK}: ok, {done} checks, THREADS {upc.THREADS}", flush=True)
