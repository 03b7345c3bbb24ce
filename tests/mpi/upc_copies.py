"""What host accesses copy between a rank's buffer and its device: run by
tests/test_upc_mpi.py under mpiexec with PYGOMP_INFO=8 (each copy is a line on stderr).
Before each step the rank writes "step NAME" on stderr, so that the test can tell which
copies each step made, and "copies: ok" at the end on the same stream (mpiexec may glue
lines of stdout and stderr); the values are checked against numpy here."""
import sys

import numpy as np

import pygomp as omp
from pygomp import upc

N = 1 << 14


@omp.target
def add_index(x, thread: int, block: int, threads: int):
    for j in omp.parallel_range(x.shape[0]):
        x[j] += upc.global_index(j, thread, block, threads)


def step(name):
    print(f"step {name}", file=sys.stderr, flush=True)


x = upc.shared_array(N, np.float64, blocksize=None)
want = np.zeros(N)
upc.forall(add_index, x)                # builds the kernel
want += np.arange(N)
step("forall")
upc.forall(add_index, x)
want += np.arange(N)
step("read one")
assert x[100] == want[100]
step("read a run")
assert np.array_equal(x[200:300], want[200:300])
step("write one")
x[5] = -1.0
want[5] = -1.0
step("write two runs")
x[np.array([10, 11, 12, 9000])] = 7.0
want[[10, 11, 12, 9000]] = 7.0
step("forall after writes")
upc.forall(add_index, x)
want += np.arange(N)
step("local")
part = x.local(upc.my_threads()[0])
assert np.array_equal(part, want)
part[:] = 2.0
step("forall after local")
upc.forall(add_index, x)
step("read all")
assert np.array_equal(x[...], 2.0 + np.arange(N))
step("free")
x.free()
step("end")
print("copies: ok", file=sys.stderr, flush=True)
