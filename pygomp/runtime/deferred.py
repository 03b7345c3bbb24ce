"""Device work that map operations make (copies, frees, launches), done at once or, in a
`deferred` block, collected for an OpenACC async queue: the map changes at the construct
and its data moves when the queue gets there, as in libgomp."""
from __future__ import annotations

import _thread          # threading's own locks: importing threading takes 0.5 ms
import contextlib


class _Work(_thread._local):
    work = None             # this thread's list of collected work; None: do it at once


_work = _Work()


@contextlib.contextmanager
def deferred():
    """Inside this block the map changes at once, but the device work that map
    operations make is not done: it is collected, in order, in the list the block gets,
    for an async queue to do with `do`.  The work of an operation that raised must be
    dropped."""
    work = []
    with collecting(work):
        yield work


@contextlib.contextmanager
def collecting(work):
    """Collect work into the list ``work`` (None: do it at once) inside the block."""
    outer = _work.work
    _work.work = work
    try:
        yield
    finally:
        _work.work = outer


def later(fn, *args, keep=None) -> None:
    """``fn(*args)`` now, or in a `deferred` block's list, with ``keep`` (what owns the
    host memory the work reads or writes) kept alive until it is done."""
    work = _work.work
    if work is None:
        fn(*args)
    else:
        work.append((fn, args, keep))


def do(work) -> None:
    """The deferred device work, in order."""
    for fn, args, _ in work:
        fn(*args)
