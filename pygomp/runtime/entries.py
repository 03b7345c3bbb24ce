"""The entries of a device's map: the one place they are born (`birth`) and die
(`death`) and their reference counts change (`ref`), the copies to and from them, and
the errors that name their ranges.  Used by the map's modules only (mapping.py,
attach.py, accmap.py, calls.py)."""
from __future__ import annotations

import ctypes
import math
import sys
import weakref
from collections import namedtuple

from ..errors import PygompError
from . import env
from .deferred import later

INFINITY = math.inf       # images' functions and variables, associated pointers, acc_map_data
WORD = (1 << 64) - 1
PTR = ctypes.sizeof(ctypes.c_void_p)

Item = namedtuple("Item", "addr size kind obj name align", defaults=(None, None, None))
Item.__doc__ = """One map item: host address, byte count, map kind, the object that owns the
memory (kept alive while mapped), a name for messages (e.g. a kernel argument) and, for
OpenACC constructs of C programs, the alignment that libgomp's kind gives (the item then
takes part in libgomp's layout of one device block per construct: `mapping`)."""


class MappingError(PygompError, RuntimeError):
    """A map clause cannot be carried out; the map is left as it was."""


MappingError.__module__ = "pygomp.runtime.mapping"     # its public name, in tracebacks too


class Entry:
    __slots__ = ("host_start", "host_end", "dev_start", "alloc", "refcount",
                 "dynamic_refcount", "keepalive", "associated", "attached", "saved", "group",
                 "shared", "flight", "null_data", "pointers")

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
        self.saved = None               # offset -> the host value an attach replaced, in
                                        # an entry whose device copy is the host's own
        self.group = None               # struct members: all of them, the owner first
        self.shared = None              # OpenACC struct members: the `Shared` block
        self.flight = None              # its device's `Flight`
        self.null_data = False          # a Fortran descriptor mapped with a null data
                                        # pointer (attach.map_descriptor)
        self.pointers = ()              # offsets of the pointers that pointer items
                                        # (attach.set_pointer) set in its device copy

    def __repr__(self):
        o = owner(self)
        return (f"[{self.host_start:#x}..{self.host_end:#x}) -> {self.dev_start:#x} "
                f"refcount {o.refcount} dynamic {o.dynamic_refcount}")


def owner(e):
    """The entry that holds ``e``'s reference counts (the first member of a struct)."""
    return e if e.group is None else e.group[0]


class Shared:
    """Device memory that several OpenACC entries share while each keeps counts of its
    own (a struct's members; the entries one construct of a C program makes, libgomp's
    layout): freed when the last of them is removed."""
    __slots__ = ("addr", "users")

    def __init__(self, addr, users):
        self.addr, self.users = addr, users


class Block:
    """The device memory of the entries one OpenACC construct of a C program makes, as
    libgomp lays it out (`mapping._plan`): one allocation of their size plus the largest
    alignment (at least a pointer's) less one, whose start rounded up to that alignment
    is the first one's address; OpenACC's profiling shows it (acc_ev_alloc's bytes and
    device_ptr).  Allocated when the first of them is made, freed with the last
    (`Shared`)."""
    __slots__ = ("offsets", "size", "align", "shared", "base")

    def __init__(self, offsets, size, align):
        self.offsets = offsets      # (host address, size) -> offset, until made
        self.size, self.align = size, align
        self.shared = None          # the `Shared` allocation, once the first is made
        self.base = 0

    def start(self, dev):
        """The aligned start of the block (allocated the first time)."""
        if self.shared is None:
            raw = dev.plugin.alloc(dev.local, self.size + self.align - 1)
            self.shared = Shared(raw, 0)
            self.base = (raw + self.align - 1) & -self.align
        return self.base

    def drop(self, dev):
        """Free the block that no entry uses (a failed construct)."""
        dev.plugin.free(dev.local, self.shared.addr)
        self.shared = None


def block(e):
    """What ``e``'s device memory belongs to: its shared block, or its owner."""
    return owner(e) if e.shared is None else e.shared


# -- errors -------------------------------------------------------------------------

def table_dump(dev) -> str:
    return "\n".join(f"  {e!r}" for e in dev.map) or "  (empty)"


def error(dev, message):
    env.info(env.INFO_TABLE, f"device {dev.number} map at error:\n{table_dump(dev)}")
    return MappingError(f"device {dev.number}: {message}")


def span(addr, size):
    return f"[{addr:#x}..{addr + size:#x})"


def not_present(dev, addr, size, name=None):
    """``name``: the item's, such as a kernel's argument (``k: argument 'x'``)."""
    who = f"{name}: " if name else ""
    return error(dev, f"{who}present: {span(addr, size)} ({size} bytes at host address "
                      f"{addr:#x}) is not present on the device")


def profiled():
    """`accprof` while an OpenACC profiling callback is on, else None: what registers
    one imports it first, so that a program without them never imports it."""
    prof = sys.modules.get("pygomp.runtime.accprof")
    return prof if prof is not None and prof.mask else None


# -- the one place entries are born and die, and counts change ----------------------

def birth(dev, host_start, host_end, dev_start, **fields) -> Entry:
    """A new entry in the map (ValueError if it overlaps one)."""
    e = Entry(host_start, host_end, dev_start, **fields)
    e.flight = flight_of(dev)
    dev.map.insert(e)
    prof = profiled()
    if prof:
        prof.entry(prof.ev_create, e)
    return e


def death(dev, e) -> None:
    """Remove an entry (a struct: all its members) and free the device memory it owns;
    its count becomes 0, so that constructs that still hold it leave it alone.  It lets
    go of its host objects: work queued before it may still copy to or from them, so
    they go with the queued free (an async queue frees after all its device's work)."""
    flight_of(dev).gen += 1         # calls that register from now on count instead
    prof = profiled()
    if prof:
        prof.entry(prof.ev_delete, e)
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


def ref(owners, n, dynamic=False) -> None:
    """Change each owner's reference count (an infinite one stays), and with ``dynamic``
    its dynamic part (OpenACC's).  An owner about to lose its last reference first
    holds the calls in flight (`Flight.hold`)."""
    for e in owners:
        if e.refcount != INFINITY:
            if n < 0 and e.refcount + n <= 0:
                e.flight.hold()
            e.refcount += n
        if dynamic:
            e.dynamic_refcount += n


def down(entries, zeroed, to_zero=False) -> None:
    """One reference less (``to_zero``: all of them) on each live entry's owner, in
    turn; an owner that reaches zero is added to ``zeroed`` (its construct copies back
    and removes it).  An owner about to lose its last reference first holds the calls
    in flight (`Flight.hold`)."""
    for e in entries:
        if e.group is not None:
            e = e.group[0]              # its owner
        n = e.refcount
        if 0 < n != INFINITY:
            if n == 1 or to_zero:
                e.flight.hold()
                n = e.refcount
            e.refcount = n = 0 if to_zero else n - 1
            if n == 0:
                zeroed.append(e)


# -- calls in flight ----------------------------------------------------------------

class Flight:
    """The calls in flight on a device that hold its entries without counting them
    (`calls.Call.run`): each registers ``calls[token] = (items, entries, counted)`` while
    it runs, if `gen` is still the one its look-up saw once registered.  Whoever may take
    an entry's last reference (`down`, `ref`; under the device's lock) first calls `hold`:
    a new `gen` (calls that register from now on count instead), then the calls in
    flight are adopted (their entries counted up, as if they had counted; each moves to
    `adopted` and, once run, ends through the counting path).  `death` too makes a new
    `gen`."""
    __slots__ = ("calls", "adopted", "gen")

    def __init__(self):
        self.calls, self.adopted, self.gen = {}, {}, 0

    def hold(self):
        self.gen += 1
        calls = self.calls
        while calls:
            try:
                token, held = calls.popitem()
            except KeyError:            # the last one ended meanwhile
                return
            ref(held[2], 1)
            self.adopted[token] = held


_flights = weakref.WeakKeyDictionary()      # a device -> its `Flight`


def flight_of(dev) -> Flight:
    f = _flights.get(dev)
    return _flights.setdefault(dev, Flight()) if f is None else f


# -- copies -------------------------------------------------------------------------

def copy_to(dev, e, addr, size):
    for lo, hi in _pieces(e, addr, addr + size):
        if env.settings().info & env.INFO_COPY:
            env.info(env.INFO_COPY, f"device {dev.number}: copy to device {span(lo, hi - lo)}")
        later(dev.plugin.host2dev, dev.local, e.dev_start + (lo - e.host_start), lo, hi - lo,
              keep=e)


def copy_from(dev, e, addr, size):
    for lo, hi in _pieces(e, addr, addr + size):
        if env.settings().info & env.INFO_COPY:
            env.info(env.INFO_COPY, f"device {dev.number}: copy from device {span(lo, hi - lo)}")
        later(dev.plugin.dev2host, dev.local, lo, e.dev_start + (lo - e.host_start), hi - lo,
              keep=e)


def _pieces(e, lo, hi):
    """The parts of [lo, hi) inside ``e``, less its attached pointers (their device
    copies hold device addresses, their host copies host addresses)."""
    lo, hi = max(lo, e.host_start), min(hi, e.host_end)
    if not e.attached:
        return ((lo, hi),) if hi > lo else ()
    return _around_pointers(e, lo, hi)


def _around_pointers(e, lo, hi):
    for off in sorted(e.attached):
        p = e.host_start + off
        if lo < p + PTR and p < hi:
            if p > lo:
                yield lo, p
            lo = p + PTR
    if hi > lo:
        yield lo, hi


# -- PYGOMP_POISON ------------------------------------------------------------------

_SNAN = {2: 0x7D00, 4: 0x7FA00000, 8: 0x7FF4000000000000}   # quiet bit 0, the next one 1


def poison_pattern(obj) -> bytes:
    """What PYGOMP_POISON fills new device memory of ``obj`` with: for a float array
    (numpy's float16/32/64, and the parts of complex64/128) a signalling NaN per element,
    ``7FA00000`` (float32) or ``7FF4000000000000`` (float64); else (ints, or no array
    known, as for C programs) 0xA5 bytes.  ``obj`` may be the array's dtype."""
    dtype = getattr(obj, "dtype", obj)
    kind, size = getattr(dtype, "kind", ""), getattr(dtype, "itemsize", 0)
    if kind == "c":
        kind, size = "f", size // 2
    if kind == "f" and size in _SNAN:
        order = "big" if dtype.byteorder == ">" else "little"
        return _SNAN[size].to_bytes(size, order)
    return b"\xa5"


def poison(dev, d, size, obj):
    """Fill ``size`` bytes at device address ``d`` (a host-to-device copy, in order with
    the construct's other device work)."""
    if size:
        p = poison_pattern(obj)
        fill = ctypes.create_string_buffer((p * (size // len(p) + 1))[:size], size)
        later(dev.plugin.host2dev, dev.local, d, ctypes.addressof(fill), size, keep=fill)
