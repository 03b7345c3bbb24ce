"""pygomp.upc: UPC-style shared arrays over the devices of every MPI rank.

    import numpy as np, pygomp as omp
    from pygomp import upc

    x = upc.shared_array(10**6, np.float64, blocksize=None)     # collective; UPC's [*]
    x[:] = np.arange(10**6)          # remote parts written with one MPI put per rank
    upc.barrier()

    @omp.target
    def double_plus_index(local, thread: int, block: int, threads: int):
        for j in omp.parallel_range(local.shape[0]):
            local[j] = 2 * local[j] + upc.global_index(j, thread, block, threads)

    upc.forall(double_plus_index, x)     # each thread of this rank, on its device
    upc.barrier()
    print(upc.all_reduce(x, "+"), x[123], upc.threadof(x.ptr(123)))

A UPC thread is one device of one rank (see `world` for which devices); ``THREADS`` is
their number over all ranks and `my_threads()` the ones this rank drives.  Each
thread's part stays on its device from `shared_array` to `free`: kernels copy nothing,
and host accesses copy just the elements they touch.  Collective
calls (shared_array, free, barrier, all_reduce, forall with reduce=) must be made by
every rank in the same order.  MPI (mpi4py) starts on first use, not at import.
"""
from __future__ import annotations

import os

import numpy as np

from . import layout as _layout
from . import world as _world
from .array import SharedArray
from .layout import Layout
from .pointer import SharedPointer
from .work import all_reduce, forall, global_index
from .world import UPCError

__all__ = ["THREADS", "my_threads", "shared_array", "SharedArray", "SharedPointer", "Layout",
           "barrier", "forall", "all_reduce", "global_index", "thread_device", "threadof",
           "phaseof", "addrfield", "localsizeof", "blocksizeof", "elemsizeof",
           "affinitysize", "stats", "UPCError"]


def __getattr__(name):
    if name == "THREADS":
        return _world.get().threads
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def my_threads() -> tuple[int, ...]:
    """The UPC threads this rank drives (consecutive numbers)."""
    return _world.get().my_threads


def thread_device(thread: int) -> int:
    """The device number that drives thread, one of this rank's."""
    return _world.get().device_of(thread)


def shared_array(shape, dtype=np.float64, blocksize=1) -> SharedArray:
    """A zero-filled shared array (collective).  blocksize: elements per block (UPC's
    default 1, cyclic), 0 for indefinite (all on thread 0), None for UPC's [*]."""
    return SharedArray(shape, dtype, blocksize)


def barrier() -> None:
    """upc_barrier: every rank waits for the others; writes made before it are seen
    after it."""
    _world.get().barrier()


# -- UPC's queries ------------------------------------------------------------------------

def _pointer(p) -> SharedPointer:
    if isinstance(p, SharedArray):
        return p.ptr(0)
    if isinstance(p, SharedPointer):
        return p
    raise TypeError(f"expected a pointer to shared or a shared array, not {type(p).__name__}")


def _layout_of(a) -> Layout:
    got = getattr(a, "layout", a)
    if not isinstance(got, Layout):
        raise TypeError(f"expected a shared array, not {type(a).__name__}")
    return got


def threadof(p) -> int:
    """upc_threadof: the thread that the element pointed at has affinity to."""
    return _pointer(p).thread


def phaseof(p) -> int:
    """upc_phaseof: the pointer's place within its block (0 for an indefinite block)."""
    return _pointer(p).phase


def addrfield(p) -> int:
    """upc_addrfield: the byte offset of the element in its thread's local part."""
    return _pointer(p).addrfield


def localsizeof(a) -> int:
    """upc_localsizeof: bytes of the largest thread's part, in whole blocks (the same on
    every thread)."""
    return _layout_of(a).localsizeof


def blocksizeof(a) -> int:
    """upc_blocksizeof: elements per block (0: indefinite)."""
    return _layout_of(a).blocksize


def elemsizeof(a) -> int:
    """upc_elemsizeof: bytes of one ultimate element."""
    return _layout_of(a).elemsize


def affinitysize(totalsize: int, nbytes: int, threadid: int) -> int:
    """upc_affinitysize: bytes with affinity to threadid of an object of totalsize bytes
    in blocks of nbytes (0: indefinite)."""
    return _layout.affinitysize(totalsize, nbytes, threadid, _world.get().threads)


def stats() -> dict:
    """This rank's time in MPI calls so far, and its count of one-sided gets and puts."""
    w = _world.get()
    return {"mpi_seconds": w.mpi_seconds, "rma_ops": w.rma_ops}


# -- python -m pygomp info ------------------------------------------------------------------

_LAUNCHED = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")


def info_lines():
    """None outside mpiexec; under it (collective) the lines that say which threads and
    devices each rank has, on rank 0, and [] on the other ranks."""
    if not any(v in os.environ for v in _LAUNCHED):
        return None
    try:
        w = _world.get()
    except ImportError as e:
        return [f"unavailable: {e} (pip install 'pygomp[mpi]')"]
    rows = w.gather_objects("info", (w.node_rank, w.node_size, w.my_threads, w.devices))
    if w.rank:
        return []
    per_rank = w.per_rank or "(unset: the offload devices shared among a machine's ranks)"
    lines = [f"THREADS = {w.threads} on {w.size} rank(s)",
             f"PYGOMP_UPC_DEVICES_PER_RANK = {per_rank}"]
    for r, (node_rank, node_size, threads, devices) in enumerate(rows):
        lines.append(f"rank {r} (node-local rank {node_rank} of {node_size}): threads "
                     f"{', '.join(map(str, threads))} on devices "
                     f"{', '.join(map(str, devices))}")
    return lines
