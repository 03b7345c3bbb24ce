"""OpenACC's async queues from the routines' side: running a construct's or a routine's
device work now or on a queue of the current device, testing and waiting
(`pygomp.runtime.accqueues` holds the queues)."""
from __future__ import annotations

from ..runtime import accprof, accqueues, deferred
from ..runtime.accprof import ev_wait_start
from ..runtime.mapping import MappingError
from .device_types import async_noval, async_sync
from .devices import current
from .profiling import prof_record, profiled


def _check_async(q):
    if q < async_sync:
        raise MappingError(f"invalid async-argument: {q}")


def run(q, fn, dev=None):
    """``fn()`` now (``q`` is async_sync), or with queue ``q`` of the current device: the
    map changes now, what the construct takes by value is taken now, and the device
    work that ``fn``'s map operations make (copies, launches, frees) is done by the
    queue, after its earlier work (docs/architecture.md, "Async queues").  Device memory
    is freed only after the work queued so far on every queue of the device (as
    cuMemFree waits for the device): that work may still use it."""
    _check_async(q)
    dev = dev or current()
    if accprof.mask:
        return _profiled_run(q, fn, dev)
    with deferred.deferred() as work:
        result = fn()
    _run(q, work, dev)
    return result


def _profiled_run(q, fn, dev):
    """`run` in a profiling record (an acc_* routine's, unless a construct's is
    current), with the events of its device work (`accprof.expand`)."""
    rec = prof_record(accprof.construct_runtime_api, dev, q)
    try:
        with deferred.deferred() as work:
            result = fn()
        _run(q, accprof.expand(work, dev), dev)
        return result
    finally:
        accprof.finish(rec)


def _run(q, work, dev):
    if q == async_sync:
        accqueues.run_now(dev, work)
    else:
        accqueues.run_on(dev, q, work)


def async_test(q) -> bool:
    """acc_async_test: whether queue ``q`` has finished its work."""
    _check_async(q)
    return accqueues.done(current(), q)


def async_test_all() -> bool:
    dev = current()
    return all(accqueues.done(dev, q) for q in accqueues.of(dev))


def wait(q=None) -> None:
    """acc_wait (``q``), or acc_wait_all (None): wait for the queues' work; an error
    of it is raised here."""
    dev = current()
    if q is not None:
        _check_async(q)
    qs = accqueues.of(dev) if q is None else [q]
    if accprof.mask:
        return profiled(accprof.construct_runtime_api, dev, async_sync if q is None else q,
                        ev_wait_start, accqueues.wait, dev, qs)
    accqueues.wait(dev, qs)


def wait_async(q1, q2) -> None:
    """acc_wait_async: queue ``q2``'s later work comes after ``q1``'s work so far
    (``q1`` None: after every queue's)."""
    dev = current()
    for q in (q1, q2):
        if q is not None:
            _check_async(q)
    if q2 == async_sync:
        return wait(q1)
    after = accqueues.of(dev) if q1 is None else \
        [q1] if accqueues.find(dev, q1) is not None else []
    if after and after != [q2]:
        accqueues.enqueue(dev, q2, lambda: None, after)


def wait_list(q, waits) -> None:
    """The ``wait(...)`` clause of a construct on queue ``q`` (GOACC_wait's rules)."""
    if not waits:
        return wait(None) if q == async_sync else wait_async(None, q)
    for w in waits:
        if w == async_noval:
            return wait(None) if q == async_sync else wait_async(None, q)
        if async_test(w) or w == q:
            continue
        if q == async_sync:
            wait(w)
        else:
            wait_async(w, q)
