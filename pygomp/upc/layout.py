"""UPC's block-cyclic layout of a shared array over THREADS threads (no MPI here).

The ultimate elements of the array, in row-major order, are cut into blocks of B
elements; block b lives on thread b mod THREADS, as that thread's local block b div
THREADS.  B = 0 (indefinite) puts every element on thread 0.  ``blocksize=None`` is UPC's
``[*]``: B = ceil(N / THREADS).  An element's local address is its offset, in elements,
in its thread's part: (local block) * B + phase.  Every function takes ints or int64
numpy arrays of flat indices.
"""
from __future__ import annotations

import math

import numpy as np


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _nonneg_int(value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 0:
        raise ValueError(f"{what} must be an int >= 0, not {value!r}")
    return int(value)


class Layout:
    """Where each element of a shape lives: thread, phase and local address."""

    __slots__ = ("shape", "size", "elemsize", "blocksize", "threads")

    def __init__(self, shape, elemsize: int, blocksize, threads: int):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        self.shape = tuple(_nonneg_int(n, "a shared array's extent") for n in shape)
        self.size = math.prod(self.shape)
        self.elemsize = int(elemsize)
        self.threads = _nonneg_int(threads, "THREADS")
        if self.threads < 1:
            raise ValueError("THREADS must be >= 1")
        if blocksize is None:               # UPC's [*]
            blocksize = max(1, _ceil_div(self.size, self.threads))
        self.blocksize = _nonneg_int(blocksize, "blocksize")

    def __eq__(self, other):
        return isinstance(other, Layout) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self):
        return hash((self.shape, self.elemsize, self.blocksize, self.threads))

    def __repr__(self):
        return (f"Layout(shape={self.shape}, blocksize={self.blocksize}, "
                f"THREADS={self.threads}, elemsize={self.elemsize})")

    # -- element -> place -----------------------------------------------------------
    def place(self, i):
        """(thread, local address in elements) of flat index i."""
        B, T = self.blocksize, self.threads
        if B == 0:
            return i * 0, i
        block = i // B
        return block % T, (block // T) * B + i % B

    def phase(self, i):
        return i * 0 if self.blocksize == 0 else i % self.blocksize

    def index(self, thread, addr):
        """The flat index of local address addr on thread (the inverse of `place`)."""
        B, T = self.blocksize, self.threads
        if B == 0:
            return addr
        return ((addr // B) * T + thread) * B + addr % B

    # -- per thread -----------------------------------------------------------------
    def count(self, thread: int) -> int:
        """How many elements have affinity to thread."""
        return affinitysize(self.size, self.blocksize, thread, self.threads)

    def indices(self, thread: int) -> np.ndarray:
        """The flat indices of thread's elements, in local-address order (int64)."""
        return np.asarray(self.index(thread, np.arange(self.count(thread), dtype=np.int64)),
                          dtype=np.int64)

    @property
    def capacity(self) -> int:
        """Elements a thread's part holds: the most any thread has, in whole blocks."""
        B, T, N = self.blocksize, self.threads, self.size
        if B == 0:
            return N
        return _ceil_div(_ceil_div(N, B), T) * B

    @property
    def localsizeof(self) -> int:
        return self.capacity * self.elemsize


def affinitysize(totalsize: int, nbytes: int, threadid: int, threads: int) -> int:
    """UPC's upc_affinitysize: bytes with affinity to threadid of an object of totalsize
    bytes dealt round-robin in blocks of nbytes (0: indefinite, all on thread 0)."""
    totalsize = _nonneg_int(totalsize, "totalsize")
    nbytes = _nonneg_int(nbytes, "nbytes")
    threadid = _nonneg_int(threadid, "threadid")
    if threadid >= threads:
        raise ValueError(f"threadid {threadid} is not a thread (THREADS is {threads})")
    if nbytes == 0:
        return totalsize if threadid == 0 else 0
    full, rest = divmod(totalsize, nbytes)
    n = (full // threads + (threadid < full % threads)) * nbytes
    return n + (rest if full % threads == threadid else 0)
