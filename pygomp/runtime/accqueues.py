"""OpenACC's async queues, per device (what `pygomp.openacc`'s routines queue work on).

A queue's work runs as runtime tasks (`pygomp.runtime.tasks`), each after the one
before; the first error stops the queue's later work until `wait` raises it.  An
error nobody waited for is printed at exit.  Copies to the host land in host memory
only from host threads (below), so that no timing changes a program's answer.  Every
function takes the device: choosing it is `pygomp.openacc`'s business.
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


def enqueue(dev, q, fn, after=()):
    """Run ``fn()`` on queue ``q`` of ``dev`` after the queue's earlier work and the
    work queued so far on the queues ``after``; returns its task."""
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
        return mine.last


# -- copies to and from host memory ---------------------------------------------------
#
# The result is the one of running each construct when it is reached, in program order,
# and only host threads write host memory, so no timing can change it:
# - a copy between host and device waits for the landing of the copies to the host
#   queued before it that write some of its bytes;
# - a copy to the device takes the host's bytes at the construct (a staged copy);
# - a copy to the host writes, when its queue gets there, into a buffer of its own (a
#   `Landing`), which lands in host memory when a host thread waits for a queue or
#   finds one done (every copy done by then lands) or reaches a construct that copies
#   those bytes, unless the host has written some of them since the construct.

_landing_lock = threading.Lock()
_landings = {}      # device -> [Landing] not landed yet, in program order


class Landing:
    """A queued copy of ``size`` bytes to host address ``host``: the host's bytes when it
    was queued (``was``) and the device's (``got``, once ``filled``)."""

    def __init__(self, host, size):
        self.host, self.size = host, size
        self.was = ctypes.string_at(host, size)
        self.got = ctypes.create_string_buffer(max(size, 1))
        self.filled = False
        self.task = None

    def fill(self, copy, local, src):           # on the queue
        copy(local, ctypes.addressof(self.got), src, self.size)
        self.filled = True

    def land(self):
        """The device's bytes into host memory, unless the queue failed before the copy
        or the host has written some of them since (its bytes stay: a scalar that GCC's
        code rewrote, or the program's race)."""
        if self.filled and ctypes.string_at(self.host, self.size) == self.was:
            ctypes.memmove(self.host, self.got, self.size)


def _overlapping(dev, w):
    """The landings that deferred work ``w``, a copy between host and device, must come
    after: those of the host bytes it reads or writes (under _landing_lock)."""
    p, fn, args = dev.plugin, w[0], w[1]
    if fn == p.host2dev:
        lo, hi = args[2], args[2] + args[3]
    elif fn == p.dev2host:
        lo, hi = args[1], args[1] + args[3]
    else:
        return []
    return [x for x in _landings.get(dev, ()) if lo < x.host + x.size and x.host < hi]


def _land(dev, which) -> None:
    """Wait for the landings ``which`` (in program order) and land them."""
    for x in which:
        x.task.wait()
    with _landing_lock:
        pending = _landings.get(dev, [])
        for x in [x for x in pending if x in which]:
            pending.remove(x)
            x.land()


def _land_before(dev, work) -> None:
    """Land the copies to the host that deferred ``work`` must come after (it copies
    some of their bytes)."""
    if _landings.get(dev):
        with _landing_lock:
            which = {x: None for w in work for x in _overlapping(dev, w)}
        _land(dev, list(which))


def _land_done(dev) -> None:
    """Land every copy to the host that ``dev``'s queues have done (a queue may have
    waited for another's work: `wait_async`)."""
    if _landings.get(dev):
        with _landing_lock:
            which = [x for x in _landings[dev] if x.task.done()]
        _land(dev, which)


def run_now(dev, work) -> None:
    """Do deferred ``work`` (`pygomp.runtime.deferred`) now, after the landings of the
    host bytes it copies (above); device memory it frees is freed after the work queued
    so far on every queue of ``dev``."""
    if any(w[0] == dev.plugin.free for w in work):
        wait(dev, of(dev))
    else:
        _land_before(dev, work)
    deferred.do(work)


def run_on(dev, q, work) -> None:
    """Deferred ``work`` on queue ``q``: its profiling events now, after the landings of
    the host bytes it copies its copies to the device staged now, the rest after the
    queue's earlier work, its copies to the host into landings (above), its frees after
    every queue's work so far (as cuMemFree waits for the device)."""
    p = dev.plugin
    frees, rest, landings = [], [], []
    for w in work:
        if accprof.is_event(w):         # an async construct's events: now
            deferred.do([w])
        elif w[0] == p.free:
            frees.append(w)
        else:
            rest.append(w)
    _land_before(dev, rest)
    for i, w in enumerate(rest):
        if w[0] == p.host2dev:
            rest[i] = _staged(w)
        elif w[0] == p.dev2host:
            local, dst, src, size = w[1]
            x = Landing(dst, size)
            landings.append(x)
            rest[i] = (x.fill, (p.dev2host, local, src), w[2])
    with _landing_lock:         # landings listed in the order their tasks are queued
        task = enqueue(dev, q, lambda: deferred.do(rest))
        for x in landings:
            x.task = task
        if landings:
            _landings.setdefault(dev, []).extend(landings)
    if frees:
        enqueue(dev, q, lambda: deferred.do(frees), after=of(dev))


def _staged(w):
    """A deferred host-to-device copy that reads a copy of its host bytes taken now."""
    fn, (local, d, src, size), _ = w
    copy = ctypes.create_string_buffer(ctypes.string_at(src, size), max(size, 1))
    return fn, (local, d, ctypes.addressof(copy), size), copy


def done(dev, q) -> bool:
    """Whether queue ``q`` of ``dev`` has finished its work (true if it has none); if so,
    its copies to the host have landed."""
    found = find(dev, q)
    if found is not None and not found.done():
        return False
    _land_done(dev)
    return True


def wait(dev, qs) -> None:
    """Wait for the work of the queues ``qs`` of ``dev`` and land its copies to the
    host; raise the first error of each."""
    try:
        for q in qs:
            found = find(dev, q)
            if found is not None and found.last is not None:
                found.last.wait()
    finally:
        _land_done(dev)
    for q in qs:
        found = find(dev, q)
        if found is not None:
            found.wait()
