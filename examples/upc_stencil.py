"""A distributed dot product and a 1-D stencil on pygomp.upc shared arrays.

    mpiexec -n 2 python examples/upc_stencil.py [N] [STEPS]

Every rank drives its UPC threads (devices); each thread works on the elements that have
affinity to it and reads its two halo elements from its neighbours through MPI.
Rank 0 checks both results against numpy.
"""
import sys

import numpy as np

import pygomp as omp
from pygomp import upc


@omp.target(map={"x": "to", "y": "to"})
def dot(x, thread: int, block: int, threads: int, y):
    s = 0.0
    for j in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[j] * y[j]
    return s


@omp.target(map={"u": "to", "halo": "to"})
def smooth(v, thread: int, block: int, threads: int, u, halo, n: int):
    """v = u smoothed by (1/4, 1/2, 1/4), ends fixed; halo[2t], halo[2t+1] hold the
    neighbours of thread t's part (one block: UPC's [*] layout)."""
    m = v.shape[0]
    for j in omp.parallel_range(m):
        g = upc.global_index(j, thread, block, threads)
        if g == 0 or g == n - 1:
            v[j] = u[j]
        else:
            left = u[j - 1] if j > 0 else halo[2 * thread]
            right = u[j + 1] if j < m - 1 else halo[2 * thread + 1]
            v[j] = 0.5 * u[j] + 0.25 * (left + right)


def fill(a, f):
    """Each of this rank's threads writes f(global index) into its own part."""
    for t in upc.my_threads():
        a.local(t)[:] = f(a.global_indices(t))


def halo_reader(u):
    """A function that returns the halo array of this rank's threads, read with one MPI
    get per neighbouring rank (the ends of the array have no neighbour to read)."""
    n = u.size
    want, slots = [], []
    for t in upc.my_threads():
        if u.layout.count(t):
            g = u.global_indices(t)
            for slot, i in ((2 * t, g[0] - 1), (2 * t + 1, g[-1] + 1)):
                if 0 <= i < n:
                    want.append(i)
                    slots.append(slot)
    want, slots = np.array(want, dtype=np.int64), np.array(slots, dtype=np.int64)

    def read(halo):
        if want.size:
            halo[slots] = u[want]
        return halo
    return read


def stepper(u, v):
    """A function that makes one step from u into v, then swaps them; it returns the
    array that holds the latest values."""
    halo = np.zeros(2 * upc.THREADS)
    pair, read = [u, v], [halo_reader(u), halo_reader(v)]

    def step():
        upc.forall(smooth, pair[1], pair[0], read[0](halo), u.size)
        upc.barrier()
        pair.reverse()
        read.reverse()
        return pair[0]
    return step


def stencil(u, v, steps):
    step = stepper(u, v)
    for _ in range(steps):
        u = step()
    return u


def main(n=1 << 16, steps=50):
    x = upc.shared_array(n, np.float64, blocksize=None)      # UPC's [*]: one block per thread
    y = upc.shared_array(n, np.float64, blocksize=None)
    fill(x, np.sin)
    fill(y, np.cos)
    upc.barrier()
    total = upc.forall(dot, x, y, reduce="+")

    u = upc.shared_array(n, np.float64, blocksize=None)
    v = upc.shared_array(n, np.float64, blocksize=None)
    fill(u, lambda g: (g * g % 101) / 101.0)
    upc.barrier()
    result = stencil(u, v, steps)

    if 0 in upc.my_threads():
        g = np.arange(n)
        want = np.dot(np.sin(g), np.cos(g))
        assert np.isclose(total, want), (total, want)
        print(f"dot product ok: {total:.6f} on {upc.THREADS} UPC threads")
        ref = (g * g % 101) / 101.0
        for _ in range(steps):
            ref[1:-1] = 0.5 * ref[1:-1] + 0.25 * (ref[:-2] + ref[2:])
        err = np.abs(result[...] - ref).max()
        assert err < 1e-12, err
        print(f"stencil ok: {steps} steps of {n} points, max error {err:.1e}")
    upc.barrier()
    for a in (x, y, u, v):
        a.free()


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
