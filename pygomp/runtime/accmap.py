"""OpenACC's side of the map: its exit data and update, and the acc_* data routines
(acc_is_present, acc_deviceptr, acc_map_data, acc_attach, ...) on a device with memory
of its own.  One of the map's modules (see mapping.py): entries are born, die and are
counted through entries.py."""
from __future__ import annotations

from . import kinds
from .attach import attach_pointer, detach_pointer, write_pointer
from .deferred import later
from .entries import INFINITY, PTR, birth, block, copy_from, death, error, owner, ref, span
from .mapping import release


def exit_data(dev, items) -> None:
    """OpenACC's exit data, acc_copyout and acc_delete (`_exit_data`)."""
    if dev.is_initial:
        return
    with dev.lock:
        _exit_data(dev, items)


def update(dev, items) -> None:
    """OpenACC's update, acc_update_device and acc_update_self (`_update`)."""
    if dev.is_initial:
        return
    with dev.lock:
        _update(dev, items)


def _exit_data(dev, items) -> None:
    """OpenACC's exit data (and acc_copyout, acc_delete): detach first, then each item
    in turn takes one dynamic reference away (FORCE_FROM and DELETE, the finalize forms:
    all of them); an entry whose count reaches zero copies back what the construct's
    FROM and FORCE_FROM items name in it, and goes.  Absent data is no error.  The items
    are checked first."""
    for it in items:
        k = kinds.base(it.kind)
        if k in _DETACH:
            if dev.map.lookup(it.addr, it.addr + PTR) is None:
                raise error(dev, "struct not mapped for detach operation")
        elif k in _EXIT:
            _exit_entry(dev, it)
        elif k != kinds.STRUCT:
            raise error(dev, f">>>> goacc_exit_data_internal UNHANDLED kind {k:#04x}")
    for it in items:
        k = kinds.base(it.kind)
        if k in _DETACH:
            detach_pointer(dev, dev.map.lookup(it.addr, it.addr + PTR), it.addr,
                           finalize=k == kinds.FORCE_DETACH)
    copies = {}       # owner -> the construct's copyouts in it (a struct's members)
    for it in items:
        k = kinds.base(it.kind)
        e = _exit_entry(dev, it) if k in _EXIT else None
        if e is None or owner(e).refcount == INFINITY:
            continue
        o = owner(e)
        if k in (kinds.FROM, kinds.FORCE_FROM):
            copies.setdefault(o, []).append((e, it))
        ref((o,), -o.dynamic_refcount if k in _FINALIZE else -(o.dynamic_refcount > 0),
            dynamic=True)
        if o.refcount == 0:
            for m, c in copies.pop(o, ()):
                copy_from(dev, m, c.addr, c.size)
            release(dev, (), (), False, [o])


_EXIT = {kinds.FROM, kinds.FORCE_FROM, kinds.DELETE, kinds.RELEASE, kinds.TO_PSET,
         kinds.POINTER}
_FINALIZE = {kinds.FORCE_FROM, kinds.DELETE}
_DETACH = {kinds.DETACH, kinds.FORCE_DETACH}


def _exit_entry(dev, it):
    """The entry an OpenACC exit item names, checked; None if absent."""
    size = PTR if kinds.base(it.kind) == kinds.POINTER else it.size
    e = dev.map.lookup(it.addr, it.addr + size)
    if e is None:
        return None
    if it.addr < e.host_start or it.addr + size > e.host_end:
        raise error(dev, f"[{it.addr:#x},+{size}] outside mapped block "
                         f"[{e.host_start:#x},+{e.host_end - e.host_start}]")
    o = owner(e)
    if o.refcount != INFINITY and o.refcount < o.dynamic_refcount:
        raise error(dev, "Dynamic reference counting assert fail")
    return e


def _update(dev, items) -> None:
    """OpenACC's update: ``device``/``self`` (FORCE_TO/FORCE_FROM) need the data
    present; with ``if_present`` (TO/FROM) absent data is skipped.  Unlike OpenMP's,
    it copies attached pointers too (libgomp's acc_update_device/self)."""
    previous = None                     # the entry an update device just copied into
    for it in items:
        k = kinds.base(it.kind)
        if k in (kinds.POINTER, kinds.TO_PSET):
            continue
        if k == kinds.ALWAYS_POINTER:   # the pointer gets the previous item's device address
            e = dev.map.lookup(it.addr, it.addr + PTR)
            if previous is not None and e is not None:
                write_pointer(dev, e.dev_start + (it.addr - e.host_start), previous)
            previous = None
            continue
        if k not in (kinds.TO, kinds.FORCE_TO, kinds.FROM, kinds.FORCE_FROM):
            raise error(dev, f">>>> GOACC_update UNHANDLED kind {k:#04x}")
        e = dev.map.lookup(it.addr, it.addr + it.size)
        inside = e is not None and e.host_start <= it.addr and it.addr + it.size <= e.host_end
        previous = None
        if not inside and k in (kinds.TO, kinds.FROM):
            continue
        if e is None:
            raise error(dev, f"[{it.addr:#x},{it.size}] is not mapped")
        if not inside:
            raise error(dev, f"trying to update {span(it.addr, it.size)} when only "
                             f"[{e.host_start:#x}..{e.host_end:#x}) is mapped")
        d = e.dev_start + (it.addr - e.host_start)      # all bytes, attached pointers too
        if k & kinds.FLAG_TO:
            later(dev.plugin.host2dev, dev.local, d, it.addr, it.size, keep=e)
            previous = d
        else:
            later(dev.plugin.dev2host, dev.local, it.addr, d, it.size, keep=e)


def is_present(dev, addr: int, size: int) -> bool:
    """acc_is_present: the whole of ``[addr, addr+size)`` lies in one entry."""
    with dev.lock:
        e = dev.map.lookup(addr, addr + size)
        return e is not None and e.host_start <= addr and addr + size <= e.host_end


def device_address(dev, addr: int) -> int:
    """acc_deviceptr: the device address of the mapped byte at ``addr``, else 0."""
    with dev.lock:
        e = dev.map.lookup(addr, addr + 1)
        return 0 if e is None else e.dev_start + (addr - e.host_start)


def _at_device_address(dev, d, size=1):
    """The entry whose device memory overlaps ``[d, d+size)`` (a walk of the map)."""
    for e in dev.map:
        if e.dev_start < d + size and d < e.dev_start + max(e.host_end - e.host_start, 1):
            return e
    return None


def host_address(dev, d: int) -> int:
    """acc_hostptr: the host address mapped to device address ``d``, else 0."""
    with dev.lock:
        e = _at_device_address(dev, d)
        return 0 if e is None else e.host_start + (d - e.dev_start)


def check_free(dev, d: int) -> None:
    """acc_free refuses device memory that a mapping still uses."""
    with dev.lock:
        e = _at_device_address(dev, d)
        if e is not None:
            raise error(dev, f"refusing to free device memory space at {d:#x} that is "
                             f"still mapped at [{e.host_start + (d - e.dev_start):#x},"
                             f"+{e.host_end - e.host_start}]")


def device_memory(dev):
    """What host code standing in for a region on ``dev`` can reach of the device's
    memory through the map: the device ranges ``(start, end)`` of the mapped entries
    (acc_map_data's and associated ones too, not images'; a struct's members as one range
    from the first to the last, holes included), and the device addresses of the
    pointers attached or set (by pointer and descriptor items) in them."""
    spans, slots = {}, []
    with dev.lock:
        for e in dev.map:
            if (e.refcount == INFINITY and not e.associated) or e.host_end == e.host_start:
                continue
            lo, hi = e.dev_start, e.dev_start + (e.host_end - e.host_start)
            key = id(block(e))
            old = spans.get(key, (lo, hi))
            spans[key] = (min(lo, old[0]), max(hi, old[1]))
            slots += [e.dev_start + off for off in (*(e.attached or ()), *e.pointers)]
    return list(spans.values()), slots


def map_data(dev, h: int, d: int, size: int) -> None:
    """acc_map_data: ``[h, h+size)`` maps to the caller's device memory at ``d``, with an
    infinite count, until acc_unmap_data."""
    if not (h and d and size):
        raise error(dev, f"[{h:#x},+{size}]->[{d:#x},+{size}] is a bad map")
    with dev.lock:
        if dev.map.lookup(h, h + size) is not None:
            raise error(dev, f"host address [{h:#x}, +{size}] is already mapped")
        if _at_device_address(dev, d, size) is not None:
            raise error(dev, f"device address [{d:#x}, +{size}] is already mapped")
        birth(dev, h, h + size, d, refcount=INFINITY, associated=True)


def unmap_data(dev, h: int) -> None:
    """acc_unmap_data: remove a mapping that acc_map_data made at ``h``."""
    with dev.lock:
        e = dev.map.lookup(h, h + 1)
        if e is None:
            raise error(dev, f"{h:#x} is not a mapped block")
        size = e.host_end - e.host_start
        if e.host_start != h:
            raise error(dev, f"[{e.host_start:#x},{size}] surrounds {h:#x}")
        if e.refcount != INFINITY:
            raise error(dev, f"refusing to unmap block [{h:#x},+{size}] that has not "
                             f"been mapped by 'acc_map_data'")
        if not e.associated:
            raise error(dev, "cannot unmap target block")
        death(dev, e)


def attach(dev, ptr: int) -> None:
    """acc_attach: attach the pointer at ``ptr`` (inside a mapped entry)."""
    with dev.lock:
        e = dev.map.lookup(ptr, ptr + PTR)
        if e is None:
            raise error(dev, "struct not mapped for acc_attach")
        attach_pointer(dev, e, ptr)


def detach(dev, ptr: int, finalize=False) -> None:
    """acc_detach(_finalize): one attach count less (finalize: none left)."""
    with dev.lock:
        e = dev.map.lookup(ptr, ptr + PTR)
        if e is None:
            raise error(dev, "struct not mapped for acc_detach")
        detach_pointer(dev, e, ptr, finalize)
