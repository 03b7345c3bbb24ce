"""OpenMP 5.2 map semantics on a device's interval map (libgomp's gomp_map_vars family).

- A structured construct (target, target data) increments an entry's structured
  reference count, enter/exit data its dynamic count; each entry at most once a construct.
- An item found inside an entry uses it (a numpy view finds its parent's entry); one that
  extends an entry fails, naming both ranges.  The one exception is libgomp's for
  implicit maps: an implicit item that contains a whole entry uses that entry (its word
  is the device address the item's start would have, and only the entry's part is ever
  copied).  Python kernels map their arrays explicitly, since they use every element.
- ``from`` copies back when both counts reach zero, or always with ``always``.
- ``present`` on an absent object fails with its address and size.
- An error leaves the map as it was before the construct: no half-made entries.

This module is the only one that reads or changes a device's map (``dev.map``) and the
entries' reference counts: entries are born in `_birth` and die in `_death`, counts
change in `_ref`.  The rest of the runtime and the faces call the functions below.
"""
from __future__ import annotations

import ctypes
import math
from collections import namedtuple

from . import env, kinds

INFINITY = math.inf       # functions and variables of images, associated pointers
WORD = (1 << 64) - 1

Item = namedtuple("Item", "addr size kind obj name", defaults=(None, None))
Item.__doc__ = """One map item: host address, byte count, map kind, the object that owns the
memory (kept alive while mapped) and a name for messages (e.g. a kernel argument)."""


class MappingError(RuntimeError):
    """A map clause cannot be carried out; the map is left as it was."""


class Entry:
    __slots__ = ("host_start", "host_end", "dev_start", "alloc", "refcount",
                 "dynamic_refcount", "keepalive", "associated")

    def __init__(self, host_start, host_end, dev_start, alloc=0, refcount=0,
                 dynamic_refcount=0, keepalive=None, associated=False):
        self.host_start = host_start
        self.host_end = host_end
        self.dev_start = dev_start      # device address of host_start
        self.alloc = alloc              # device allocation owned by the entry (0: none)
        self.refcount = refcount        # structured reference count
        self.dynamic_refcount = dynamic_refcount
        self.keepalive = keepalive      # the host object, kept alive while mapped
        self.associated = associated    # made by omp_target_associate_ptr

    def __repr__(self):
        return (f"[{self.host_start:#x}..{self.host_end:#x}) -> {self.dev_start:#x} "
                f"refcount {self.refcount} dynamic {self.dynamic_refcount}")


def table_dump(dev) -> str:
    return "\n".join(f"  {e!r}" for e in dev.map) or "  (empty)"


def _error(dev, message):
    env.info(env.INFO_TABLE, f"device {dev.number} map at error:\n{table_dump(dev)}")
    return MappingError(f"device {dev.number}: {message}")


def _range(addr, size):
    return f"[{addr:#x}..{addr + size:#x})"


def _not_present(dev, addr, size):
    return _error(dev, f"present: {_range(addr, size)} ({size} bytes at host address "
                       f"{addr:#x}) is not present on the device")


class Region:
    """What one construct did to a device's map, so that it can be undone or ended."""
    __slots__ = ("dev", "items", "entries", "args", "counted", "created", "temps", "dynamic")

    def __init__(self, dev, items, dynamic):
        self.dev = dev
        self.items = items
        self.dynamic = dynamic
        self.entries = []       # per item: its entry, or None
        self.args = []          # per item: the 64-bit word the kernel gets
        self.counted = []       # entries whose count this construct incremented, once each
        self.created = []       # entries this construct made
        self.temps = []         # device memory for firstprivate copies


def begin(dev, items, dynamic=False) -> Region:
    """Map ``items`` for a construct; returns the region to pass to `end`."""
    region = Region(dev, items, dynamic)
    if dev.is_initial:
        region.args = [_initial_word(region, it) for it in items]
        return region
    entries, args = region.entries, region.args
    with dev.lock:
        try:
            for it in items:
                if it.kind == kinds.FIRSTPRIVATE_INT:     # the common scalar: no map
                    entries.append(None)
                    args.append(it.addr & WORD)
                else:
                    _map_item(region, it)
        except BaseException:
            _undo(region)
            raise
    return region


def _initial_word(region, it):
    k = kinds.base(it.kind)
    if k == kinds.FIRSTPRIVATE_INT:
        return it.addr & WORD
    if k == kinds.FIRSTPRIVATE:            # a private copy, as on a device
        buf = ctypes.create_string_buffer(ctypes.string_at(it.addr, it.size), max(it.size, 1))
        region.temps.append(buf)
        return ctypes.addressof(buf)
    return it.addr


def _map_item(region, it):
    dev = region.dev
    addr, size, kind = it.addr, it.size, it.kind
    t = kinds.traits(kind)
    if t.base == kinds.FIRSTPRIVATE_INT:
        region.entries.append(None)
        region.args.append(addr & WORD)
        return
    if t.base == kinds.FIRSTPRIVATE:
        d = dev.plugin.alloc(dev.local, max(size, 1))
        region.temps.append(d)
        dev.plugin.host2dev(dev.local, d, addr, size)
        region.entries.append(None)
        region.args.append(d)
        return
    if t.base == kinds.FORCE_PRESENT:
        t = kinds.traits(kinds.PRESENT_ALLOC)
    if not t.mapping:
        raise _error(dev, f"map kind {kinds.name(kind)} is not valid for {_range(addr, size)}")
    e = dev.map.find(addr, addr + size)
    if e is None:
        e = _create(region, it, t)
    else:
        if (addr < e.host_start or addr + size > e.host_end) and not (
                t.implicit and addr <= e.host_start and e.host_end <= addr + size):
            who = f"{it.name}: " if it.name else ""
            raise _error(dev, f"{who}trying to map {_range(addr, size)} when "
                              f"[{e.host_start:#x}..{e.host_end:#x}) is already mapped")
        if e not in region.counted:             # Entry has no __eq__: identity
            region.counted.append(e)
            _ref(e, region.dynamic, 1)
        if env.settings().info & env.INFO_REUSE:
            env.info(env.INFO_REUSE, f"device {dev.number}: {_range(addr, size)} present in {e!r}")
        if t.always and t.to:
            _copy_to(dev, e, addr, size)
    region.entries.append(e)
    region.args.append(0 if e is None else e.dev_start + (addr - e.host_start))


def _create(region, it, t):
    """A new entry for an absent item (None for a zero-length one: NULL on the device)."""
    dev = region.dev
    addr, size, kind, obj = it.addr, it.size, it.kind, it.obj
    if t.present:
        raise _not_present(dev, addr, size)
    if size == 0:
        return None
    d = dev.plugin.alloc(dev.local, size)
    try:
        e = _birth(dev, addr, addr + size, d, alloc=d, keepalive=obj)
    except ValueError:
        dev.plugin.free(dev.local, d)
        raise
    region.created.append(e)
    region.counted.append(e)
    _ref(e, region.dynamic, 1)
    if env.settings().info & env.INFO_MAP:
        env.info(env.INFO_MAP, f"device {dev.number}: mapped {_range(addr, size)} "
                               f"({kinds.name(kind)}) at {d:#x}")
    if t.to:
        _copy_to(dev, e, addr, size)
    return e


# -- the one place entries are born and die, and counts change ----------------------

def _birth(dev, host_start, host_end, dev_start, **fields) -> Entry:
    """A new entry in the map (ValueError if it overlaps one)."""
    e = Entry(host_start, host_end, dev_start, **fields)
    dev.map.insert(e)
    return e


def _death(dev, e) -> None:
    """Remove an entry and free the device memory it owns."""
    dev.map.remove(e)
    if e.alloc:
        dev.plugin.free(dev.local, e.alloc)


def _ref(e, dynamic, n) -> None:
    """Change the dynamic or the structured reference count (an infinite one stays)."""
    if dynamic:
        e.dynamic_refcount += n
    else:
        e.refcount += n


def _unused(e) -> bool:
    return e.refcount + e.dynamic_refcount == 0


# -- copies -------------------------------------------------------------------------

def _copy_to(dev, e, addr, size):
    lo, hi = max(addr, e.host_start), min(addr + size, e.host_end)
    if hi > lo:
        if env.settings().info & env.INFO_COPY:
            env.info(env.INFO_COPY, f"device {dev.number}: copy to device {_range(lo, hi - lo)}")
        dev.plugin.host2dev(dev.local, e.dev_start + (lo - e.host_start), lo, hi - lo)


def _copy_from(dev, e, addr, size):
    lo, hi = max(addr, e.host_start), min(addr + size, e.host_end)
    if hi > lo:
        if env.settings().info & env.INFO_COPY:
            env.info(env.INFO_COPY, f"device {dev.number}: copy from device {_range(lo, hi - lo)}")
        dev.plugin.dev2host(dev.local, lo, e.dev_start + (lo - e.host_start), hi - lo)


# -- ending constructs --------------------------------------------------------------

def _undo(region):
    """Take back what `begin` did so far: counts, new entries, temporaries; no copies."""
    dev = region.dev
    for e in region.counted:
        if e not in region.created:
            _ref(e, region.dynamic, -1)
    for e in region.created:
        _death(dev, e)
    _free_temps(region)


def _free_temps(region):
    if not region.dev.is_initial:
        for d in region.temps:
            region.dev.plugin.free(region.dev.local, d)
    region.temps = []


def end(region, copy_back=True) -> None:
    """End a structured construct: decrement once per entry, copy back, remove."""
    dev = region.dev
    if dev.is_initial:
        region.temps = []
        return
    with dev.lock:
        for e in region.counted:
            _ref(e, region.dynamic, -1)
        _release(dev, region.items, region.entries, copy_back)
        _free_temps(region)


def _release(dev, items, entries, copy_back):
    """Copy back what `from` asks for, then remove entries whose counts reached zero."""
    first_error = None
    if copy_back:
        for it, e in zip(items, entries):
            if e is None:
                continue
            t = kinds.traits(it.kind)
            if t.from_ and (t.always or _unused(e)):
                try:
                    _copy_from(dev, e, it.addr, it.size)
                except Exception as err:        # keep releasing; report the first failure
                    first_error = first_error or err
    for e in dict.fromkeys(entries):
        if e is not None and _unused(e):
            if env.settings().info & env.INFO_MAP:
                env.info(env.INFO_MAP, f"device {dev.number}: removed {e!r}")
            _death(dev, e)
    if first_error is not None:
        raise first_error


def enter_data(dev, items) -> None:
    """``target enter data``: to / alloc (with always, present) on dynamic counts."""
    for it in items:
        if not kinds.is_mapping(it.kind) and kinds.base(it.kind) != kinds.FORCE_PRESENT:
            raise MappingError(f"device {dev.number}: map kind {kinds.name(it.kind)} is not "
                               f"valid on target enter data")
    begin(dev, items, dynamic=True)


def exit_data(dev, items) -> None:
    """``target exit data``: from / release / delete (with always, present).

    An item that overlaps an entry without being inside it releases that entry, and
    copies back only the part inside it (libgomp would copy the whole item)."""
    if dev.is_initial:
        return
    with dev.lock:
        entries = []
        for it in items:
            k = kinds.base(it.kind)
            if k not in (kinds.DELETE, kinds.RELEASE) and not (
                    kinds.copies_from(it.kind) and not kinds.copies_to(it.kind)):
                raise MappingError(f"device {dev.number}: map kind {kinds.name(it.kind)} is "
                                   f"not valid on target exit data (from, release or delete)")
            e = dev.map.find(it.addr, it.addr + it.size)
            if e is None and kinds.is_present(it.kind):
                raise _not_present(dev, it.addr, it.size)
            entries.append(e)
        deleted = {id(e) for it, e in zip(items, entries) if kinds.base(it.kind) == kinds.DELETE}
        seen = set()
        for e in entries:
            if e is None or e.refcount == INFINITY or id(e) in seen:
                continue
            seen.add(id(e))
            if id(e) in deleted:
                _ref(e, False, -e.refcount)
                _ref(e, True, -e.dynamic_refcount)
            elif e.dynamic_refcount > 0:
                _ref(e, True, -1)
        _release(dev, items, entries, copy_back=True)


def update(dev, items) -> None:
    """``target update to(...) from(...)``: copy what is present; present asks for it."""
    if dev.is_initial:
        return
    with dev.lock:
        for it in items:
            e = dev.map.find(it.addr, it.addr + it.size)
            if e is None:
                if kinds.is_present(it.kind):
                    raise _not_present(dev, it.addr, it.size)
                continue
            if not (e.host_start <= it.addr and it.addr + it.size <= e.host_end):
                raise _error(dev, f"trying to update {_range(it.addr, it.size)} when only "
                                  f"[{e.host_start:#x}..{e.host_end:#x}) is mapped")
            if it.kind & kinds.FLAG_TO:
                _copy_to(dev, e, it.addr, it.size)
            if it.kind & kinds.FLAG_FROM:
                _copy_from(dev, e, it.addr, it.size)


# -- running kernels ----------------------------------------------------------------

def function_address(dev, fn: int) -> int:
    """The device address of a host function, through the device's map."""
    with dev.lock:
        e = dev.map.find(fn, fn + 1)
    if e is None:
        raise _error(dev, f"function at host address {fn:#x} is not loaded: no registered "
                          f"offload image of kind {dev.target!r} lists it")
    return e.dev_start


def target(dev, fn: int, items, launch=(0, 0, 0)) -> None:
    """GOMP_target_ext: map, run ``fn`` with the translated words, unmap."""
    dev.ensure_init()
    address = function_address(dev, fn)
    region = begin(dev, items)
    ok = False
    try:
        if env.settings().info & env.INFO_LAUNCH:
            env.info(env.INFO_LAUNCH, f"device {dev.number}: run {fn:#x} launch "
                                      f"{tuple(launch)} args {[hex(a) for a in region.args]}")
        dev.plugin.run(dev.local, address, region.args, launch)
        ok = True
    finally:
        end(region, copy_back=ok)


def start(dev, fn: int, items, launch=(0, 0, 0), wait_for=()):
    """`target` without waiting: map, start ``fn`` after the events ``wait_for``; returns
    ``(event, region)``.  Pass the region to `end` once the event is done."""
    dev.ensure_init()
    address = function_address(dev, fn)
    region = begin(dev, items)
    try:
        if env.settings().info & env.INFO_LAUNCH:
            env.info(env.INFO_LAUNCH, f"device {dev.number}: start {fn:#x} launch "
                                      f"{tuple(launch)} args {[hex(a) for a in region.args]}")
        event = dev.plugin.run_async(dev.local, address, region.args, launch, wait_for)
    except BaseException:
        end(region, copy_back=False)
        raise
    return event, region


# -- what the device routines and the device's life need -----------------------------

def is_present(dev, addr: int) -> bool:
    """omp_target_is_present: whether host address ``addr`` is mapped."""
    if dev.is_initial:
        return True
    with dev.lock:
        return dev.map.find(addr, addr) is not None


def device_address(dev, addr: int) -> int:
    """omp_get_mapped_ptr: the device address of a mapped host address, else 0.  The
    address lies inside its entry (or at its end, for a zero-length section there)."""
    if dev.is_initial:
        return addr
    with dev.lock:
        e = dev.map.find(addr, addr)
        return 0 if e is None else e.dev_start + (addr - e.host_start)


def associate(dev, host: int, device: int, size: int) -> bool:
    """omp_target_associate_ptr: map [host, host+size) to device memory the caller owns
    (never freed by the map, never unmapped by counts).  False if the range is mapped
    otherwise already."""
    with dev.lock:
        e = dev.map.find(host, host + size)
        if e is not None:
            return (e.host_start <= host and host + size <= e.host_end
                    and e.dev_start + (host - e.host_start) == device)
        _birth(dev, host, host + size, device, refcount=INFINITY, associated=True)
    return True


def disassociate(dev, host: int) -> bool:
    """omp_target_disassociate_ptr: remove an association that starts at ``host``."""
    with dev.lock:
        e = dev.map.find(host, host)
        if e is None or not e.associated or e.host_start != host:
            return False
        _death(dev, e)
    return True


def add_image(dev, table, loaded) -> list:
    """Entries for a loaded image's functions and variables (variables only off the
    initial device, which uses the host's own); on a collision nothing is added and
    ValueError names the ranges."""
    ranges = [(h, h + 1, d) for h, d in zip(table.functions, loaded.functions)]
    if not dev.is_initial:
        ranges += [(h, h + size, d) for (h, size), d in zip(table.variables, loaded.variables)]
    entries = []
    try:
        for start, stop, d in ranges:
            entries.append(_birth(dev, start, stop, d, refcount=INFINITY))
    except ValueError:
        remove_entries(dev, entries)
        raise
    return entries


def remove_entries(dev, entries) -> None:
    for e in entries:
        _death(dev, e)


def release_all(dev) -> None:
    """At the device's end: remove what is still mapped (reported under PYGOMP_INFO)."""
    left = [e for e in dev.map if e.refcount != INFINITY]
    if left:
        env.info(env.INFO_TABLE, f"device {dev.number} still has {len(left)} "
                                 f"mapping(s) at exit:\n{table_dump(dev)}")
    remove_entries(dev, left)
