"""This rank's parts of one shared array, resident on their devices from creation to free.

A part whose device has memory of its own (the host plugin, OpenCL, ...) is mapped once
(`target_enter_data`) and deleted by `unmap`; kernels find it present and copy nothing.
The host buffer behind it is a staging copy, and each such part is in one of three
states:

- SAME: host and device agree;
- DEVICE: a kernel may have written the device's copy since (the host's may be stale);
- HOST: `local()` handed the host's copy out, and it may be newer: the next kernel
  pushes it.

Host reads and writes of some elements copy just those, with `target_update`, in runs
of consecutive elements (runs less than GAP bytes apart travel as one, and more than
RUNS runs as one).  A part on the initial device is the host buffer itself: nothing
moves.
"""
from __future__ import annotations

import numpy as np

import pygomp as omp

SAME, DEVICE, HOST = "same", "device", "host"
GAP = 1 << 16           # bytes between two runs below which one copy takes both
RUNS = 64               # runs per part beyond which one copy covers them all


def mapped_slots(counts, devices) -> list[int]:
    """The parts (slots) to map: those with elements, on a device other than the
    initial one."""
    initial = omp.omp_get_initial_device()
    return [s for s, (n, d) in enumerate(zip(counts, devices)) if n and d != initial]


class Parts:
    """The mapped parts of a host buffer: part s is ``buffer[s * capacity:][:counts[s]]``
    on device ``devices[s]``."""

    def __init__(self, buffer, capacity, counts, devices):
        self.capacity = capacity
        self.gap = max(1, GAP // buffer.itemsize)
        self.parts = {}             # slot -> [device, view, state]
        try:
            for s in mapped_slots(counts, devices):
                view = buffer[s * capacity:s * capacity + counts[s]]
                omp.target_enter_data(devices[s], to=[view])
                self.parts[s] = [devices[s], view, SAME]
        except BaseException:
            self.unmap()
            raise

    def unmap(self):
        """Delete every part from its device (the first error raised once all are)."""
        error = None
        for d, view, _ in self.parts.values():
            try:
                omp.target_exit_data(d, delete=[view])
            except Exception as e:      # noqa: BLE001  (the others are still deleted)
                error = error or e
        self.parts.clear()
        if error is not None:
            raise error

    def any_newer_on_device(self) -> bool:
        return any(p[2] == DEVICE for p in self.parts.values())

    # -- around kernels and hand-outs ----------------------------------------------
    def before_kernel(self, slot):
        """Push a handed-out host copy before a kernel uses the part."""
        p = self.parts.get(slot)
        if p is not None and p[2] == HOST:
            omp.target_update(p[0], to=[omp.present(p[1])])
            p[2] = SAME

    def after_kernel(self, slot):
        p = self.parts.get(slot)
        if p is not None:
            p[2] = DEVICE

    def hand_out(self, slot):
        """Bring the part to the host, which holds the newest copy from now on."""
        p = self.parts.get(slot)
        if p is not None:
            if p[2] == DEVICE:
                omp.target_update(p[0], from_=[omp.present(p[1])])
            p[2] = HOST

    def fetch_all(self):
        """Bring every part a kernel may have written to the host."""
        for p in self.parts.values():
            if p[2] == DEVICE:
                omp.target_update(p[0], from_=[omp.present(p[1])])
                p[2] = SAME

    # -- some elements -----------------------------------------------------------------
    def read(self, disp):
        """Bring the elements at buffer offsets disp to the host before they are read."""
        for p, runs, _ in self._runs(disp):
            if p[2] == DEVICE:
                omp.target_update(p[0], from_=[omp.present(p[1][a:b]) for a, b in runs])

    def write(self, disp, store):
        """store() writes the elements at buffer offsets disp into the host buffer; the
        device copies get them."""
        touched = self._runs(disp)
        for p, runs, exact in touched:      # the untouched elements that ride along
            if p[2] == DEVICE and not exact:
                omp.target_update(p[0], from_=[omp.present(p[1][a:b]) for a, b in runs])
        store()
        for p, runs, _ in touched:
            if p[2] != HOST:
                omp.target_update(p[0], to=[omp.present(p[1][a:b]) for a, b in runs])

    def _runs(self, disp):
        """[(part, [(start, stop)] in the part, whether the runs hold only disp)] for
        the mapped parts that disp reaches."""
        if not self.parts or disp.size == 0:
            return []
        slot = disp // self.capacity
        out = []
        for s in np.unique(slot).tolist():
            p = self.parts.get(s)
            if p is None:
                continue
            addr = np.unique(disp[slot == s] - s * self.capacity)
            cut = np.flatnonzero(np.diff(addr) > self.gap) + 1
            starts = addr[np.concatenate(([0], cut))]
            stops = addr[np.concatenate((cut - 1, [addr.size - 1]))] + 1
            if starts.size > RUNS:
                starts, stops = starts[:1], stops[-1:]
            runs = list(zip(starts.tolist(), stops.tolist()))
            out.append((p, runs, int((stops - starts).sum()) == addr.size))
        return out
