"""Host code run on the host with a host view of a device's memory.

A region with no image on a device whose memory the host cannot use runs its host code
this way (the C face's `pygomp.csrc.hostcode`): the device ranges its words point into
are copied to host memory, the code runs on the copies, and only the bytes it changed
go back.
"""
from __future__ import annotations

import bisect
import ctypes
import threading

from . import mapping

_merging = threading.Lock()     # one write-back of host views at a time


def merged(spans):
    """Sorted ranges with the overlapping ones joined: (starts, ends)."""
    starts, ends = [], []
    for lo, hi in sorted(spans):
        if ends and lo < ends[-1]:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    return starts, ends


def run(dev, words, ranges, slots, pointers, call, where):
    """Run a region's host code on the host with a host view of ``dev``'s memory.

    Each device range (``ranges``: `merged`'s, the device memory pygomp knows) that its
    words point into (``words``: pairs of a word and an address inside what it points
    to), or that the pointers attached there point into,
    is copied to host memory of its own; the words and those pointers point there
    instead.  After the call only the bytes the code changed go back, into the device's
    current copy, so regions that run at once and write different parts of a block lose
    nothing.  The host's own copies of mapped data are never touched.  A deviceptr that
    points into no device memory that pygomp knows is refused, naming the region."""
    starts, ends = ranges
    views = {}                  # range index -> (host copy, its bytes as read)
    todo = []                   # pointer slots (device addresses) in the views so far

    def host(w):
        """The host view of device address ``w``, or None outside every range."""
        i = bisect.bisect_right(starts, w) - 1
        if i < 0 or w > ends[i]:
            return None
        if i not in views:
            size = ends[i] - starts[i]
            copy = ctypes.create_string_buffer(size)
            dev.plugin.dev2host(dev.local, ctypes.addressof(copy), starts[i], size)
            views[i] = (copy, copy.raw)
            todo.extend(slots[bisect.bisect_left(slots, starts[i]):
                              bisect.bisect_left(slots, ends[i])])
        return ctypes.addressof(views[i][0]) + (w - starts[i])

    translated = []
    for w, anchor in words:
        at = host(anchor)
        translated.append(w if at is None else at + (w - anchor))
    for p in pointers:
        slot = host(p)
        value = ctypes.c_uint64.from_address(slot).value
        if value and host(value) is None:
            raise mapping.MappingError(f"{where} has no image, and its host code cannot use "
                                       f"deviceptr's {value:#x}: no device memory that pygomp "
                                       f"knows holds it")
    todo += pointers
    restore = []                # (host slot, device value) of the pointers translated
    seen = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        slot = ctypes.c_uint64.from_address(host(p))
        target = host(slot.value) if slot.value else None
        if target is not None:
            restore.append((slot, slot.value))
            slot.value = target
    call(translated)
    for slot, value in restore:
        slot.value = value
    with _merging:
        for i, (copy, before) in views.items():
            _write_back(dev, starts[i], copy, before)


def _write_back(dev, start, view, before):
    """The bytes of a host view that its region changed (against the bytes ``before``),
    into the device's current copy: one span from the first changed byte to the last."""
    import numpy as np
    new, old = np.frombuffer(view, np.uint8), np.frombuffer(before, np.uint8)
    changed = new != old
    if not changed.any():
        return
    lo, hi = int(changed.argmax()), len(changed) - int(changed[::-1].argmax())
    current = np.empty(hi - lo, np.uint8)
    dev.plugin.dev2host(dev.local, current.ctypes.data, start + lo, hi - lo)
    np.copyto(current, new[lo:hi], where=changed[lo:hi])
    dev.plugin.host2dev(dev.local, start + lo, current.ctypes.data, hi - lo)
