"""A private virtual address space over OpenCL buffers, and what tells when a CPU
device's buffers may be copied without the queue (`Quiet`).

The runtime deals in int device addresses; OpenCL hands out opaque buffers.  Each buffer
gets a range of addresses from a bump allocator (ranges are never reused, so a stale
address can never reach a newer buffer), and any address inside a range resolves to
``(buffer, offset)``.  Ranges are separated by a gap, so one-past-the-end of one buffer is
never the start of the next.
"""
from __future__ import annotations

import threading

from sortedcontainers import SortedDict

BASE = 1 << 40
ALIGN = 4096          # above every device's base-address alignment (in bytes)


class AddressSpace:
    def __init__(self, base: int = BASE):
        self._next = base
        self._ranges = SortedDict()      # start -> (end, buffer)
        self._lock = threading.Lock()

    def reserve(self, size: int) -> int:
        """A fresh range of `size` bytes with nothing behind it (for kernel handles)."""
        with self._lock:
            start = self._next
            self._next = start + _round_up(max(size, 1), ALIGN) + ALIGN
            return start

    def add(self, buffer, size: int) -> int:
        start = self.reserve(size)
        with self._lock:
            self._ranges[start] = (start + max(size, 1), buffer)
        return start

    def remove(self, addr: int):
        """Forget the buffer starting at `addr`; returns it (KeyError if none)."""
        with self._lock:
            end, buffer = self._ranges.pop(addr)
        return buffer

    def resolve(self, addr: int):
        """``(buffer, offset, bytes left)`` of the buffer holding `addr`, else KeyError.

        One past the end of a buffer resolves too (an empty section at its end)."""
        hit = self._ranges.get(addr)            # the start of a buffer: one dict lookup
        if hit is not None:
            return hit[1], 0, hit[0] - addr
        with self._lock:
            i = self._ranges.bisect_right(addr) - 1
            if i >= 0:
                start, (end, buffer) = self._ranges.peekitem(i)
                if addr <= end:
                    return buffer, addr - start, end - addr
        raise KeyError(f"device address {addr:#x} is in no OpenCL buffer")

    def __len__(self):
        return len(self._ranges)

    def buffers(self):
        with self._lock:
            return [(start, end - start, buf) for start, (end, buf) in self._ranges.items()]


class Quiet:
    """Whether a device's queue holds no launch that may still run, so that its buffers
    in host memory may be read and written by plain copies.  The queue is in order: it
    is quiet when no Python launch is being enqueued (`open`: the ids of those runs)
    and the event of the last launch enqueued (`last`: queue handle -> event, which
    the C fast path writes too) is complete.  Any other command on a user's buffer
    (a copy, a fill) is waited for by whoever enqueued it."""
    __slots__ = ("open", "last", "queue", "complete", "seen")

    def __init__(self, last: dict, queue: int, complete: int):
        self.open, self.last, self.queue, self.complete = set(), last, queue, complete
        self.seen = None                # the last event found complete

    def __call__(self) -> bool:
        if self.open:
            return False
        ev = self.last.get(self.queue)
        if ev is None or ev is self.seen:
            return True
        if ev.command_execution_status != self.complete:
            return False
        self.seen = ev
        return True

    def begin(self, run) -> None:
        """A launch of ``run`` is being enqueued."""
        self.open.add(id(run))

    def end(self, run, event) -> None:
        """``run``'s launches are enqueued; ``event`` (None: none) is the last."""
        if event is not None:
            self.last[self.queue] = event
        self.open.discard(id(run))


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m
