"""The host code of a region that has no image on its device (GCC's host version of a
target or compute region's function), run with the region's words.

- On a device of the host plugin (separate memory, host-addressable) it runs with the
  device addresses: `run` (OpenMP), `acc_region` (OpenACC, in the queue's order).
- On another device (OpenCL, CUDA) the region maps there as the construct says (the
  same checks, counts and copies), and its host code runs on the host with a host view
  of the device's data (`on_host`, runtime/hostview.py).

`begin` and `end` map and unmap an OpenACC compute construct between its profiling
events.
"""
from __future__ import annotations

from .. import openacc as acc
from ..runtime import accmap, accprof, deferred, hostview, kinds, mapping
from ..runtime.entries import PTR
from . import abi

blocks = {}             # what omp_target_alloc gave C: address -> (device number, size)


def run(dev, fn, items, n, args):
    """Map, run a region's host code with the device's words, unmap."""
    region = mapping.begin(dev, items)
    ok = False
    try:
        if n:
            args[0:n] = region.args        # one word per item (cffi checks the length)
        abi.lib.pg_call_host(fn, args, -1 if dev.is_initial else dev.number)
        ok = True
    finally:
        mapping.end(region, copy_back=ok)


def on_host(dev, fn, items, call, what, acc_=False, rec=None, launch=(0, 0, 0)):
    """A region with no image on ``dev`` (a device whose memory the host cannot use):
    it maps on ``dev`` as the construct says (the same checks, counts and copies as a
    region there), and ``call(words)`` runs its host code on the host later in the
    construct's order (`hostview.run`), then the construct ends as on the device.
    Inside an async queue's `deferred.deferred` block the map changes now and the rest
    waits."""
    def work(r):
        spans, slots = accmap.device_memory(dev)        # now: entries may go at the end
        spans += [(a, a + size) for a, (d, size) in list(blocks.items()) if d == dev.number]
        spans += [(a, a + size) for a, size in acc.allocations(dev)]
        pointers = []       # the private copies of deviceptr's pointers
        anchors = []        # per word, an address inside the memory it points into
        for i, (it, w, e) in enumerate(zip(r.items, r.args, r.entries)):
            k = kinds.base(it.kind)
            # a struct's base, or an implicit map's start, may lie before its memory
            anchors.append(e.dev_start if e is not None else
                           r.args[i + 1] if k == kinds.STRUCT else w)
            if k in (kinds.FIRSTPRIVATE, kinds.FORCE_DEVICEPTR):
                size = PTR if k == kinds.FORCE_DEVICEPTR else it.size
                spans.append((w, w + max(size, 1)))
                if k == kinds.FORCE_DEVICEPTR:
                    pointers.append(w)
        where = f"device {dev.number} ({dev.plugin.name}): the {what} at {fn:#x}"
        return (hostview.run, dev, list(zip(r.args, anchors)), hostview.merged(spans),
                sorted(slots), pointers, call, where)
    _queued_region(dev, fn, items, work, acc_, rec, launch)


def _queued_region(dev, fn, items, work, acc_, rec, launch):
    """Map ``items`` on ``dev`` (with the construct's events under ``rec``), queue the
    call ``work(region)`` returns (a launch of ``fn``, in the construct's order), and end
    the construct as on the device (copying back only if all went well)."""
    r = begin(rec, dev, items) if rec else mapping.begin(dev, items, acc=acc_)
    ok = False
    try:
        job = work(r)
        if rec:
            _launch_later(rec, fn, launch, *job)
        else:
            deferred.later(*job)
        ok = True
    finally:
        if rec:
            end(rec, r, ok)
        else:
            mapping.end(r, copy_back=ok)


def acc_region(dev, fn, items, rec=None, launch=(0, 0, 0)):
    """A compute region's host code on a host-plugin device, with device addresses."""
    _queued_region(dev, fn, items, lambda r: (abi.lib.pg_call_acc, fn,
                                              abi.ffi.new("uintptr_t[]", r.args or [0]),
                                              acc.region_type(dev)),
                   True, rec, launch)


def begin(rec, dev, items):
    """A compute construct's map (mapping.begin), between its enter data events."""
    info = accprof.queued(rec, accprof.ev_enter_data_start, implicit=1)
    r = mapping.begin(dev, items, acc=True)
    accprof.worked(rec)
    accprof.queued(rec, accprof.ev_enter_data_end, info, implicit=1)
    return r


def end(rec, r, ok):
    """A compute construct's unmap (mapping.end), between its exit data events."""
    info = accprof.queued(rec, accprof.ev_exit_data_start, implicit=1)
    mapping.end(r, copy_back=ok)
    accprof.queued(rec, accprof.ev_exit_data_end, info, implicit=1)


def _launch_later(rec, fn, launch, call, *args):
    """``call(*args)``, a region's host code, as deferred work between its enqueue
    launch events."""
    for f, a, keep in accprof.launched(rec, [(call, args, None)], accprof.symbol(fn), launch):
        deferred.later(f, *a, keep=keep)
