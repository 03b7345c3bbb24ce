"""One rank goes wrong (argv[1] says how); run by tests/test_upc_mpi.py under mpiexec.

Every way must end the whole job with an error that names the problem, never hang.
"""
import sys
import time

import numpy as np
from mpi4py import MPI

import pygomp as omp
from pygomp import upc

RANK, LAST = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size - 1
how = sys.argv[1]

a = upc.shared_array(12 + (RANK if how == "mismatch" else 0), np.float64)
if RANK == LAST:
    if how == "raise":
        raise ValueError(f"rank {RANK} gives up")
    if how == "skip":           # leaves without the barrier the others wait in
        sys.exit(0)
    if how == "stall":          # never arrives: the others time out
        time.sleep(600)

if how == "kernel":
    @omp.target
    def bad(local, thread: int, block: int, threads: int):
        for j in omp.parallel_range(local.shape[0]):
            local[j] = {j: 1}[j]            # a dict: outside the kernel language

    if RANK == LAST:
        upc.forall(bad, a)
upc.barrier()
print(f"rank {RANK}: passed the barrier", flush=True)
