"""Deferred target tasks: ``nowait`` and ``depend``.

Dependences are OpenMP's ``depend(in|out|inout: x)`` on host objects, keyed by their
address: a task that writes x comes after every earlier task that reads or writes x, one
that reads x after the earlier writer.  Tasks wait only for earlier ones, so nothing can
deadlock.

A task runs in one of two ways:

- on a device with a queue (``plugin.asynchronous``), `submit_queued` maps and starts
  the kernel at once in the caller's thread, after its predecessors' events; the
  unmapping (copies back, releases) happens when the task is waited for.  A predecessor
  can be waited for this way only if it runs on the same device and mapped nothing new
  (its data was present), so that ending it later changes nothing on the host;
- otherwise (`submit`, or a predecessor of another kind) a worker thread waits for the
  predecessors and runs the whole construct.

A task whose predecessor failed does not run: its `wait()` raises `DependencyFailed`,
chained to the predecessor's error.  `taskwait` waits for every task and raises the
first failure, noting how many tasks failed; failures never waited for are reported at
exit, by the error that failed first (not the dependent's "did not run").  Ctrl-C in
`taskwait` or a task's `wait` cancels the tasks waited for that have not started, and
waits for those running to end (a C kernel stops at the same SIGINT).  A task that has
ended keeps nothing of its construct (regions, arrays), and one that ended well leaves
the dependence tables.
"""
from __future__ import annotations

import atexit
import sys
import threading
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor

from ..errors import PygompError

_lock = threading.Lock()
_pool = None
_writer = {}      # address -> the last task that writes it
_readers = {}     # address -> tasks reading it since that writer
_pending = []     # every task not done, or failed, since the last taskwait


class DependencyFailed(PygompError, RuntimeError):
    """A task that did not run because a task it depends on failed (its ``__cause__``)."""


def _skipped(e):
    """The error of a task whose predecessor failed with ``e``."""
    root = e.__cause__ if isinstance(e, DependencyFailed) else e
    first = (str(root).splitlines() or [""])[0]
    err = DependencyFailed(f"this task did not run: a task it depends on failed "
                           f"({type(root).__name__}: {first})")
    err.__cause__ = root
    return err


class Task:
    """A deferred construct; `wait()` returns its result or raises its error."""

    def __init__(self):
        self._lock = threading.Lock()
        self._future = None          # a worker thread's task
        self._event = None           # a queued task: its event, the step that ends it,
        self._finish = None
        self.device = None           # its device and whether it mapped nothing new
        self.light = False
        self._outcome = None         # (True, value) or (False, exception)

    def wait(self, timeout=None):
        if self._future is not None:
            try:
                return self._future.result(timeout)
            except KeyboardInterrupt:
                _stop([self])
                raise
        with self._lock:
            if self._outcome is None:
                self._outcome = self._end()
                self._event = self._finish = None   # they hold the construct's arrays
                if self._outcome[0]:
                    _forget(self)
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    def _end(self):
        """Wait for a queued task's event, then end its construct."""
        try:
            self.device.plugin.wait(self.device.local, self._event)
        except BaseException as e:
            try:
                self._finish(False)
            except BaseException:
                pass
            return False, e
        try:
            return True, self._finish(True)
        except BaseException as e:
            return False, e

    def done(self) -> bool:
        if self._future is not None:
            return self._future.done()
        return self._outcome is not None

    def failed(self):
        """The exception of a task that ended in failure, else None (does not wait)."""
        if self._future is not None:
            return self._future.exception() if self._future.done() else None
        return self._outcome[1] if self._outcome and not self._outcome[0] else None


def _key(x) -> int:
    iface = getattr(x, "__array_interface__", None) or \
        getattr(x, "__cuda_array_interface__", None)
    return iface["data"][0] if iface is not None else int(x)


def _order(task, depend):
    """Record ``task``'s dependences; returns its predecessors (under _lock)."""
    depend = depend or {}
    unknown = set(depend) - {"in", "out", "inout"}
    if unknown:
        raise ValueError(f"depend: unknown dependence type(s) {sorted(unknown)}; "
                         f"use 'in', 'out' or 'inout'")
    reads = [_key(x) for x in depend.get("in", ())]
    writes = [_key(x) for x in (*depend.get("out", ()), *depend.get("inout", ()))]
    before = []
    for k in reads:
        if k in _writer:
            before.append(_writer[k])
    for k in writes:
        before += _readers.pop(k, [])
        if k in _writer:
            before.append(_writer[k])
    for k in reads:
        _readers.setdefault(k, []).append(task)
    for k in writes:
        _writer[k] = task
    _pending[:] = [t for t in _pending if not t.done() or t.failed()] + [task]
    global _registered
    if not _registered:         # after the devices' own exit handler: runs before it
        atexit.register(_at_exit)
        _registered = True
    return before


def _forget(task):
    """Drop a task that ended well from the dependence tables (one that failed stays,
    so that its dependents fail with its error)."""
    with _lock:
        for k in [k for k, t in _writer.items() if t is task]:
            del _writer[k]
        for k, ts in list(_readers.items()):
            ts[:] = [t for t in ts if t is not task]
            if not ts:
                del _readers[k]


def submit(fn, *args, depend=None) -> Task:
    """Run ``fn(*args)`` on a worker thread after its predecessors."""
    task = Task()
    with _lock:
        _thread(task, _order(task, depend), fn, args)
    return task


def _thread(task, before, fn, args):
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pygomp-task")

    def body():
        for t in before:
            try:
                t.wait()
            except BaseException as e:
                raise _skipped(e)
        out = fn(*args)
        _forget(task)
        return out

    task._future = _pool.submit(body)


def submit_queued(device, start, run, depend=None) -> Task:
    """A task on a device with a queue.  ``start(wait_for)`` maps and starts the kernel
    after the events ``wait_for`` and returns ``(event, finish, light)``: ``finish(ok)``
    ends the construct (copying back if ok) and gives the result, ``light`` says that
    nothing was newly mapped.  ``run()`` does the whole construct, for the thread path."""
    task = Task()
    task.device = device
    with _lock:
        before = _order(task, depend)
        waiting = [t for t in before if not t.done()]
        if any(t._future is not None or t.device is not device or not t.light
               for t in waiting):
            _thread(task, before, run, ())
            return task
        for t in before:
            if t.failed() is not None:
                task._outcome = (False, _skipped(t.failed()))
                return task
        try:
            events = [e for e in [t._event for t in waiting] if e is not None]
            task._event, task._finish, task.light = start(events)
        except BaseException as e:
            task._outcome = (False, e)
    return task


def taskwait() -> None:
    """Wait for every task submitted so far; raise the first failure, if any."""
    with _lock:
        pending = list(_pending)
        _pending.clear()
    try:
        errors = _wait_all(pending)
    except KeyboardInterrupt:
        _stop(pending)
        raise
    if errors:
        first = errors[0]
        first.add_note(f"pygomp: {len(errors)} of {len(pending)} deferred tasks failed; "
                       f"this is the first failure")
        raise first


def _stop(tasks):
    """After Ctrl-C in a wait: the tasks that have not started never do, and those
    running end (a C kernel stops at the same SIGINT) before the wait raises."""
    futures.wait([t._future for t in tasks if t._future is not None
                  and not t._future.cancel()])      # a second Ctrl-C ends the wait


def _wait_all(tasks):
    errors = []
    for t in tasks:
        try:
            t.wait()
        except Exception as e:
            errors.append(e)
    return errors


_registered = False


def _at_exit():
    """Finish tasks nobody waited for, and say if some failed."""
    with _lock:
        pending = list(_pending)
        _pending.clear()
    errors = _wait_all(pending)
    if errors:
        skipped = sum(isinstance(e, DependencyFailed) for e in errors)
        first = errors[0]
        if isinstance(first, DependencyFailed):
            first = first.__cause__             # the error that kept it from running
        print(f"pygomp: {len(errors)} deferred task(s) never waited for failed"
              + (f" ({skipped} did not run: a task they depend on failed)" if skipped
                 else "") + f"; the first error: {type(first).__name__}: {first}",
              file=sys.stderr)
