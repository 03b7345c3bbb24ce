"""Repeated calls: a target construct prepared for calls that repeat its map items (a
kernel called again with the same arrays, a C target region in a loop).

The one cache of what a call looked up, with one rule for when it is stale: a `Call`
is `fresh` while the device list, the device's state and its map
(`IntervalMap.version`) are the ones its last look-up saw.  While it is, a call reuses
the device, the function's address (None: not loaded), the entries found and the words
they give: it only counts the entries up, runs, and counts them down.  Anything else a
construct would do (create, copy, report under PYGOMP_INFO or PYGOMP_PROFILE) goes
through `mapping.target`, as does any error.
"""
from __future__ import annotations

import ctypes

from . import devices, env, kinds, mapping, trace
from .entries import WORD, Item, down, owner, ref

RESULT = 16         # bytes of a result slot: a kernel's result is a scalar (complex128 at most)


class Call:
    """`mapping.target` of ``fn`` with ``items`` on ``dev``, prepared for repeated calls
    in which only the words at ``slots`` (scalars) change.

    A kernel with a result (``result`` bytes, at most `RESULT`) gets one more word: the
    address of a result slot of the device's own (as if mapped ``from``), and `run`
    returns the bytes the kernel left there."""
    __slots__ = ("dev", "fn", "items", "slots", "launch", "result", "devs", "version",
                 "address", "counted", "entries", "words")

    def __init__(self, dev, fn, items, slots=(), launch=(0, 0, 0), result=0):
        self.dev, self.fn, self.launch, self.result = dev, fn, launch, result
        self.items = list(items)        # at `slots`: placeholders of per-call words
        self.slots = slots
        self.devs = self.version = None     # what the last look-up saw
        self.words = self.address = None   # words None: go through `target`

    def fresh(self) -> bool:
        """Whether what the last look-up found still holds (the one staleness rule)."""
        dev = self.dev
        return (self.version == dev.map.version and self.devs is devices.all_devices()
                and dev.state == "initialized")

    def look_up(self) -> None:
        """Look the function and the items up now (a fresh call's `address` says whether
        the function is loaded)."""
        with self.dev.lock:
            self._look_up()

    def run(self, values=()):
        """Run with ``values`` as the words at `slots`; the result's bytes, or None."""
        dev = self.dev
        with dev.lock:
            if self.version != dev.map.version:     # `fresh`, for the call's own device
                self._look_up()
            words, counted, entries = self.words, self.counted, self.entries
            address = self.address
            ref(counted, 1)
        if words is None:
            return self._target(values)
        if values or self.result:
            words = words[:]
            for i, v in zip(self.slots, values):
                words[i] = v & WORD
        slot = 0
        ok = False
        try:
            if self.result:
                slot = _result_slot(dev)
                words.append(slot)
            dev.plugin.run(dev.local, address, words, self.launch)
            if slot:
                out = ctypes.create_string_buffer(self.result)
                dev.plugin.dev2host(dev.local, ctypes.addressof(out), slot, self.result)
                ok = True
                return out.raw
            ok = True
        finally:
            if slot:
                dev.spare_results.append(slot)
            if counted:
                with dev.lock:
                    zeroed = []                 # unmapped by others meanwhile
                    down(counted, zeroed)
                    if zeroed:
                        mapping.release(dev, self.items, entries, ok, zeroed)

    def _target(self, values):
        """The call through `target`: the per-call words, and the result mapped ``from``."""
        items = self.items[:]
        for i, v in zip(self.slots, values):
            items[i] = Item(v, 0, kinds.FIRSTPRIVATE_INT)
        if not self.result:
            return mapping.target(self.dev, self.fn, items, self.launch)
        out = ctypes.create_string_buffer(self.result)
        items.append(Item(ctypes.addressof(out), self.result, kinds.FROM, out))
        mapping.target(self.dev, self.fn, items, self.launch)
        return out.raw

    def _look_up(self):
        """Find the function and every item in the map (under the device's lock); leave
        `words` None when a call must go through `target`."""
        dev = self.dev
        self.version, self.words, self.counted, self.entries = None, None, (), ()
        if dev.state != "initialized" or env.settings().info or trace.on:
            return                      # not now: look again next time
        self.devs, self.version = devices.all_devices(), dev.map.version
        e = dev.map.find(self.fn, self.fn + 1)
        self.address = None if e is None else e.dev_start
        if e is None:
            return                      # not loaded: `target` says so
        if dev.is_initial:              # host addresses: nothing is mapped
            self.words = _initial_words(self.items)
            return
        words, entries, counted = [], [], []
        for it in self.items:
            t = kinds.traits(it.kind)
            if t.base == kinds.FIRSTPRIVATE_INT:
                words.append(it.addr & WORD)
                entries.append(None)
                continue
            if not (t.mapping or t.base == kinds.FORCE_PRESENT) or t.always \
                    or t.kind & kinds.FLAG_FORCE:
                return
            e = dev.map.find(it.addr, it.addr + it.size)
            if e is None:
                if it.size or t.present:
                    return
                words.append(0)
            elif it.addr < e.host_start or it.addr + it.size > e.host_end:
                return
            else:
                words.append(e.dev_start + (it.addr - e.host_start))
                if owner(e) not in counted:         # a struct's members: its owner
                    counted.append(owner(e))
            entries.append(e)
        self.words, self.entries, self.counted = words, entries, counted


def _result_slot(dev):
    """A result slot of the device (kept for reuse; freed by `mapping.release_all`)."""
    try:
        return dev.spare_results.pop()
    except IndexError:
        return dev.plugin.alloc(dev.local, RESULT)


def _initial_words(items):
    """The words of items on the initial device when no private copy is needed."""
    words = []
    for it in items:
        k = kinds.base(it.kind)
        if k == kinds.FIRSTPRIVATE:
            return None
        words.append(it.addr & WORD if k == kinds.FIRSTPRIVATE_INT else it.addr)
    return words
