"""OpenACC's async queues, per device (what `pygomp.acc`'s routines queue work on).

A queue's work runs as runtime tasks (`pygomp.runtime.tasks`), each after the one
before; the first error stops the queue's later work until `wait` raises it.  An
error nobody waited for is printed at exit.  Every function takes the device: choosing
it is `pygomp.acc`'s business.
"""
from __future__ import annotations

import atexit
import ctypes
import sys
import threading

from . import accprof, deferred, tasks

_lock = threading.Lock()
_queues = {}      # (device, queue number) -> Queue


class Queue:
    """One async queue: each task depends on the address of ``key``."""

    def __init__(self):
        self.key = ctypes.create_string_buffer(1)
        self.lock = threading.Lock()    # threads that queue work at once: `last` in order
        self.last = None            # the task of the work queued last
        self.error = None

    def address(self):
        return ctypes.addressof(self.key)

    def done(self):
        return self.last is None or self.last.done()

    def wait(self):
        if self.last is not None:
            self.last.wait()
        error, self.error = self.error, None
        if error is not None:
            raise error


def queue(dev, q) -> Queue:
    """Queue ``q`` of ``dev``, made on first use."""
    with _lock:
        found = _queues.get((dev, q))
        if found is None:
            if not _queues:
                atexit.register(_unseen_errors)
            found = _queues[dev, q] = Queue()
        return found


def find(dev, q):
    """Queue ``q`` of ``dev`` if it exists, else None."""
    return _queues.get((dev, q))


def of(dev) -> list:
    """The numbers of the queues ``dev`` has."""
    with _lock:
        return [q for (d, q) in _queues if d is dev]


def _unseen_errors():
    for (dev, q), found in list(_queues.items()):
        if found.error is not None:
            print(f"pygomp: device {dev.number}, async queue {q}: an error nobody waited "
                  f"for: {found.error}", file=sys.stderr)


def enqueue(dev, q, fn, after=()) -> None:
    """Run ``fn()`` on queue ``q`` of ``dev`` after the queue's earlier work and the
    work queued so far on the queues ``after``."""
    mine = queue(dev, q)
    earlier = [queue(dev, a).last for a in after if a != q]     # waited for, not depended
    earlier = [t for t in earlier if t is not None]              # on: their later work goes on

    def work():
        for t in earlier:
            t.wait()
        if mine.error is None:
            try:
                fn()
            except Exception as e:          # noqa: BLE001  (kept for `wait` to raise)
                mine.error = e

    with mine.lock:
        mine.last = tasks.submit(work, depend={"inout": [mine.address()]})


def run_now(dev, work) -> None:
    """Do deferred ``work`` (`pygomp.runtime.deferred`) now; device memory it frees is
    freed after the work queued so far on every queue of ``dev``."""
    if any(w[0] == dev.plugin.free for w in work):
        wait(dev, of(dev))
    deferred.do(work)


def run_on(dev, q, work, stage) -> None:
    """Deferred ``work`` on queue ``q``: its profiling events now, the rest after the
    queue's earlier work, its frees after every queue's work so far (as cuMemFree
    waits for the device).  With ``stage`` the copies to the device read the host's
    bytes as they are now."""
    free = dev.plugin.free
    frees = [w for w in work if w[0] == free]
    rest = []       # in order: events now (an async construct's), staged copies now
    for w in work:
        if accprof.is_event(w):
            deferred.do([w])
        elif w[0] != free:
            rest.append(_staged(w) if stage and w[0] == dev.plugin.host2dev else w)
    enqueue(dev, q, lambda: deferred.do(rest))
    if frees:
        enqueue(dev, q, lambda: deferred.do(frees), after=of(dev))


def _staged(w):
    """A deferred host-to-device copy that reads a copy of its host bytes taken now."""
    fn, (local, d, src, size), _ = w
    copy = ctypes.create_string_buffer(ctypes.string_at(src, size), max(size, 1))
    return fn, (local, d, ctypes.addressof(copy), size), copy


def done(dev, q) -> bool:
    """Whether queue ``q`` of ``dev`` has finished its work (true if it has none)."""
    found = find(dev, q)
    return found is None or found.done()


def wait(dev, qs) -> None:
    """Wait for the work of the queues ``qs`` of ``dev``; raise the first error of each."""
    for q in qs:
        found = find(dev, q)
        if found is not None:
            found.wait()
