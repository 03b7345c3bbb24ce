"""OpenMP 5.2 and OpenACC map semantics on a device's interval map (libgomp's
gomp_map_vars family, and its OpenACC routines).

- An entry has one reference count, as in libgomp.  OpenMP: target, target data and
  enter data increment it, at most once a construct; the end of a structured construct
  and exit data's from/release decrement it, delete sets it to zero.  OpenACC
  (``acc=True``) also keeps the dynamic part of the count (enter data, acc_copyin...):
  its exit data takes one dynamic reference away (finalize: all of them), and a
  structured region's end its own.
- An item found inside an entry uses it (a numpy view finds its parent's entry); one that
  extends an entry fails, naming both ranges.  The one exception is libgomp's for
  implicit maps: an implicit item that contains a whole entry uses that entry (its word
  is the device address the item's start would have, and only the entry's part is ever
  copied).  Python kernels map their arrays explicitly, since they use every element.
- ``from`` copies back when the construct brings the count to zero (then the entry
  goes), or always with ``always``; an entry removed inside a structured construct
  (exit data delete) is left alone at its end.
- ``present`` on an absent object fails with its address and size.
- An error leaves the map as it was before the construct: no half-made entries.
- The members of a mapped struct (GCC's GOMP_MAP_STRUCT) are entries of their own in
  one device allocation; they share the first member's reference count, and are
  removed together (OpenACC: each keeps counts of its own, the allocation goes with
  the last of them).  Pointers attached in mapped memory (ATTACH) are never copied
  either way while attached.

This module (with its OpenACC side, accmap.py: exit data, update and the acc_*
routines) is the only one that reads or changes a device's map (``dev.map``) and the
entries' reference counts: entries are born in `_birth` and die in `_death`, counts
change in `_ref`.  The rest of the runtime and the faces call the functions below.
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import threading
from collections import namedtuple

from . import accprof, env, kinds, trace

INFINITY = math.inf       # images' functions and variables, associated pointers, acc_map_data
WORD = (1 << 64) - 1

Item = namedtuple("Item", "addr size kind obj name", defaults=(None, None))
Item.__doc__ = """One map item: host address, byte count, map kind, the object that owns the
memory (kept alive while mapped) and a name for messages (e.g. a kernel argument)."""


class MappingError(RuntimeError):
    """A map clause cannot be carried out; the map is left as it was."""


class Entry:
    __slots__ = ("host_start", "host_end", "dev_start", "alloc", "refcount",
                 "dynamic_refcount", "keepalive", "associated", "attached", "group", "shared")

    def __init__(self, host_start, host_end, dev_start, alloc=0, refcount=0,
                 dynamic_refcount=0, keepalive=None, associated=False):
        self.host_start = host_start
        self.host_end = host_end
        self.dev_start = dev_start      # device address of host_start
        self.alloc = alloc              # device allocation owned by the entry (0: none)
        self.refcount = refcount        # the reference count (0: removed from the map)
        self.dynamic_refcount = dynamic_refcount    # OpenACC: its dynamic part
        self.keepalive = keepalive      # the host object, kept alive while mapped
        self.associated = associated    # made by omp_target_associate_ptr
        self.attached = None            # offset -> attach count of pointers in it
        self.group = None               # struct members: all of them, the owner first
        self.shared = None              # OpenACC struct members: the `Shared` block

    def __repr__(self):
        o = _owner(self)
        return (f"[{self.host_start:#x}..{self.host_end:#x}) -> {self.dev_start:#x} "
                f"refcount {o.refcount} dynamic {o.dynamic_refcount}")


def _owner(e):
    """The entry that holds ``e``'s reference counts (the first member of a struct)."""
    return e if e.group is None else e.group[0]


class Shared:
    """Device memory that the members of an OpenACC struct share while each keeps counts
    of its own (libgomp's rule for OpenACC): freed when the last of them is removed."""
    __slots__ = ("addr", "users")

    def __init__(self, addr, users):
        self.addr, self.users = addr, users


def _block(e):
    """What ``e``'s device memory belongs to: its shared block, or its owner."""
    return _owner(e) if e.shared is None else e.shared


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
    __slots__ = ("dev", "items", "entries", "args", "counted", "created", "temps", "dynamic",
                 "attached", "acc")

    def __init__(self, dev, items, dynamic, acc):
        self.dev = dev
        self.items = items
        self.dynamic = dynamic  # OpenACC enter data: dynamic references, one an item
        self.acc = acc          # OpenACC's rules and words
        self.entries = []       # per item: its entry, or None
        self.args = []          # per item: the 64-bit word the kernel gets
        self.counted = []       # entries whose count this construct incremented
        self.created = []       # entries this construct made
        self.temps = []         # device memory for firstprivate copies
        self.attached = []      # (entry, pointer address) this construct attached


def begin(dev, items, acc=False, dynamic=False) -> Region:
    """Map ``items`` for a construct; returns the region to pass to `end`.  ``acc``:
    OpenACC's rules; ``dynamic`` (with ``acc``): enter data's dynamic references."""
    region = Region(dev, items, acc and dynamic, acc)
    if dev.is_initial:
        region.args = [_initial_word(region, it) for it in items]
        return region
    entries, args = region.entries, region.args
    with dev.lock:
        try:
            i = 0
            while i < len(items):
                it = items[i]
                if it.kind == kinds.FIRSTPRIVATE_INT:     # the common scalar: no map
                    entries.append(None)
                    args.append(it.addr & WORD)
                elif it.kind == kinds.STRUCT:
                    _map_struct(region, it, items[i + 1:i + 1 + it.size])
                    i += it.size
                elif it.kind == kinds.ALWAYS_POINTER:
                    _always_pointer(region, it, items[i - 1] if i else None)
                else:
                    _map_item(region, it)
                i += 1
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
        later(dev.plugin.host2dev, dev.local, d, addr, size, keep=it.obj)
        region.entries.append(None)
        region.args.append(d)
        return
    if t.base in _SPECIAL:
        _SPECIAL[t.base](region, it)
        return
    if t.base == kinds.FORCE_PRESENT:            # OpenACC present: libgomp's words
        if dev.map.find(addr, addr + size) is None:
            raise _error(dev, f"present clause: !acc_is_present ({addr:#x}, {size} "
                              f"({size:#x}))")
        t = kinds.traits(kinds.PRESENT_ALLOC)
    if not t.mapping:
        raise _error(dev, f"map kind {kinds.name(kind)} is not valid for {_range(addr, size)}")
    e = dev.map.find(addr, addr + size)
    if e is None:
        e = _create(region, it, t)
    else:
        _use(region, e, it, t)
    region.entries.append(e)
    region.args.append(0 if e is None else e.dev_start + (addr - e.host_start))


def _use(region, e, it, t):
    """An item found in entry ``e``: check that it fits, count the entry once."""
    dev, addr, size = region.dev, it.addr, it.size
    outside = addr < e.host_start or addr + size > e.host_end
    if region.dynamic and outside:              # OpenACC enter data, acc_copyin
        raise _error(dev, f"[{addr:#x},+{size}] not mapped")
    if (outside and not (t.implicit and addr <= e.host_start and e.host_end <= addr + size)) \
            or (t.kind & kinds.FLAG_FORCE and not region.dynamic):
        who = f"{it.name}: " if it.name else ""
        why = (f" ({kinds.name(t.kind)} needs an object not present)"
               if t.kind & kinds.FLAG_FORCE else "")
        words = "Trying to map into device {} object" if region.acc else "trying to map {}"
        raise _error(dev, f"{who}{words.format(_range(addr, size))} when "
                          f"[{e.host_start:#x}..{e.host_end:#x}) is already mapped{why}")
    _count(region, e)
    if env.settings().info & env.INFO_REUSE:
        env.info(env.INFO_REUSE, f"device {dev.number}: {_range(addr, size)} present in {e!r}")
    if t.always and t.to:
        _copy_to(dev, e, addr, size)


def _count(region, e):
    """Count ``e`` (its owner) once for this construct (OpenACC enter data: once an item)."""
    e = _owner(e)
    if region.dynamic or e not in region.counted:   # Entry has no __eq__: identity
        region.counted.append(e)
        _ref((e,), 1, region.dynamic)


def _create(region, it, t):
    """A new entry for an absent item (a zero-length object gets a zero-length entry at
    a device address of its own, as libgomp makes one)."""
    dev = region.dev
    addr, size, kind, obj = it.addr, it.size, it.kind, it.obj
    if t.present:
        raise _not_present(dev, addr, size)
    d = dev.plugin.alloc(dev.local, max(size, 1))
    try:
        e = _birth(dev, addr, addr + size, d, alloc=d, keepalive=obj)
    except ValueError:
        dev.plugin.free(dev.local, d)
        raise
    region.created.append(e)
    _count(region, e)
    if env.settings().info & env.INFO_MAP:
        env.info(env.INFO_MAP, f"device {dev.number}: mapped {_range(addr, size)} "
                               f"({kinds.name(kind)}) at {d:#x}")
    if t.to:
        _copy_to(dev, e, addr, size)
    elif env.settings().poison:
        _poison(dev, d, size, obj)
    return e


# -- PYGOMP_POISON ------------------------------------------------------------------

_SNAN = {2: 0x7D00, 4: 0x7FA00000, 8: 0x7FF4000000000000}   # quiet bit 0, the next one 1


def poison_pattern(obj) -> bytes:
    """What PYGOMP_POISON fills new device memory of ``obj`` with: for a float array
    (numpy's float16/32/64, and the parts of complex64/128) a signalling NaN an element,
    ``7FA00000`` (float32) or ``7FF4000000000000`` (float64); else (ints, or no array
    known, as for C programs) 0xA5 bytes."""
    dtype = getattr(obj, "dtype", None)
    kind, size = getattr(dtype, "kind", ""), getattr(dtype, "itemsize", 0)
    if kind == "c":
        kind, size = "f", size // 2
    if kind == "f" and size in _SNAN:
        order = "big" if dtype.byteorder == ">" else "little"
        return _SNAN[size].to_bytes(size, order)
    return b"\xa5"


def _poison(dev, d, size, obj):
    """Fill ``size`` bytes at device address ``d`` (a host-to-device copy, in order with
    the construct's other device work)."""
    if size:
        p = poison_pattern(obj)
        fill = ctypes.create_string_buffer((p * (size // len(p) + 1))[:size], size)
        later(dev.plugin.host2dev, dev.local, d, ctypes.addressof(fill), size, keep=fill)


# -- deferred device work (OpenACC's async queues) ----------------------------------

_thread = threading.local()


@contextlib.contextmanager
def deferred():
    """Inside this block the map changes at once, but the device work that map
    operations make (copies, frees, launches) is not done: it is collected, in order,
    in the list the block gets, for an async queue to do with `do` (as libgomp's maps
    change at the construct, its data moves when the queue gets there).  The work of
    an operation that raised must be dropped."""
    work = []
    with _deferring(work):
        yield work


@contextlib.contextmanager
def _deferring(work):
    outer = getattr(_thread, "work", None)
    _thread.work = work
    try:
        yield
    finally:
        _thread.work = outer


def later(fn, *args, keep=None) -> None:
    """``fn(*args)`` now, or in a `deferred` block's list, with ``keep`` (what owns the
    host memory the work reads or writes) kept alive until it is done."""
    work = getattr(_thread, "work", None)
    if work is None:
        fn(*args)
    else:
        work.append((fn, args, keep))


def do(work) -> None:
    """The deferred device work, in order."""
    for fn, args, _ in work:
        fn(*args)


# -- the one place entries are born and die, and counts change ----------------------

def _birth(dev, host_start, host_end, dev_start, **fields) -> Entry:
    """A new entry in the map (ValueError if it overlaps one)."""
    e = Entry(host_start, host_end, dev_start, **fields)
    dev.map.insert(e)
    if accprof.mask:
        accprof.entry(accprof.ev_create, e)
    return e


def _death(dev, e) -> None:
    """Remove an entry (a struct: all its members) and free the device memory it owns;
    its count becomes 0, so that constructs that still hold it leave it alone.  It lets
    go of its host objects: work queued before it may still copy to or from them, so
    they go with the queued free (an async queue frees after all its device's work)."""
    if accprof.mask:
        accprof.entry(accprof.ev_delete, e)
    e.refcount = e.dynamic_refcount = 0
    held = []
    for m in e.group or (e,):
        dev.map.remove(m)
        if m.keepalive is not None:
            held.append(m.keepalive)
            m.keepalive = None
    if e.alloc:
        later(dev.plugin.free, dev.local, e.alloc, keep=held)
    elif e.shared is not None and e.shared.users == 1:
        e.shared.users = 0
        later(dev.plugin.free, dev.local, e.shared.addr, keep=held)
    else:
        if e.shared is not None:
            e.shared.users -= 1
        if held:
            later(held.clear)           # after the work queued so far


def _ref(owners, n, dynamic=False) -> None:
    """Change each owner's reference count (an infinite one stays), and with ``dynamic``
    its dynamic part (OpenACC's)."""
    for e in owners:
        if e.refcount != INFINITY:
            e.refcount += n
        if dynamic:
            e.dynamic_refcount += n


def _down(entries, zeroed, to_zero=False) -> None:
    """One reference less (``to_zero``: all of them) on each live entry's owner, in
    turn; an owner that reaches zero is added to ``zeroed`` (its construct copies back
    and removes it)."""
    for e in entries:
        e = _owner(e)
        if 0 < e.refcount != INFINITY:
            _ref((e,), -e.refcount if to_zero else -1)
            if e.refcount == 0:
                zeroed.append(e)


# -- copies -------------------------------------------------------------------------

def _copy_to(dev, e, addr, size):
    for lo, hi in _pieces(e, addr, addr + size):
        if env.settings().info & env.INFO_COPY:
            env.info(env.INFO_COPY, f"device {dev.number}: copy to device {_range(lo, hi - lo)}")
        later(dev.plugin.host2dev, dev.local, e.dev_start + (lo - e.host_start), lo, hi - lo,
              keep=e)


def _copy_from(dev, e, addr, size):
    for lo, hi in _pieces(e, addr, addr + size):
        if env.settings().info & env.INFO_COPY:
            env.info(env.INFO_COPY, f"device {dev.number}: copy from device {_range(lo, hi - lo)}")
        later(dev.plugin.dev2host, dev.local, lo, e.dev_start + (lo - e.host_start), hi - lo,
              keep=e)


def _pieces(e, lo, hi):
    """The parts of [lo, hi) inside ``e``, less its attached pointers (their device
    copies hold device addresses, their host copies host addresses)."""
    lo, hi = max(lo, e.host_start), min(hi, e.host_end)
    if e.attached:
        for off in sorted(e.attached):
            p = e.host_start + off
            if lo < p + PTR and p < hi:
                if p > lo:
                    yield lo, p
                lo = p + PTR
    if hi > lo:
        yield lo, hi


# -- ending constructs --------------------------------------------------------------

def _undo(region):
    """Take back what `begin` did so far: counts, new entries, temporaries; no copies.
    At once, even where copies are deferred (the caller drops the deferred work)."""
    with _deferring(None):
        _undo_now(region)


def _undo_now(region):
    dev = region.dev
    for e, ptr in reversed(region.attached):
        _detach_pointer(dev, e, ptr)
    for e in region.counted:
        if e not in region.created:
            _ref((e,), -1, region.dynamic)
    for e in region.created:
        _death(dev, e)
    _free_temps(region)


def _free_temps(region):
    if not region.dev.is_initial:
        for d in region.temps:
            later(region.dev.plugin.free, region.dev.local, d)
    region.temps = []


def end(region, copy_back=True) -> None:
    """End a structured construct: decrement once per entry (an entry removed meanwhile
    is left alone), copy back, remove what reached zero."""
    dev = region.dev
    if dev.is_initial:
        region.temps = []
        return
    with dev.lock:
        for e, ptr in reversed(region.attached):      # before anything is copied back
            if _owner(e).refcount:
                _detach_pointer(dev, e, ptr)
        zeroed = []
        _down(region.counted, zeroed)
        _release(dev, region.items, region.entries, copy_back, zeroed)
        _free_temps(region)


def _release(dev, items, entries, copy_back, zeroed):
    """Copy back what `from` asks for (``always``: from any live entry, else from those
    the construct brought to zero), then remove the ``zeroed`` entries."""
    first_error = None
    if copy_back:
        for it, e in zip(items, entries):
            if e is None:
                continue
            t = kinds.traits(it.kind)
            o = _owner(e)
            if t.from_ and (any(o is z for z in zeroed) or (t.always and o.refcount)):
                try:
                    _copy_from(dev, e, it.addr, it.size)
                except Exception as err:        # keep releasing; report the first failure
                    first_error = first_error or err
    for e in zeroed:
        if env.settings().info & env.INFO_MAP:
            env.info(env.INFO_MAP, f"device {dev.number}: removed {e!r}")
        _death(dev, e)
    if first_error is not None:
        raise first_error


def enter_data(dev, items, acc=False) -> None:
    """``target enter data`` (``acc``: OpenACC's ``enter data``, a dynamic reference an
    item): to / alloc (with always, present), and GCC's struct, pointer and attach items."""
    for it in items:
        if not kinds.is_mapping(it.kind) and kinds.base(it.kind) not in _ENTER_SPECIAL:
            raise MappingError(f"device {dev.number}: map kind {kinds.name(it.kind)} is not "
                               f"valid on target enter data")
    begin(dev, items, acc=acc, dynamic=True)


_EXIT_KINDS = {kinds.DELETE, kinds.RELEASE, kinds.ZERO_LEN_ARRAY_SECTION,
               kinds.DELETE_ZERO_LEN_ARRAY_SECTION, kinds.DETACH, kinds.FORCE_DETACH}
_ZERO_LEN_KINDS = {kinds.ZERO_LEN_ARRAY_SECTION, kinds.DELETE_ZERO_LEN_ARRAY_SECTION}


def exit_data(dev, items) -> None:
    """``target exit data``: from / release / delete (with always, present), detach
    (OpenACC's exit data: `accmap.exit_data`).

    An item that overlaps an entry without being inside it releases that entry, and
    copies back only the part inside it (libgomp would copy the whole item)."""
    if dev.is_initial:
        return
    with dev.lock:
        for it in items:
            if kinds.base(it.kind) not in _EXIT_KINDS and not (
                    kinds.copies_from(it.kind) and not kinds.copies_to(it.kind)):
                raise MappingError(f"device {dev.number}: map kind {kinds.name(it.kind)} is "
                                   f"not valid on target exit data (from, release or delete)")
        for it in items:                      # detach first, as libgomp does
            k = kinds.base(it.kind)
            if k in (kinds.DETACH, kinds.FORCE_DETACH):
                e = dev.map.lookup(it.addr, it.addr + PTR)
                if e is not None:
                    _detach_pointer(dev, e, it.addr, finalize=k == kinds.FORCE_DETACH)
        entries = []
        for it in items:
            k = kinds.base(it.kind)
            if k in (kinds.DETACH, kinds.FORCE_DETACH):
                e = None
            elif k in _ZERO_LEN_KINDS:
                e = dev.map.lookup(it.addr, it.addr + max(it.size, 1))
            else:
                e = dev.map.find(it.addr, it.addr + it.size)
            if e is None and kinds.is_present(it.kind):
                raise _not_present(dev, it.addr, it.size)
            entries.append(e)
        deleted = {id(_owner(e)) for it, e in zip(items, entries) if e is not None and
                   kinds.base(it.kind) in (kinds.DELETE, kinds.DELETE_ZERO_LEN_ARRAY_SECTION)}
        zeroed = []
        for e in dict.fromkeys(_owner(e) for e in entries if e is not None):   # once each
            _down((e,), zeroed, to_zero=id(e) in deleted)
        _release(dev, items, entries, True, zeroed)


def update(dev, items) -> None:
    """``target update to(...) from(...)``: copy what is present; present asks for it
    (OpenACC's update: `accmap.update`)."""
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


# -- the kinds GCC emits for pointers, struct members and use_device_ptr/addr ------

PTR = ctypes.sizeof(ctypes.c_void_p)


def _read_pointer(addr):
    return ctypes.c_uint64.from_address(addr).value


def _write_pointer(dev, dev_addr, value):
    later(_put_word, dev, dev_addr, value)


def _put_word(dev, dev_addr, value):
    word = ctypes.c_uint64(value)
    dev.plugin.host2dev(dev.local, dev_addr, ctypes.addressof(word), PTR)


def _device_address(dev, host, bias=0):
    """The device address of host memory at ``host`` (looked up at ``host + bias``, a
    bias being a 64-bit two's complement, with libgomp's rule for zero-length
    sections), or None where nothing holds it."""
    at = (host + bias) & WORD
    e = dev.map.find(at, at)
    return None if e is None else e.dev_start + (host - e.host_start)


def _zero_length(region, it):
    """ZERO_LEN_ARRAY_SECTION: the entry holding the address is used; none: NULL."""
    e = region.dev.map.lookup(it.addr, it.addr + 1)
    if e is not None:
        _count(region, e)
    region.entries.append(e)
    region.args.append(0 if e is None else e.dev_start + (it.addr - e.host_start))


def _use_device_ptr(region, it):
    """USE_DEVICE_PTR(_IF_PRESENT): the device address of mapped host memory (the
    caller writes it back into the construct's arguments); nothing is counted."""
    word = _device_address(region.dev, it.addr)
    if word is None:
        if kinds.base(it.kind) == kinds.USE_DEVICE_PTR:
            raise _error(region.dev, f"use_device_ptr pointer wasn't mapped (host address "
                                     f"{it.addr:#x})")
        word = it.addr                      # IF_PRESENT: the host address, unchanged
    region.entries.append(None)
    region.args.append(word)


def _map_struct(region, it, members):
    """STRUCT: ``members`` (sorted by address) mapped together: new ones get entries in
    one device allocation from the first one's start to the last one's end; present
    ones must all be members of one mapped struct.  The word of the STRUCT item is the
    device address of the struct's base (which may lie before the allocation).  OpenACC's
    present members (FORCE_PRESENT) need the struct mapped; its members keep counts of
    their own (OpenMP's share the first one's)."""
    dev = region.dev
    present = [m for m in members if kinds.base(m.kind) == kinds.FORCE_PRESENT]
    members = [m._replace(kind=kinds.ALLOC) if kinds.base(m.kind) == kinds.FORCE_PRESENT
               else m for m in members]
    for m in members:
        if not kinds.traits(m.kind).mapping:
            raise _error(dev, f"map kind {kinds.name(m.kind)} is not valid for a structure "
                              f"element {_range(m.addr, m.size)}")
    lo, hi = members[0].addr, members[-1].addr + members[-1].size
    first = dev.map.lookup(it.addr, hi)      # looked up from the base, as libgomp does
    if first is None and present:
        m = present[0]
        raise _error(dev, f"present clause: !acc_is_present ({m.addr:#x}, {m.size} "
                          f"({m.size:#x}))")
    if first is None:
        group = _new_struct(region, members, lo, hi)
    else:
        group = []
        for m in members:
            e = dev.map.find(m.addr, m.addr + m.size)
            if e is None or _block(e) is not _block(first):
                raise _error(dev, f"Trying to map into device {_range(m.addr, m.size)} "
                                  f"structure element when other mapped elements from the "
                                  f"same structure weren't mapped together with it")
            _use(region, e, m, kinds.traits(m.kind))
            group.append(e)
    e = group[0]
    region.entries.append(None)
    region.args.append(e.dev_start + (it.addr - e.host_start))
    for m, e in zip(members, group):
        region.entries.append(e)
        region.args.append(e.dev_start + (m.addr - e.host_start))


def _new_struct(region, members, lo, hi):
    dev = region.dev
    block = dev.plugin.alloc(dev.local, hi - lo)
    group = []
    try:
        for m in members:
            group.append(_birth(dev, m.addr, m.addr + m.size, block + (m.addr - lo),
                                keepalive=m.obj))
    except ValueError:
        for done in group:
            _death(dev, done)
        dev.plugin.free(dev.local, block)
        raise
    if region.acc:
        shared = Shared(block, len(group))
        for e in group:
            e.shared = shared
            region.created.append(e)
            _count(region, e)
    else:
        for e in group:
            e.group = group
        group[0].alloc = block
        region.created.append(group[0])
        _count(region, group[0])
    if env.settings().poison:
        _poison(dev, block, hi - lo, None)      # the members mapped ``to`` are copied next
    if env.settings().info & env.INFO_MAP:
        env.info(env.INFO_MAP, f"device {dev.number}: mapped structure elements "
                               f"{_range(lo, hi - lo)} at {block:#x}")
    for m, e in zip(members, group):
        if kinds.traits(m.kind).to:
            _copy_to(dev, e, m.addr, m.size)
    return group


def _pointer(region, it):
    """POINTER: the pointer variable at ``it.addr`` is mapped too; a new device copy
    holds the device address of its target (looked up at target + bias, the size)."""
    dev = region.dev
    item = Item(it.addr, PTR, kinds.ALLOC, it.obj)
    e = dev.map.find(it.addr, it.addr + PTR)
    if e is None:
        target = _read_pointer(it.addr)
        value = 0 if target == 0 else _device_address(dev, target, it.size)
        if value is None:
            if kinds.base(it.kind) != kinds.POINTER_TO_ZERO_LENGTH_ARRAY_SECTION:
                raise _error(dev, f"Pointer target of array section wasn't mapped (the "
                                  f"pointer at {it.addr:#x} holds {target:#x})")
            value = 0
        e = _create(region, item, kinds.traits(kinds.ALLOC))
        _write_pointer(dev, e.dev_start, value)
    else:
        _use(region, e, item, kinds.traits(kinds.ALLOC))
    region.entries.append(e)
    region.args.append(e.dev_start + (it.addr - e.host_start))


def _always_pointer(region, it, previous):
    """ALWAYS_POINTER: the mapped pointer at ``it.addr`` gets the device address of
    the previous item (less the bias), every time; nothing is counted."""
    dev = region.dev
    e = dev.map.lookup(it.addr, it.addr + PTR)
    if e is None or it.addr < e.host_start or it.addr + PTR > e.host_end:
        raise _error(dev, f"always pointer not mapped ({_range(it.addr, PTR)})")
    if previous is None:
        value = 0
    elif previous.kind == kinds.ALWAYS_POINTER:      # a chain: the previous pointer's slot
        value = _device_address(dev, previous.addr) or 0
    else:
        value = region.args[-1]
    if value:
        value = (value - it.size) & WORD
    _write_pointer(dev, e.dev_start + (it.addr - e.host_start), value)
    region.entries.append(None)
    region.args.append(0)


def _attach(region, it):
    """ATTACH: the device copy of the pointer at ``it.addr`` (inside a mapped entry;
    none: nothing to do, an error for OpenACC) points to the device copy of its
    target; one attach count a pointer, undone by `end` or a DETACH."""
    dev = region.dev
    e = dev.map.lookup(it.addr, it.addr + PTR)
    region.entries.append(None)
    if e is None:
        if region.acc:
            raise _error(dev, "outer struct not mapped for attach")
        region.args.append(0)
        return
    _attach_pointer(dev, e, it.addr, it.size,
                    kinds.base(it.kind) == kinds.ATTACH_ZERO_LENGTH_ARRAY_SECTION)
    region.attached.append((e, it.addr))
    region.args.append(e.dev_start + (it.addr - e.host_start))


def _attach_pointer(dev, e, ptr, bias=0, zero_length=False):
    """One attach count more for the pointer at ``ptr`` in entry ``e``; the first one
    points its device copy to the device copy of its target (looked up at target +
    bias; none: an error, or NULL for a zero-length section)."""
    off = ptr - e.host_start
    if not (e.attached or {}).get(off):
        target = _read_pointer(ptr)
        if target == 0:
            raise _error(dev, f"attempt to attach null pointer (at {ptr:#x})")
        value = _device_address(dev, target, bias)
        if value is None:
            if not zero_length:
                raise _error(dev, f"pointer target not mapped for attach (the pointer at "
                                  f"{ptr:#x} holds {target:#x})")
            value = 0
        _write_pointer(dev, e.dev_start + off, value)
    if e.attached is None:
        e.attached = {}
    e.attached[off] = e.attached.get(off, 0) + 1


def _detach_pointer(dev, e, ptr, finalize=False):
    """One attach count less; at zero the device copy gets the host pointer again."""
    off = ptr - e.host_start
    if e.attached is None:
        raise _error(dev, f"no attachment counters for struct (pointer at {ptr:#x})")
    n = max(e.attached.get(off, 0), 1) if finalize else e.attached.get(off, 0)
    if n == 0:
        raise _error(dev, "attach count underflow")
    if finalize or n == 1:
        e.attached.pop(off, None)
        _write_pointer(dev, e.dev_start + off, _read_pointer(ptr))
    else:
        e.attached[off] = n - 1


def _if_present(region, it):
    """IF_PRESENT (OpenACC's no_create): present data is used as with alloc; absent
    data is not mapped, and the region gets its host address."""
    if region.dev.map.find(it.addr, it.addr + it.size) is None:
        region.entries.append(None)
        region.args.append(it.addr)
    else:
        _map_item(region, it._replace(kind=kinds.ALLOC))


def _deviceptr(region, it):
    """FORCE_DEVICEPTR (OpenACC's deviceptr): the pointer variable at ``it.addr`` holds
    a device address already; the region gets a private copy of it."""
    _map_item(region, it._replace(kind=kinds.FIRSTPRIVATE, size=PTR))


_SPECIAL = {                # handled one item at a time
    kinds.ZERO_LEN_ARRAY_SECTION: _zero_length,
    kinds.USE_DEVICE_PTR: _use_device_ptr,
    kinds.USE_DEVICE_PTR_IF_PRESENT: _use_device_ptr,
    kinds.POINTER: _pointer,
    kinds.POINTER_TO_ZERO_LENGTH_ARRAY_SECTION: _pointer,
    kinds.ATTACH: _attach,
    kinds.ATTACH_ZERO_LENGTH_ARRAY_SECTION: _attach,
    kinds.IF_PRESENT: _if_present,
    kinds.FORCE_DEVICEPTR: _deviceptr,
}
_ENTER_SPECIAL = {kinds.FORCE_PRESENT, kinds.STRUCT, kinds.ALWAYS_POINTER, kinds.POINTER,
                  kinds.POINTER_TO_ZERO_LENGTH_ARRAY_SECTION, kinds.ATTACH,
                  kinds.ATTACH_ZERO_LENGTH_ARRAY_SECTION, kinds.ZERO_LEN_ARRAY_SECTION}


# -- running kernels ----------------------------------------------------------------

def find_function(dev, fn: int):
    """The device address of a host function on ``dev``, or None if no image has it."""
    with dev.lock:
        e = dev.map.find(fn, fn + 1)
    return None if e is None else e.dev_start


def function_address(dev, fn: int) -> int:
    """The device address of a host function, through the device's map."""
    address = find_function(dev, fn)
    if address is None:
        raise _error(dev, f"function at host address {fn:#x} is not loaded: no registered "
                          f"offload image of kind {dev.target!r} lists it")
    return address


def target(dev, fn: int, items, launch=(0, 0, 0), acc=False) -> None:
    """GOMP_target_ext (``acc``: GOACC_parallel_keyed): map, run ``fn`` with the
    translated words, unmap."""
    dev.ensure_init()
    address = function_address(dev, fn)
    region = begin(dev, items, acc=acc)
    ok = False
    try:
        if env.settings().info & env.INFO_LAUNCH:
            env.info(env.INFO_LAUNCH, f"device {dev.number}: run {fn:#x} launch "
                                      f"{tuple(launch)} args {[hex(a) for a in region.args]}")
        later(dev.plugin.run, dev.local, address, region.args, launch)
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


class Call:
    """`target` prepared for calls that repeat the same map items (a kernel called again
    with the same arrays), where only the words at ``slots`` (scalars) change.

    While the device's map is unchanged since the items were looked up (its version),
    a call reuses the function's address, the entries found and the words they give:
    it only counts the entries up, runs, and counts them down.  Items that the
    construct would create, copy (``always``, firstprivate copies) or report
    (PYGOMP_INFO) go through `target` every time, as does any error.

    A kernel with a result (``result`` bytes, at most `RESULT`) gets one more word: the
    address of a result slot of the device's own (as if mapped ``from``), and `run`
    returns the bytes the kernel left there."""
    __slots__ = ("dev", "fn", "items", "slots", "launch", "result", "version", "address",
                 "counted", "entries", "words")

    def __init__(self, dev, fn, items, slots, launch=(0, 0, 0), result=0):
        self.dev, self.fn, self.launch, self.result = dev, fn, launch, result
        self.items = list(items)        # at `slots`: placeholders of per-call words
        self.slots = slots
        self.version = None             # the map version `words` were made for
        self.words = self.address = None   # words None: go through `target`

    def run(self, values):
        """Run with ``values`` as the words at `slots`; the result's bytes, or None."""
        dev = self.dev
        with dev.lock:
            if self.version != dev.map.version:
                self._look_up()
            words, counted, entries = self.words, self.counted, self.entries
            address = self.address
            _ref(counted, 1)
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
                    _down(counted, zeroed)
                    if zeroed:
                        _release(dev, self.items, entries, ok, zeroed)

    def _target(self, values):
        """The call through `target`: the per-call words, and the result mapped ``from``."""
        items = self.items[:]
        for i, v in zip(self.slots, values):
            items[i] = Item(v, 0, kinds.FIRSTPRIVATE_INT)
        if not self.result:
            return target(self.dev, self.fn, items, self.launch)
        out = ctypes.create_string_buffer(self.result)
        items.append(Item(ctypes.addressof(out), self.result, kinds.FROM, out))
        target(self.dev, self.fn, items, self.launch)
        return out.raw

    def _look_up(self):
        """Find the function and every item in the map (under the device's lock); leave
        `words` None when a call must go through `target`."""
        dev = self.dev
        self.version, self.words, self.counted, self.entries = None, None, (), ()
        if dev.state != "initialized" or env.settings().info or trace.on:
            return                      # not now: look again next time
        self.version = dev.map.version
        e = dev.map.find(self.fn, self.fn + 1)
        if e is None:
            return
        self.address = e.dev_start
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
                if _owner(e) not in counted:        # a struct's members: its owner
                    counted.append(_owner(e))
            entries.append(e)
        self.words, self.entries, self.counted = words, entries, counted


RESULT = 8          # bytes of a result slot: a kernel's result is a scalar


def _result_slot(dev):
    """A result slot of the device (kept for reuse; freed by `release_all`)."""
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


# -- what the device routines and the device's life need -----------------------------

def is_present(dev, addr: int) -> bool:
    """omp_target_is_present: whether the byte at ``addr`` is mapped (libgomp's rule:
    an address one past a mapped range is not)."""
    if dev.is_initial:
        return True
    with dev.lock:
        return dev.map.lookup(addr, addr + 1) is not None


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
    """At the device's end: remove what is still mapped (reported under PYGOMP_INFO),
    free the result slots."""
    while dev.spare_results:
        dev.plugin.free(dev.local, dev.spare_results.pop())
    left = [e for e in dev.map if e.refcount != INFINITY]
    if left:
        env.info(env.INFO_TABLE, f"device {dev.number} still has {len(left)} "
                                 f"mapping(s) at exit:\n{table_dump(dev)}")
    remove_entries(dev, dict.fromkeys(_owner(e) for e in left))
