"""The MPI side: ranks, the UPC threads each rank drives, collectives with a timeout.

A UPC thread is one device of one rank.  Threads are numbered rank by rank: rank r
drives k threads, each on an offload device of its own process.  k is
PYGOMP_UPC_DEVICES_PER_RANK, by default the number of offload devices divided among the
ranks of one machine (at least 1); a rank with node-local rank l takes the devices
(l*k + j) mod n, j < k, of its n offload devices, so that the ranks of one machine share
them evenly.  With no offload device, every thread runs on the initial device.

Every collective first agrees on what each rank is doing (one MPI allgather), so a rank
that calls another collective, or exits, is an error on every rank rather than a hang; a
rank that never arrives is an error after PYGOMP_UPC_TIMEOUT seconds (default: wait).
An uncaught exception on one rank of several aborts all of them (MPI_Abort).
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback

import numpy as np

import pygomp as omp
from pygomp.errors import PygompError

# what a rank can be doing in a collective (index = code in the allgather)
STEPS = ("init", "barrier", "shared_array", "free", "reduce", "info", "exit")


class UPCError(PygompError, RuntimeError):
    """A UPC collective failed: ranks that disagree or do not arrive, bad settings."""


UPCError.__module__ = "pygomp.upc"


def _env_number(name, kind, minimum):
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise UPCError(f"{name}={text!r}: expected a number >= {minimum}")
    return value


class World:
    """This process's place among the ranks (made once, on first use, collectively)."""

    def __init__(self):
        from mpi4py import MPI
        self.MPI = MPI
        self.timeout = _env_number("PYGOMP_UPC_TIMEOUT", float, 0) or None
        self.mpi_seconds = 0.0          # time spent in MPI calls (see `stats`)
        self.rma_ops = 0                # one-sided gets and puts issued
        self.arrays = []                # live shared arrays, in creation order
        world = MPI.COMM_WORLD
        self.rank, self.size = world.rank, world.size
        if self.size > 1:
            _abort_on_uncaught(self)
        self.comm = world.Dup()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.node_rank, self.node_size = node.rank, node.size
        node.Free()
        n = omp.omp_get_num_devices()
        self.per_rank = _env_number("PYGOMP_UPC_DEVICES_PER_RANK", int, 1)
        k = self.per_rank or max(1, n // self.node_size)
        self.devices = [(self.node_rank * k + j) % n for j in range(k)] if n else \
            [omp.omp_get_initial_device()] * k
        counts = self.allgather("init", k)
        self.threads = sum(counts)
        self.first = sum(counts[:self.rank])
        self.my_threads = tuple(range(self.first, self.first + k))
        self.rank_of = np.repeat(np.arange(self.size), counts)     # thread -> rank
        self.slot_of = np.arange(self.threads) - np.repeat(np.cumsum(counts) - counts, counts)
        atexit.register(self.close)

    def slot(self, thread: int) -> int:
        """The place of thread among this rank's threads (an error for another's)."""
        if thread not in self.my_threads:
            raise ValueError(f"thread {thread} is not one of this rank's threads "
                             f"(rank {self.rank} drives threads "
                             f"{', '.join(map(str, self.my_threads))})")
        return thread - self.first

    def device_of(self, thread: int) -> int:
        """The device number that drives thread (one of this rank's)."""
        return self.devices[self.slot(thread)]

    # -- MPI calls, timed ---------------------------------------------------------------
    def timed(self):
        return _Timed(self)

    def wait(self, request, step):
        """Wait for a nonblocking MPI request, at most PYGOMP_UPC_TIMEOUT seconds."""
        with self.timed():
            if self.timeout is None:
                return request.Wait()
            deadline, nap = time.monotonic() + self.timeout, 1e-5
            while not request.Test():
                if time.monotonic() > deadline:
                    raise UPCError(f"upc {step}: rank {self.rank} waited {self.timeout:g} s "
                                   f"(PYGOMP_UPC_TIMEOUT) for the other ranks")
                time.sleep(nap)
                nap = min(2 * nap, 1e-3)

    def agree(self, step):
        """Every rank must be at the same collective step; returns when all are."""
        codes = self._gather_words(step, [0])
        self._check_steps(step, codes[:, 0])

    def allgather(self, step, value: int) -> list[int]:
        """Agree on ``step`` and gather one int per rank."""
        words = self._gather_words(step, [value])
        self._check_steps(step, words[:, 0])
        return words[:, 1].tolist()

    def _gather_words(self, step, values):
        send = np.array([STEPS.index(step), *values], dtype=np.int64)
        if self.size == 1:
            return send[None]
        recv = np.empty((self.size, send.size), dtype=np.int64)
        self.wait(self.comm.Iallgather(send, recv), step)
        return recv

    def _check_steps(self, step, codes):
        if (codes != codes[0]).any():
            doing = ", ".join(f"rank {r}: {STEPS[c]}" for r, c in enumerate(codes))
            raise UPCError(f"upc {step}: the ranks are not in the same collective call "
                           f"({doing}): every rank must make the same collective calls in "
                           f"the same order")

    def barrier(self):
        """upc_barrier.  With several ranks it also settles the devices (see `array`):
        a second agreement keeps every rank waiting until all have."""
        for a in self.arrays:
            a._sync()
        owed = [self.size > 1 and any(a._sent for a in self.arrays),
                self.size > 1 and any(a.parts.any_newer_on_device() for a in self.arrays)]
        words = self._gather_words("barrier", owed)
        self._check_steps("barrier", words[:, 0])
        if words[:, 1:].any():
            self._settle(bool(words[:, 1].any()))
            self.agree("barrier")
        for a in self.arrays:
            a._sync()

    def _settle(self, exchange):
        """Settle every array's parts; with ``exchange``, first hand each owner the
        elements the other ranks put to it since the last barrier (one exchange for all
        arrays)."""
        puts = [[] for _ in self.arrays]
        if exchange:
            out = [[] for _ in range(self.size)]
            for i, a in enumerate(self.arrays):
                for r, disp, values in a._sent:
                    out[r].append((i, disp, values))
                a._sent.clear()
            with self.timed():
                got = self.comm.alltoall(out)
            for records in got:
                for i, disp, values in records:
                    puts[i].append((disp, values))
        for a, mine in zip(self.arrays, puts):
            a._settle(mine)

    def gather_objects(self, step, obj) -> list:
        """Agree on ``step``, then gather one picklable object per rank (on every rank)."""
        self.agree(step)
        if self.size == 1:
            return [obj]
        with self.timed():
            return self.comm.allgather(obj)

    def close(self):
        """At exit: free what is still allocated (collective), or abort if ranks differ."""
        try:
            self.agree("exit")
            for a in list(self.arrays):
                a._release()
            self.comm.Free()
        except Exception as e:          # noqa: BLE001  (at exit: report, then stop all)
            _abort(self, f"pygomp.upc: rank {self.rank}: {e}\n")


class _Timed:
    __slots__ = ("world", "start")

    def __init__(self, world):
        self.world = world

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.world.mpi_seconds += time.perf_counter() - self.start


def _abort_on_uncaught(world):
    """An uncaught exception on one rank stops every rank (after printing it)."""
    def hook(kind, value, tb):
        text = "".join(traceback.format_exception(kind, value, tb))
        _abort(world, f"{text}pygomp.upc: rank {world.rank} of {world.size} stopped on "
                      f"{kind.__name__}: aborting all ranks\n")

    sys.excepthook = hook


def _abort(world, text):
    """Print ``text`` (one write: no mixing with other ranks) and stop every rank.  The
    pause lets mpiexec forward the text before the abort kills the job's processes."""
    sys.stderr.write(text)
    sys.stderr.flush()
    time.sleep(0.5)
    world.MPI.COMM_WORLD.Abort(1)


_world = None
_lock = threading.Lock()


def get() -> World:
    """The world, set up on first use (collective: every rank must get here)."""
    global _world
    if _world is None:
        with _lock:
            if _world is None:
                _world = World()
    return _world
