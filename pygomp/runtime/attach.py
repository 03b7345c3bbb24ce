"""The kinds GCC emits for pointers, struct members and use_device_ptr/addr, and the
attach counts of pointers in mapped memory.

- The members of a mapped struct (GCC's GOMP_MAP_STRUCT) are entries of their own in
  one device allocation; they share the first member's reference count, and are
  removed together (OpenACC: each keeps counts of its own, the allocation goes with
  the last of them).
- Pointers attached in mapped memory (ATTACH) are never copied either way while
  attached (entries.py's copies leave them out).

A handler takes a `mapping.Region` and one item, and adds the item's entry (or None) and
word to the region; it maps what it needs through the region (`Region.use`,
`Region.create`, `Region.count`), so that `mapping.begin` undoes it with the rest."""
from __future__ import annotations

import ctypes

from . import env, kinds
from .deferred import later
from .entries import (PTR, WORD, Item, Shared, birth, block, copy_to, death, error,
                      poison, span)

STRUCT_ALIGN = 64   # a struct's members sit at their host addresses modulo this


def read_pointer(addr):
    return ctypes.c_uint64.from_address(addr).value


def write_pointer(dev, dev_addr, value):
    later(_put_word, dev, dev_addr, value)


def set_pointer(dev, e, ptr, value):
    """Write ``value`` into the device copy of the pointer at host address ``ptr`` in
    entry ``e``, and note the pointer there (host views translate it: `hostview`)."""
    off = ptr - e.host_start
    if off not in e.pointers:
        e.pointers += (off,)
    write_pointer(dev, e.dev_start + off, value)


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


def attach_pointer(dev, e, ptr, bias=0, zero_length=False):
    """One attach count more for the pointer at ``ptr`` in entry ``e``; the first one
    points its device copy to the device copy of its target (looked up at target +
    bias; none: an error, or NULL for a zero-length section)."""
    off = ptr - e.host_start
    if not (e.attached or {}).get(off):
        target = read_pointer(ptr)
        if target == 0:
            raise error(dev, f"attempt to attach null pointer (at {ptr:#x})")
        value = _device_address(dev, target, bias)
        if value is None:
            if not zero_length:
                raise error(dev, f"pointer target not mapped for attach (the pointer at "
                                 f"{ptr:#x} holds {target:#x})")
            value = 0
        if e.dev_start == e.host_start:     # the program's own variable: keep its value
            e.saved = {**(e.saved or {}), off: target}
        _debug("gomp_attach_pointer", e, ptr, value=value)
        write_pointer(dev, e.dev_start + off, value)
    else:
        _debug("gomp_attach_pointer", e, ptr, count=e.attached[off] + 1)
    if e.attached is None:
        e.attached = {}
    e.attached[off] = e.attached.get(off, 0) + 1


def _debug(where, e, ptr, value=None, count=None):
    """libgomp's GOMP_DEBUG line of an attach or detach: the device pointer written
    (``value``), or only the pointer's attach count changed (``count``)."""
    if not env.settings().gomp_debug:
        return
    p = env.pointer
    if count is not None:
        env.debug(f"{where}: attach count for {p(ptr)} -> {count}\n")
    else:
        verb = "attaching" if where == "gomp_attach_pointer" else "detaching"
        env.debug(f"{where}: {verb} host {p(ptr)}, target {p(e.dev_start + ptr - e.host_start)}"
                  f" (struct base {p(e.dev_start)}) to {p(value)}\n")


def detach_pointer(dev, e, ptr, finalize=False):
    """One attach count less; at zero the device copy gets the host pointer again (the
    value the attach replaced, where the device copy is the host's own)."""
    off = ptr - e.host_start
    if e.attached is None:
        raise error(dev, f"no attachment counters for struct (pointer at {ptr:#x})")
    n = max(e.attached.get(off, 0), 1) if finalize else e.attached.get(off, 0)
    if n == 0:
        raise error(dev, "attach count underflow")
    if finalize or n == 1:
        e.attached.pop(off, None)
        saved = (e.saved or {}).pop(off, None)
        value = read_pointer(ptr) if saved is None else saved
        _debug("gomp_detach_pointer", e, ptr, value=value)
        write_pointer(dev, e.dev_start + off, value)
    else:
        e.attached[off] = n - 1
        _debug("gomp_detach_pointer", e, ptr, count=n - 1)


# -- the handlers -------------------------------------------------------------------

def _zero_length(region, it):
    """ZERO_LEN_ARRAY_SECTION: the entry holding the address is used; none: NULL."""
    e = region.dev.map.lookup(it.addr, it.addr + 1)
    if e is not None:
        region.count(e)
    region.entries.append(e)
    region.args.append(0 if e is None else e.dev_start + (it.addr - e.host_start))


def _use_device_ptr(region, it):
    """USE_DEVICE_PTR(_IF_PRESENT): the device address of mapped host memory (the
    caller writes it back into the construct's arguments); nothing is counted."""
    word = _device_address(region.dev, it.addr)
    if word is None:
        if kinds.base(it.kind) == kinds.USE_DEVICE_PTR:
            raise error(region.dev, f"use_device_ptr pointer wasn't mapped (host address "
                                    f"{it.addr:#x})")
        word = it.addr                      # IF_PRESENT: the host address, unchanged
    region.entries.append(None)
    region.args.append(word)


def map_struct(region, it, members):
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
            raise error(dev, f"map kind {kinds.name(m.kind)} is not valid for a structure "
                             f"element {span(m.addr, m.size)}")
    lo, hi = members[0].addr, members[-1].addr + members[-1].size
    first = dev.map.lookup(it.addr, hi)      # looked up from the base, as libgomp does
    if first is None and present:
        m = present[0]
        raise error(dev, f"present clause: !acc_is_present ({m.addr:#x}, {m.size} "
                         f"({m.size:#x}))")
    if first is None:
        group = _new_struct(region, members, lo, hi)
    else:
        group = []
        for m in members:
            e = dev.map.find(m.addr, m.addr + m.size)
            if e is None or block(e) is not block(first):
                raise error(dev, f"Trying to map into device {span(m.addr, m.size)} "
                                 f"structure element when other mapped elements from the "
                                 f"same structure weren't mapped together with it")
            region.use(e, m, kinds.traits(m.kind))
            group.append(e)
    e = group[0]
    region.entries.append(None)
    region.args.append(e.dev_start + (it.addr - e.host_start))
    for m, e in zip(members, group):
        region.entries.append(e)
        region.args.append(e.dev_start + (m.addr - e.host_start))


def _new_struct(region, members, lo, hi):
    """The members' entries in one new allocation, where each keeps its host address's
    alignment (the range may start at an int before a long long)."""
    dev = region.dev
    memory = dev.plugin.alloc(dev.local, hi - lo + 2 * STRUCT_ALIGN)
    start = ((memory + STRUCT_ALIGN - 1) & -STRUCT_ALIGN) + lo % STRUCT_ALIGN
    group = []
    try:
        for m in members:
            group.append(birth(dev, m.addr, m.addr + m.size, start + (m.addr - lo),
                               keepalive=m.obj))
    except ValueError:
        for done in group:
            death(dev, done)
        dev.plugin.free(dev.local, memory)
        raise
    if region.acc:
        shared = Shared(memory, len(group))
        for e in group:
            e.shared = shared
            region.created.append(e)
            region.count(e)
    else:
        for e in group:
            e.group = group
        group[0].alloc = memory
        region.created.append(group[0])
        region.count(group[0])
    if env.settings().poison:
        poison(dev, start, hi - lo, None)       # the members mapped ``to`` are copied next
    if env.settings().info & env.INFO_MAP:
        env.info(env.INFO_MAP, f"device {dev.number}: mapped structure elements "
                               f"{span(lo, hi - lo)} at {start:#x}")
    for m, e in zip(members, group):
        if kinds.traits(m.kind).to:
            copy_to(dev, e, m.addr, m.size)
    return group


def _pointer_value(dev, it):
    """The device address that the device copy of the pointer at ``it.addr`` gets: that
    of its target (looked up at target + bias, the item's size), NULL for NULL."""
    target = read_pointer(it.addr)
    value = 0 if target == 0 else _device_address(dev, target, it.size)
    if value is None:
        if kinds.base(it.kind) != kinds.POINTER_TO_ZERO_LENGTH_ARRAY_SECTION:
            raise error(dev, f"Pointer target of array section wasn't mapped (the "
                             f"pointer at {it.addr:#x} holds {target:#x})")
        value = 0
    return value


def _pointer(region, it):
    """POINTER: the pointer variable at ``it.addr`` is mapped too; a new device copy
    holds the device address of its target."""
    dev = region.dev
    item = Item(it.addr, PTR, kinds.ALLOC, it.obj)
    e = dev.map.find(it.addr, it.addr + PTR)
    if e is None:
        value = _pointer_value(dev, it)
        e = region.create(item, kinds.traits(kinds.ALLOC))
        set_pointer(dev, e, it.addr, value)
    else:
        region.use(e, item, kinds.traits(kinds.ALLOC))
    region.entries.append(e)
    region.args.append(e.dev_start + (it.addr - e.host_start))


_DATA_POINTERS = {kinds.POINTER, kinds.POINTER_TO_ZERO_LENGTH_ARRAY_SECTION,
                  kinds.ALWAYS_POINTER}


def _data_pointers(items, i):
    """The items after the descriptor ``items[i]`` (TO_PSET) that are its data pointers:
    pointer kinds at addresses inside it."""
    d, n = items[i], 0
    for p in items[i + 1:]:
        if (kinds.base(p.kind) not in _DATA_POINTERS or p.addr < d.addr
                or p.addr + PTR > d.addr + d.size):
            break
        n += 1
    return items[i + 1:i + 1 + n]


def map_descriptor(region, items, i) -> int:
    """TO_PSET: the Fortran array descriptor (gfortran's) ``items[i]``, mapped as ``to``,
    with the items of its data pointers after it (`_data_pointers`; returns their
    number): each uses the descriptor's entry, and a new device copy's pointers get the
    device addresses of their targets.  A descriptor found mapped keeps its device copy,
    except as libgomp does: it is copied again, and its leading pointers set, where they
    are ALWAYS_POINTERs or (an array mapped while unallocated) where it was mapped with
    a null data pointer and they are non-null now.  A non-null pointer whose target is
    not mapped is an error."""
    it, pointers = items[i], _data_pointers(items, i)
    dev = region.dev
    e = dev.map.find(it.addr, it.addr + it.size)
    if e is None:
        e = region.create(it, kinds.traits(kinds.TO))
        e.null_data = any(read_pointer(p.addr) == 0 for p in pointers)
        again = pointers
    else:
        region.use(e, it, kinds.traits(kinds.ALLOC))
        again = []
        for p in pointers if e.dev_start != e.host_start else ():
            if kinds.base(p.kind) != kinds.ALWAYS_POINTER and not (
                    e.null_data and read_pointer(p.addr)):
                break
            again.append(p)
        if again:
            copy_to(dev, e, it.addr, it.size)
    region.entries.append(e)
    region.args.append(e.dev_start + (it.addr - e.host_start))
    for n, p in enumerate(pointers):
        region.count(e)                 # OpenACC: one reference per pointer, as libgomp
        if n < len(again):
            set_pointer(dev, e, p.addr, _pointer_value(dev, p))
        region.entries.append(e)
        region.args.append(e.dev_start + (p.addr - e.host_start))
    return len(pointers)


def always_pointer(region, it, previous):
    """ALWAYS_POINTER: the mapped pointer at ``it.addr`` gets the device address of
    the previous item (less the bias), every time; nothing is counted."""
    dev = region.dev
    e = dev.map.lookup(it.addr, it.addr + PTR)
    if e is None or it.addr < e.host_start or it.addr + PTR > e.host_end:
        raise error(dev, f"always pointer not mapped ({span(it.addr, PTR)})")
    if previous is None:
        value = 0
    elif previous.kind == kinds.ALWAYS_POINTER:      # a chain: the previous pointer's slot
        value = _device_address(dev, previous.addr) or 0
    else:
        value = region.args[-1]
    if value:
        value = (value - it.size) & WORD
    set_pointer(dev, e, it.addr, value)
    region.entries.append(None)
    region.args.append(0)


def _attach(region, it):
    """ATTACH: the device copy of the pointer at ``it.addr`` (inside a mapped entry;
    none: nothing to do, an error for OpenACC) points to the device copy of its
    target; one attach count per pointer, undone by `end` or a DETACH."""
    dev = region.dev
    e = dev.map.lookup(it.addr, it.addr + PTR)
    region.entries.append(None)
    if e is None:
        if region.acc:
            raise error(dev, "outer struct not mapped for attach")
        env.info(env.INFO_MAP, f"device {dev.number}: attach of the pointer at "
                               f"{it.addr:#x} skipped: no mapped range holds it (as "
                               f"libgomp does; the region sees no device copy of it)")
        region.args.append(0)
        return
    attach_pointer(dev, e, it.addr, it.size,
                   kinds.base(it.kind) == kinds.ATTACH_ZERO_LENGTH_ARRAY_SECTION)
    region.attached.append((e, it.addr))
    region.args.append(e.dev_start + (it.addr - e.host_start))


HANDLERS = {                # base kind -> its handler, one item at a time
    kinds.ZERO_LEN_ARRAY_SECTION: _zero_length,
    kinds.USE_DEVICE_PTR: _use_device_ptr,
    kinds.USE_DEVICE_PTR_IF_PRESENT: _use_device_ptr,
    kinds.POINTER: _pointer,
    kinds.POINTER_TO_ZERO_LENGTH_ARRAY_SECTION: _pointer,
    kinds.ATTACH: _attach,
    kinds.ATTACH_ZERO_LENGTH_ARRAY_SECTION: _attach,
}
