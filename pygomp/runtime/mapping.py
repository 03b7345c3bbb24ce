"""OpenMP 5.2 and OpenACC map semantics on a device's interval map (libgomp's
gomp_map_vars family): the constructs (`begin`/`end`, `enter_data`, `exit_data`,
`update`, `target`, `start`) and the omp_* routines.

- An entry has one reference count, as in libgomp.  OpenMP: target, target data and
  enter data increment it, at most once per construct; the end of a structured
  construct and exit data's from/release decrement it, delete sets it to zero.  OpenACC
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
- GCC's pointer, struct and attach kinds are attach.py's; the device work of an
  operation goes through deferred.py (OpenACC's async queues).

The map's modules (this one, entries.py, attach.py, accmap.py for OpenACC's exit data,
update and acc_* routines, and calls.py for repeated calls) are the only ones that read
or change a device's map (``dev.map``) and the entries' reference counts; entries are
born and die, and counts change, in entries.py.  Each construct calls the `observer`
when one is set (`observe`), and its body otherwise.
"""
from __future__ import annotations

import ctypes

from . import attach, env, kinds
from .deferred import collecting, later
from .entries import (INFINITY, PTR, WORD, Block, Item, MappingError, birth,  # noqa: F401
                      copy_from, copy_to, death, down, error, not_present, owner, poison,
                      ref, span)

# The constructs a caller may observe (tracing: `trace.start`): `observe` sets one
# function, called as ``observer(name, construct, args)`` in place of each of them,
# which returns ``construct(*args)``.
OBSERVED = ("begin", "end", "enter_data", "exit_data", "update", "target", "start")
observer = None


def observe(fn) -> None:
    """Call ``fn`` around each construct of `OBSERVED` from now on (None: no more)."""
    global observer
    observer = fn


class Region:
    """What one construct did to a device's map, so that it can be undone or ended."""
    __slots__ = ("dev", "items", "entries", "args", "counted", "created", "temps", "dynamic",
                 "attached", "acc", "block")

    def __init__(self, dev, items, dynamic, acc):
        self.dev = dev
        self.items = items
        self.dynamic = dynamic  # OpenACC enter data: dynamic references, one per item
        self.acc = acc          # OpenACC's rules and words
        self.entries = []       # per item: its entry, or None
        self.args = []          # per item: the 64-bit word the kernel gets
        self.counted = []       # entries whose count this construct incremented
        self.created = []       # entries this construct made
        self.temps = []         # device memory for firstprivate copies
        self.attached = []      # (entry, pointer address) this construct attached
        self.block = None       # OpenACC from C: the `Block` of the entries it makes

    def use(self, e, it, t):
        """An item found in entry ``e``: check that it fits, count the entry once."""
        dev, addr, size = self.dev, it.addr, it.size
        outside = addr < e.host_start or addr + size > e.host_end
        if self.dynamic and outside:              # OpenACC enter data, acc_copyin
            raise error(dev, f"[{addr:#x},+{size}] not mapped")
        implicit = t.implicit and addr <= e.host_start and e.host_end <= addr + size
        if (outside and not implicit) or (t.kind & kinds.FLAG_FORCE and not self.dynamic):
            who = f"{it.name}: " if it.name else ""
            why = (f" ({kinds.name(t.kind)} needs an object not present)"
                   if t.kind & kinds.FLAG_FORCE else "")
            words = "Trying to map into device {} object" if self.acc else "trying to map {}"
            raise error(dev, f"{who}{words.format(span(addr, size))} when "
                             f"[{e.host_start:#x}..{e.host_end:#x}) is already mapped{why}")
        self.count(e)
        if env.settings().info & env.INFO_REUSE:
            env.info(env.INFO_REUSE, f"device {dev.number}: {span(addr, size)} present "
                                     f"in {e!r}")
        if t.always and t.to:
            copy_to(dev, e, addr, size)

    def count(self, e):
        """Count ``e`` (its owner) once for this construct (OpenACC enter data: once per
        item)."""
        e = owner(e)
        if self.dynamic or e not in self.counted:   # Entry has no __eq__: identity
            self.counted.append(e)
            ref((e,), 1, self.dynamic)

    def create(self, it, t):
        """A new entry for an absent item, counted for this construct."""
        if t.present:
            raise not_present(self.dev, it.addr, it.size, it.name)
        e = new_entry(self.dev, it, t, self.block)
        self.created.append(e)
        self.count(e)
        return e


def new_entry(dev, it, t, block=None):
    """A new entry for an absent item, with its device memory (its place in ``block``,
    the construct's `Block`, if it has one; a zero-length object gets a zero-length
    entry at a device address of its own, as libgomp makes one), filled as ``to`` (or
    PYGOMP_POISON) says; its count is still 0."""
    addr, size, obj = it.addr, it.size, it.obj
    at = None if block is None else block.offsets.pop((addr, size), None)
    own = 0 if at is not None else dev.plugin.alloc(dev.local, max(size, 1))
    d = own or block.start(dev) + at
    try:
        e = birth(dev, addr, addr + size, d, alloc=own, keepalive=obj)
    except ValueError:
        if own:
            dev.plugin.free(dev.local, own)
        elif not block.shared.users:
            block.drop(dev)
        raise
    if not own:
        e.shared = block.shared
        block.shared.users += 1
    s = env.settings()
    if s.info & env.INFO_MAP:
        env.info(env.INFO_MAP, f"device {dev.number}: mapped {span(addr, size)} "
                               f"({kinds.name(it.kind)}) at {d:#x}")
    try:
        if t.to:
            copy_to(dev, e, addr, size)
        elif s.poison:
            poison(dev, d, size, obj)
    except BaseException:
        death(dev, e)
        raise
    return e


def begin(dev, items, acc=False, dynamic=False) -> Region:
    """Map ``items`` for a construct; returns the region to pass to `end`.  ``acc``:
    OpenACC's rules; ``dynamic`` (with ``acc``): enter data's dynamic references."""
    if observer is not None:
        return observer("begin", _begin, (dev, items, acc, dynamic))
    return _begin(dev, items, acc, dynamic)


def _begin(dev, items, acc, dynamic):
    region = Region(dev, items, acc and dynamic, acc)
    if dev.is_initial:
        region.args = [_initial_word(region, it) for it in items]
        return region
    entries, args = region.entries, region.args
    with dev.lock:
        if acc:
            region.block = _plan(dev, items)
        try:
            i = 0
            while i < len(items):
                it = items[i]
                if it.kind == kinds.FIRSTPRIVATE_INT:     # the common scalar: no map
                    entries.append(None)
                    args.append(it.addr & WORD)
                elif it.kind == kinds.STRUCT:
                    attach.map_struct(region, it, items[i + 1:i + 1 + it.size])
                    i += it.size
                elif it.kind == kinds.ALWAYS_POINTER:
                    attach.always_pointer(region, it, items[i - 1] if i else None)
                elif it.kind in _GROUPS:        # with the items that belong to it
                    i += _GROUPS[it.kind](region, items, i)
                else:
                    _map_item(region, it)
                i += 1
        except BaseException:
            _undo(region)
            raise
    return region


def _plan(dev, items):
    """libgomp's layout of the entries an OpenACC construct of a C program makes (its
    items carry their alignment): one `Block` for the items not present now, each at
    the next multiple of its alignment, in item order (None: no such item)."""
    offsets, size, align, i = {}, 0, PTR, 0
    while i < len(items):
        it = items[i]
        i += it.size + 1 if it.kind == kinds.STRUCT else 1      # members: their own
        if it.align is None or it.kind == kinds.FIRSTPRIVATE_INT:
            continue
        t = kinds.traits(it.kind)
        if (not t.mapping or t.present or t.base in _SPECIAL
                or t.base in (kinds.FIRSTPRIVATE, kinds.FORCE_PRESENT)
                or (it.addr, it.size) in offsets
                or dev.map.find(it.addr, it.addr + it.size) is not None):
            continue
        align = max(align, it.align)
        size = (size + it.align - 1) & -it.align
        offsets[it.addr, it.size] = size
        size += max(it.size, 1)
    return Block(offsets, size, align) if offsets else None


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
            raise error(dev, f"present clause: !acc_is_present ({addr:#x}, {size} "
                             f"({size:#x}))")
        t = kinds.traits(kinds.PRESENT_ALLOC)
    if not t.mapping:
        raise error(dev, f"map kind {kinds.name(kind)} is not valid for {span(addr, size)}")
    e = dev.map.find(addr, addr + size)
    if e is None:
        e = region.create(it, t)
    else:
        region.use(e, it, t)
    region.entries.append(e)
    region.args.append(0 if e is None else e.dev_start + (addr - e.host_start))


# -- ending constructs --------------------------------------------------------------

def _undo(region):
    """Take back what `begin` did so far: counts, new entries, temporaries; no copies.
    At once, even where copies are deferred (the caller drops the deferred work)."""
    with collecting(None):
        _undo_now(region)


def _undo_now(region):
    dev = region.dev
    for e, ptr in reversed(region.attached):
        attach.detach_pointer(dev, e, ptr)
    for e in region.counted:
        if e not in region.created:
            ref((e,), -1, region.dynamic)
    for e in region.created:
        death(dev, e)
    _free_temps(region)


def _free_temps(region):
    if not region.dev.is_initial:
        for d in region.temps:
            later(region.dev.plugin.free, region.dev.local, d)
    region.temps = []


def end(region, copy_back=True) -> None:
    """End a structured construct: decrement once per entry (an entry removed meanwhile
    is left alone), copy back, remove what reached zero."""
    if observer is not None:
        return observer("end", _end, (region, copy_back))
    return _end(region, copy_back)


def _end(region, copy_back):
    dev = region.dev
    if dev.is_initial:
        region.temps = []
        return
    with dev.lock:
        for e, ptr in reversed(region.attached):      # before anything is copied back
            if owner(e).refcount:
                attach.detach_pointer(dev, e, ptr)
        zeroed = []
        down(region.counted, zeroed)
        release(dev, region.items, region.entries, copy_back, zeroed)
        _free_temps(region)


def release(dev, items, entries, copy_back, zeroed):
    """Copy back what `from` asks for (``always``: from any live entry, else from those
    the construct brought to zero), then remove the ``zeroed`` entries."""
    first_error = None
    if copy_back:
        for it, e in zip(items, entries):
            if e is None:
                continue
            t = kinds.traits(it.kind)
            o = owner(e)
            if t.from_ and (any(o is z for z in zeroed) or (t.always and o.refcount)):
                try:
                    copy_from(dev, e, it.addr, it.size)
                except Exception as err:        # keep releasing; report the first failure
                    first_error = first_error or err
    for e in zeroed:
        if env.settings().info & env.INFO_MAP:
            env.info(env.INFO_MAP, f"device {dev.number}: removed {e!r}")
        death(dev, e)
    if first_error is not None:
        raise first_error


def enter_data(dev, items, acc=False) -> None:
    """``target enter data`` (``acc``: OpenACC's ``enter data``, a dynamic reference per
    item): to / alloc (with always, present), and GCC's struct, pointer and attach items."""
    if observer is not None:
        return observer("enter_data", _enter_data, (dev, items, acc))
    return _enter_data(dev, items, acc)


def _enter_data(dev, items, acc):
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
    if observer is not None:
        return observer("exit_data", _exit_data, (dev, items))
    return _exit_data(dev, items)


def _exit_data(dev, items):
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
                    attach.detach_pointer(dev, e, it.addr, finalize=k == kinds.FORCE_DETACH)
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
                raise not_present(dev, it.addr, it.size, it.name)
            entries.append(e)
        deleted = {id(owner(e)) for it, e in zip(items, entries) if e is not None and
                   kinds.base(it.kind) in (kinds.DELETE, kinds.DELETE_ZERO_LEN_ARRAY_SECTION)}
        zeroed = []
        for e in dict.fromkeys(owner(e) for e in entries if e is not None):   # once each
            down((e,), zeroed, to_zero=id(e) in deleted)
        release(dev, items, entries, True, zeroed)


def update(dev, items) -> None:
    """``target update to(...) from(...)``: copy what is present; present asks for it
    (OpenACC's update: `accmap.update`)."""
    if observer is not None:
        return observer("update", _update, (dev, items))
    return _update(dev, items)


def _update(dev, items):
    if dev.is_initial:
        return
    with dev.lock:
        for it in items:
            e = dev.map.find(it.addr, it.addr + it.size)
            if e is None:
                if kinds.is_present(it.kind):
                    raise not_present(dev, it.addr, it.size, it.name)
                continue
            if not (e.host_start <= it.addr and it.addr + it.size <= e.host_end):
                raise error(dev, f"trying to update {span(it.addr, it.size)} when only "
                                 f"[{e.host_start:#x}..{e.host_end:#x}) is mapped")
            if kinds.copies_to(it.kind):    # not a descriptor's TO_PSET: libgomp's rule
                copy_to(dev, e, it.addr, it.size)
            if kinds.copies_from(it.kind):
                copy_from(dev, e, it.addr, it.size)


def _if_present(region, items, i) -> int:
    """IF_PRESENT (OpenACC's no_create): present data is used as with alloc; absent
    data is not mapped, and the region gets its host address, as it does for the
    POINTER item that may follow (not mapped either, as libgomp skips it).  Returns
    the number of items after ``items[i]`` it took."""
    it = items[i]
    if region.dev.map.find(it.addr, it.addr + it.size) is not None:
        _map_item(region, it._replace(kind=kinds.ALLOC))
        return 0
    region.entries.append(None)
    region.args.append(it.addr)
    if i + 1 < len(items) and items[i + 1].kind == kinds.POINTER:
        region.entries.append(None)
        region.args.append(items[i + 1].addr)
        return 1
    return 0


def _deviceptr(region, it):
    """FORCE_DEVICEPTR (OpenACC's deviceptr): the pointer variable at ``it.addr`` holds
    a device address already; the region gets a private copy of it."""
    _map_item(region, it._replace(kind=kinds.FIRSTPRIVATE, size=PTR))


_SPECIAL = {**attach.HANDLERS,       # handled one item at a time
            kinds.FORCE_DEVICEPTR: _deviceptr}
# kinds (implicit or not) handled with the items after them: handler(region, items, i)
# -> how many it took
_GROUPS = {k | implicit: handler
           for k, handler in {kinds.TO_PSET: attach.map_descriptor,
                              kinds.IF_PRESENT: _if_present}.items()
           for implicit in (0, kinds.IMPLICIT)}
_ENTER_SPECIAL = {kinds.FORCE_PRESENT, kinds.STRUCT, kinds.TO_PSET, kinds.ALWAYS_POINTER,
                  kinds.POINTER, kinds.POINTER_TO_ZERO_LENGTH_ARRAY_SECTION, kinds.ATTACH,
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
        raise error(dev, f"function at host address {fn:#x} is not loaded: no registered "
                         f"offload image of kind {dev.target!r} lists it")
    return address


def target(dev, fn: int, items, launch=(0, 0, 0), acc=False) -> None:
    """GOMP_target_ext (``acc``: GOACC_parallel_keyed): map, run ``fn`` with the
    translated words, unmap."""
    if observer is not None:
        return observer("target", _target, (dev, fn, items, launch, acc))
    return _target(dev, fn, items, launch, acc)


def _target(dev, fn, items, launch, acc):
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
    if observer is not None:
        return observer("start", _start, (dev, fn, items, launch, wait_for))
    return _start(dev, fn, items, launch, wait_for)


def _start(dev, fn, items, launch, wait_for):
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
        birth(dev, host, host + size, device, refcount=INFINITY, associated=True)
    return True


def disassociate(dev, host: int) -> bool:
    """omp_target_disassociate_ptr: remove an association that starts at ``host``."""
    with dev.lock:
        e = dev.map.find(host, host)
        if e is None or not e.associated or e.host_start != host:
            return False
        death(dev, e)
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
            entries.append(birth(dev, start, stop, d, refcount=INFINITY))
    except ValueError:
        remove_entries(dev, entries)
        raise
    return entries


def remove_entries(dev, entries) -> None:
    for e in entries:
        death(dev, e)


def release_all(dev) -> None:
    """At the device's end: remove what is still mapped (reported under PYGOMP_INFO),
    free the result slots."""
    while dev.spare_results:
        dev.plugin.free(dev.local, dev.spare_results.pop())
    left = [e for e in dev.map if e.refcount != INFINITY]   # not the images' entries
    if left:
        rows = "\n".join(f"  {e!r}" for e in left)
        env.info(env.INFO_TABLE, f"device {dev.number} still has {len(left)} "
                                 f"mapping(s) at exit:\n{rows}")
    remove_entries(dev, dict.fromkeys(owner(e) for e in left))
