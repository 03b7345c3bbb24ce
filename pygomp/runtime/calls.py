"""Repeated calls: a target construct prepared for calls that repeat its map items (a
kernel called again with the same arrays, a C target region in a loop).

The one cache of what a call looked up, with one rule for when it is stale: a `Call`
is `fresh` while the device list, the device's state and its map
(`IntervalMap.version`) are the ones its last look-up saw.  While it is, a call reuses
the device, the function's address (None: not loaded), the entries found and the words
they give.  It runs without the device's lock, listed as in flight on the device
(`entries.Flight`): whoever may take an entry's last reference first adopts the calls
in flight (counts their entries up), and an adopted call counts them down as it ends,
so that no one frees what a call uses.  A small item that was absent (plain to, from,
tofrom or alloc, at most `SMALL` bytes) gets a new entry at each call, made and
removed as a construct does (under the lock, the entries counted up and down); when
nothing else changed the map meanwhile, the map is as the look-up saw it, and the call
stays fresh.  A call made `alike` takes new arrays at each call (`run_alike`): it looks
them up in the map at each call, under the lock, as the look-up above does once.
Anything else a construct would do (report under PYGOMP_INFO or
PYGOMP_PROFILE, always, structs and pointers) goes through `mapping.target`, as does
any error.

A C region of such a call (libpygomp.so) may run without Python: C gets its `plan`,
good under the same rule, and carries it out itself; the device's `GateLock` keeps
Python's map and counts right meanwhile (its C half, and shim.c, are the C face's:
pygomp/csrc/plans.py).  C reads the version as an epoch (`GateLock.current`): a call
that stays fresh gives the map back the epoch it began with, so that the plans of two
regions in one loop stay good.
"""
from __future__ import annotations

import ctypes
import itertools
import _thread          # threading's own locks: importing threading takes 0.5 ms

from . import devices, env, kinds, mapping
from .entries import WORD, Item, birth, death, down, flight_of, owner, profiled, ref
from .intervals import hits

RESULT = 16         # bytes of a result slot: a kernel's result is a scalar (complex128 at most)
SMALL = 1 << 16     # bytes: an absent item up to this size is made at each call
MADE = 8            # at most this many such items in one call
MISS = object()     # what `run_alike` returns when it runs nothing
# The plans of regions that C runs itself (`Call.plan`; the C face gives C these numbers):
# items at most, and the flags of an item made at each region.
PLAN_ITEMS = 8
PLAN_MADE = 1
PLAN_TO = 2
PLAN_FROM = 4


class Call:
    """`mapping.target` of ``fn`` with ``items`` on ``dev``, prepared for repeated calls
    in which only the words at ``slots`` (scalars) change.

    A kernel with a result (``result`` bytes, at most `RESULT`) gets one more word: the
    address of a result slot of the device's own (as if mapped ``from``), and `run`
    returns the bytes the kernel left there.

    With ``host_code``, ``fn`` is host code that the caller runs itself (a C region
    without an image on a device of the host plugin): the look-up needs no loaded
    function, and `run` calls its ``host`` with the words.

    With ``alike`` (``{position: rank}`` of array items, whose ``obj`` is their dtype),
    the arrays at those positions are new at each call: their words at `slots` are the
    host address and the extents, and `run_alike` runs such calls."""
    __slots__ = ("dev", "fn", "items", "slots", "launch", "result", "host_code", "devs",
                 "version", "address", "counted", "entries", "words", "made", "launcher",
                 "args", "epoch", "planned", "fast", "alike", "every")

    def __init__(self, dev, fn, items, slots=(), launch=(0, 0, 0), result=0,
                 host_code=False, alike=None):
        self.dev, self.fn, self.launch, self.result = dev, fn, launch, result
        self.items = list(items)        # at `slots`: placeholders of per-call words
        self.slots = slots
        self.every = tuple(slots) == tuple(range(len(self.items)))
        self.host_code = host_code
        self.alike = alike
        self.devs = self.version = None     # what the last look-up saw
        self.words = self.address = None   # words None: go through `target`
        self.made = ()                  # positions of the items made at each call
        self.epoch = None               # the map's content at the look-up (`GateLock`)
        self.planned = None             # the epoch C has a plan for (`plan`)
        self.fast = None                # what `run` needs without the lock (`_prepared`)

    def fresh(self) -> bool:
        """Whether what the last look-up found still holds (the one staleness rule)."""
        dev = self.dev
        return (self.version == dev.map.version and self.devs is devices.all_devices()
                and dev.state == "initialized")

    def usable(self) -> bool:
        """Whether an `alike` call may run: the devices and the device's state are the
        ones its look-up saw (its arrays are looked up at each call)."""
        return self.devs is devices.all_devices() and self.dev.state == "initialized"

    def look_up(self) -> None:
        """Look the function and the items up now (a fresh call's `address` says whether
        the function is loaded)."""
        with self.dev.lock:
            self._look_up()

    def run(self, values=(), host=None):
        """Run with ``values`` as the words at `slots`; the result's bytes, or None.
        A `host_code` call runs ``host(words)`` (``host(None)`` when the call must go
        through the whole construct: the caller maps and runs it).

        While fresh, a call with no item to make runs without the device's lock: it
        holds its entries by being in flight (`entries.Flight`), and counts them only if
        someone else may take their last reference meanwhile."""
        fast = self.fast
        if fast is None or fast[0] != self.dev.map.version or (fast[3] is None
                                                               and host is None):
            return self._counted(values, host)
        _, gen, flight, launcher, words, args, held = fast
        if flight is None:              # nothing to hold: the initial device, scalars
            if args is None:
                return self._go(launcher, words, args, values, host)
            launcher[1](args)           # the same words every call
            return None
        token = next(_ids)
        calls = flight.calls
        calls[token] = held
        if flight.gen != gen and calls.pop(token, None) is not None:
            return self._counted(values, host)      # an entry may go: count instead
        ok = False
        try:
            if args is None:
                out = self._go(launcher, words, args, values, host)
            else:
                launcher[1](args)       # the same words every call
                out = None
            ok = True
            return out
        finally:
            if calls.pop(token, None) is None:     # adopted meanwhile: counted up
                self._land(flight, token, ok)

    def _counted(self, values, host):
        """`run` under the device's lock: a new look-up if the map changed, the items
        made for this call, and the entries counted up and down around the run."""
        dev = self.dev
        with dev.lock:
            if self.version != dev.map.version:     # `fresh`, for the call's own device
                self._look_up()
            elif self.fast is not None and self.fast[2] is not None:
                # the entries it found are still there: good for `run` again
                self.fast = (self.version, self.fast[2].gen) + self.fast[2:]
            version, address, launcher, args = (self.version, self.address, self.launcher,
                                                self.args)
            plan = words, counted, entries, made = (self.words, self.counted, self.entries,
                                                    self.made)
            if address is None and host is None:
                words, counted = None, ()       # no function to run: `target` says so
            new = ()                            # the entries made for this call
            if made and words is not None:
                words, counted, entries, new = self._make(words, counted, entries, made)
            ref(counted, 1)
            mark = dev.map.version
        if words is None:
            return self._target(values) if host is None else host(None)
        ok = False
        try:
            out = self._go(launcher, words, args, values, host)
            ok = True
            return out
        finally:
            if counted:
                with dev.lock:
                    alone = new and dev.map.version == mark
                    zeroed = []                 # unmapped by others meanwhile
                    down(counted, zeroed)
                    if zeroed:
                        mapping.release(dev, self.items, entries, ok, zeroed)
                    if alone and self.version == version and len(zeroed) == len(new) \
                            and all(z is m for z, m in zip(zeroed, new)):
                        # the map is the one the look-up saw: it stays good
                        self.words, self.counted, self.entries, self.made = plan
                        self.version = dev.map.version
                        if self.epoch is not None:
                            dev.lock.restore(self.epoch)

    def run_alike(self, values):
        """Run an `alike` call with ``values`` at `slots`: its arrays looked up in the
        map now, those absent and small made for this call and removed after it, as
        `_counted` does; `MISS` (nothing run) where the call must go through the whole
        construct (an array partly present, large and absent, the function not loaded,
        a report on)."""
        items = self._items_of(values)
        dev = self.dev
        with dev.lock:
            if self.version != dev.map.version:
                self._look_up()
            version, launcher = self.version, self.launcher
            found = launcher is not None and _find(dev, items)
            if not found:
                return MISS
            words, entries, counted, made = found
            new = ()
            if made:
                words, counted, entries, new = self._make(words, counted, entries, made,
                                                          items)
            ref(counted, 1)
            mark = dev.map.version
        ok = False
        try:
            out = self._go(launcher, words, None, (), None)
            ok = True
            return out
        finally:
            if counted:
                with dev.lock:
                    alone = dev.map.version == mark
                    zeroed = []
                    down(counted, zeroed)
                    if zeroed:
                        mapping.release(dev, items, entries, ok, zeroed)
                    if alone and self.version == version and len(zeroed) == len(new) \
                            and all(z is m for z, m in zip(zeroed, new)):
                        self.version = dev.map.version      # as the look-up saw it

    def _items_of(self, values):
        """An `alike` call's items: ``values`` at `slots`, its arrays' sizes from their
        extents."""
        items = self.items[:]
        for i, v in zip(self.slots, values):
            items[i] = Item(v & WORD, 0, kinds.FIRSTPRIVATE_INT)
        for i, rank in self.alike.items():
            it = self.items[i]
            size = it.obj.itemsize
            for k in range(i + 1, i + 1 + rank):
                size *= items[k].addr
            items[i] = Item(items[i].addr, size, it.kind, it.obj, it.name)
        return items

    def _go(self, launcher, words, args, values, host):
        """The run itself: the kernel by its ``launcher`` (``args``: its prepared words,
        if they do not change) or, without one, ``host(words)``; with ``values`` at
        `slots`, and a result slot if the kernel has a result."""
        if values or self.result:
            if self.every and values:   # every word is a per-call one, in order
                words = [v & WORD for v in values]
            else:
                words = words[:]
                for i, v in zip(self.slots, values):
                    words[i] = v & WORD
            args = None
        if not self.result:
            if launcher is None:
                host(words)
            else:
                prepare, start = launcher
                start(prepare(words) if args is None else args)
            return None
        dev = self.dev
        slot = _result_slot(dev)
        try:
            words.append(slot)
            if launcher is None:
                host(words)
            else:
                prepare, start = launcher
                start(prepare(words))
            out = ctypes.create_string_buffer(self.result)
            dev.plugin.dev2host(dev.local, ctypes.addressof(out), slot, self.result)
            return out.raw
        finally:
            dev.spare_results.append(slot)

    def _land(self, flight, token, ok):
        """The end of a run that others adopted (`entries.Flight`): its entries counted
        down, those that reach zero copied back and removed."""
        with self.dev.lock:
            _count_down(self.dev, *flight.adopted.pop(token), ok)

    def plan(self):
        """A plan for C to run this `host_code` call itself (libpygomp.so): its id, the
        epoch of the map its look-up saw (`GateLock.current`), the words and a flag byte
        per item (`_flags`: made at each call, copied to, from); None when C may not, or
        has it already (the call is not fresh, a trace or report is on, the device is not
        the host plugin's or its lock is not a `GateLock`)."""
        dev = self.dev
        if self.version == dev.map.version and (self.words is None
                                                or self.planned == self.epoch):
            return None                 # as the last time (read unlocked: a hint)
        if not (self.host_code and len(self.items) <= PLAN_ITEMS
                and isinstance(dev.lock, GateLock)
                and dev.plugin.name == "host" and not dev.is_initial) \
                or profiled() or _traced() or env.settings().info or env.settings().poison:
            return None
        with dev.lock:
            if self.version != dev.map.version:     # others changed the map meanwhile
                self._look_up()
            if self.words is None or self.planned == self.epoch \
                    or self.devs is not devices.all_devices() or dev.state != "initialized":
                return None
            flags = bytes(_flags(self.items[i]) if i in self.made else 0
                          for i in range(len(self.items)))
            dev.lock.gate()
            pid = next(_ids)
            _plans[pid] = (self.items, tuple(self.entries), tuple(self.counted), self.made,
                           self)
            self.planned = self.epoch
            return pid, self.epoch, list(self.words), flags

    def _make(self, words, counted, entries, made, items=None):
        """New entries for the items at positions ``made`` (absent at the look-up) of
        ``items`` (else the call's), copied in as their kinds say; the call's words,
        counted entries and entries with them, and the new entries."""
        dev = self.dev
        items = self.items if items is None else items
        words, entries, new = words[:], entries[:], []
        try:
            for i in made:
                it = items[i]
                e = mapping.new_entry(dev, it, kinds.traits(it.kind))
                new.append(e)
                words[i] = e.dev_start
                entries[i] = e
        except BaseException:
            for e in new:
                death(dev, e)
            raise
        return words, counted + new, entries, new

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
        self.made, self.launcher, self.args, self.fast = (), None, None, None
        if dev.state != "initialized" or env.settings().info or _traced():
            return                      # not now: look again next time
        self.devs, self.version = devices.all_devices(), dev.map.version
        self.epoch = dev.lock.current() if isinstance(dev.lock, GateLock) else None
        e = dev.map.find(self.fn, self.fn + 1)
        self.address = None if e is None else e.dev_start
        if e is None and not self.host_code:
            return                      # not loaded: `target` says so
        if dev.is_initial:              # host addresses: nothing is mapped
            self._prepared(_initial_words(self.items), (), (), [])
            return
        if self.alike:                  # its arrays are looked up at each call
            self._prepared(None, (), (), ())
            return
        found = _find(dev, self.items)
        if found:
            self._prepared(*found)

    def _prepared(self, words, entries, counted, made):
        """Keep what the look-up found, and the launcher (and arguments) it gives."""
        self.words, self.entries, self.counted, self.made = words, entries, counted, made
        if self.address is not None:
            dev = self.dev
            self.launcher = dev.plugin.launcher(dev.local, self.address, self.launch,
                                                len(self.items) + (1 if self.result else 0))
            if not (self.slots or self.result or made):    # the same words every call
                self.args = self.launcher[0](words)
        if words is not None and not made:
            f = flight_of(self.dev) if counted else None
            self.fast = (self.version, f and f.gen, f, self.launcher, words, self.args,
                         (self.items, entries, counted))


def _find(dev, items):
    """``(words, entries, counted, made)`` of ``items`` as the map holds them now (under
    the device's lock): present ones found, absent small ones to be made (``made``:
    their positions); None when the call must go through `mapping.target`."""
    words, entries, counted, made = [], [], [], []
    for i, it in enumerate(items):
        t = kinds.traits(it.kind)
        if t.base == kinds.FIRSTPRIVATE_INT:
            words.append(it.addr & WORD)
            entries.append(None)
            continue
        if not (t.mapping or t.base == kinds.FORCE_PRESENT) or t.always \
                or t.kind & kinds.FLAG_FORCE:
            return None
        e = dev.map.find(it.addr, it.addr + it.size)
        if e is None:
            if t.present or (it.size and not _makes(t, it, made, items)):
                return None
            if it.size:
                made.append(i)
            words.append(0)
        elif it.addr < e.host_start or it.addr + it.size > e.host_end:
            return None
        else:
            words.append(e.dev_start + (it.addr - e.host_start))
            if owner(e) not in counted:         # a struct's members: its owner
                counted.append(owner(e))
        entries.append(e)
    return words, entries, counted, made


def _makes(t, it, made, items):
    """Whether an absent item may be made at each call: a plain small map that hits no
    other item made so far."""
    if not t.mapping or it.size > SMALL or len(made) >= MADE:
        return False
    return not any(hits(it.addr, it.addr + it.size, items[j].addr, items[j].addr
                        + items[j].size) for j in made)


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


def _traced():
    """Whether the constructs are observed (PYGOMP_PROFILE's trace: `mapping.observe`)."""
    return mapping.observer is not None


# -- regions that C runs itself (libpygomp.so; pygomp/csrc/plans.py says how) ---------

_plans = {}                     # a plan's id -> (items, entries, counted, made, its call)
_landing = {}                   # an adopted region's token -> what ends it
_ids = itertools.count(1)
_epochs = itertools.count(1)    # `GateLock.current`: never 0, which C starts with


def _flags(it):
    t = kinds.traits(it.kind)
    return PLAN_MADE | (PLAN_TO if t.to else 0) | (PLAN_FROM if t.from_ else 0)


def forget(pid) -> None:
    """A plan that C replaced, or did not take: its call may give C another one."""
    got = _plans.pop(pid, None)
    if got is not None:
        got[-1].planned = None


class GateLock:
    """A device's lock where C may run planned regions: an RLock that, once C has a plan
    for the device (`gate`), stops C from starting regions there while held and adopts
    the regions in flight there on taking it (`_take_impl`), and tells C the epoch of
    the map (`current`) on letting go (`_let_go_impl`).  The C face makes these locks
    (`devices.lock_maker`) and implements the two hooks."""
    __slots__ = ("_lock", "_dev", "_depth", "_gated", "_seen", "_epoch")

    def __init__(self, dev):
        self._lock, self._dev, self._depth, self._gated = _thread.RLock(), dev, 0, False
        self._seen = self._epoch = None

    def gate(self):
        """C gets plans for the device from now on (the caller holds the lock)."""
        self._gated = True

    def current(self) -> int:
        """The epoch of the map's content (the caller holds the lock): a new one whenever
        its version changed, unless `restore` said the content is an earlier one."""
        v = self._dev.map.version
        if v != self._seen:
            self._seen, self._epoch = v, next(_epochs)
        return self._epoch

    def restore(self, epoch) -> None:
        """The map holds again what it held at ``epoch`` (a call's made items are gone,
        and nothing else changed): plans made then are good again."""
        self._seen, self._epoch = self._dev.map.version, epoch

    def acquire(self, blocking=True, timeout=-1):
        if not self._lock.acquire(blocking, timeout):
            return False
        if self._gated and not self._depth:
            try:
                self._take_impl(self._dev)
            except BaseException:
                self._let_go_impl(self._dev, self.current())
                self._lock.release()
                raise
        self._depth += 1
        return True

    __enter__ = acquire

    def release(self):
        self._depth -= 1
        if self._gated and not self._depth:
            self._let_go_impl(self._dev, self.current())
        self._lock.release()

    def __exit__(self, *exc):
        self.release()

    def _take_impl(self, dev):
        """Hook: C starts no region on ``dev`` until `_let_go_impl`; each one in flight
        there is given to `adopt`."""
        raise NotImplementedError

    def _let_go_impl(self, dev, epoch):
        """Hook: C may start regions on ``dev`` again, by the plans good at ``epoch``."""
        raise NotImplementedError


def adopt(dev, token, pid, addresses) -> None:
    """Take over a region that C runs on ``dev`` by plan ``pid``, in flight as ``token``
    (under the device's lock): as if `run` had begun it.  ``addresses``: per item, the
    device address of an item C made for it."""
    items, entries, counted, made, _ = _plans[pid]
    entries, new = list(entries), []
    for i in made:
        it = items[i]
        e = birth(dev, it.addr, it.addr + it.size, addresses[i], alloc=addresses[i])
        entries[i] = e
        new.append(e)
    counted = list(counted) + new
    ref(counted, 1)
    _landing[token] = (dev, items, entries, counted)


def land(token) -> None:
    """The end of a region that Python adopted: as `run` ends one."""
    dev, items, entries, counted = _landing.pop(token)
    with dev.lock:
        _count_down(dev, items, entries, counted, True)


def _count_down(dev, items, entries, counted, ok):
    """An adopted run's end (under the device's lock): its entries counted down, those
    that reach zero copied back (if ``ok``) and removed."""
    zeroed = []
    down(counted, zeroed)
    if zeroed:
        mapping.release(dev, items, entries, ok, zeroed)
