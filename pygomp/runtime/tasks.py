"""Deferred target tasks: ``nowait`` and ``depend``.

A task runs a whole construct (map, run, unmap) on a worker thread.  Its dependences
are OpenMP's ``depend(in|out|inout: x)`` on host objects, keyed by their address: a task
that writes x waits for every earlier task that reads or writes x, one that reads x
waits for the earlier writer.  Tasks start in submission order and wait only for
earlier ones, so a pool of any size cannot deadlock.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pool = None
_writer = {}      # address -> the last task that writes it
_readers = {}     # address -> tasks reading it since that writer
_pending = []     # every task not yet seen done


class Task:
    """A deferred construct; `wait()` returns its result or raises its error."""

    def __init__(self, future):
        self._future = future

    def wait(self, timeout=None):
        return self._future.result(timeout)

    def done(self) -> bool:
        return self._future.done()


def _key(x) -> int:
    iface = getattr(x, "__array_interface__", None)
    return iface["data"][0] if iface is not None else int(x)


def submit(fn, *args, depend=None) -> Task:
    """Run ``fn(*args)`` as a task; ``depend`` maps "in", "out" or "inout" to objects."""
    global _pool
    depend = depend or {}
    unknown = set(depend) - {"in", "out", "inout"}
    if unknown:
        raise ValueError(f"depend: unknown dependence type(s) {sorted(unknown)}; "
                         f"use 'in', 'out' or 'inout'")
    reads = [_key(x) for x in depend.get("in", ())]
    writes = [_key(x) for x in (*depend.get("out", ()), *depend.get("inout", ()))]
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pygomp-task")
        before = []
        for k in reads:
            if k in _writer:
                before.append(_writer[k])
        for k in writes:
            before += _readers.pop(k, [])
            if k in _writer:
                before.append(_writer[k])
        task = Task(None)

        def body():
            for t in before:
                try:
                    t.wait()
                except Exception:       # a failed predecessor still orders this task
                    pass
            return fn(*args)

        task._future = _pool.submit(body)
        _pending[:] = [t for t in _pending if not t.done()] + [task]
        for k in reads:
            _readers.setdefault(k, []).append(task)
        for k in writes:
            _writer[k] = task
    return task


def taskwait() -> None:
    """Wait for every task submitted so far."""
    with _lock:
        pending = list(_pending)
    for t in pending:
        try:
            t.wait()
        except Exception:
            pass
