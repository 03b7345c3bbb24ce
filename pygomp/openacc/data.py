"""OpenACC's data routines on addresses (the C face's acc_copyin, acc_malloc,
acc_memcpy_to_device, ...), on the current device; the host answers with its own
addresses."""
from __future__ import annotations

import ctypes
import threading

from ..runtime import accmap, accprof, deferred, kinds, mapping
from ..runtime.accprof import ev_free
from ..runtime.mapping import Item, MappingError
from .device_types import async_sync
from .devices import current
from .profiling import prof_record
from .queues import run

_lock = threading.Lock()


def enter(h, size, kind, obj=None, q=async_sync, align=None) -> int:
    """acc_copyin / acc_create: the device address (the host's on the host).  ``align``:
    the C face's, for libgomp's layout (`mapping.Item`)."""
    if not h or not size:
        raise MappingError(f"[{h:#x},+{size}] is a bad range")
    dev = current()
    if dev.is_initial:
        return h
    run(q, lambda: mapping.enter_data(dev, [Item(h, size, kind, obj, None, align)],
                                       acc=True), dev)
    return accmap.device_address(dev, h)


def leave(h, size, kind, q=async_sync) -> None:
    """acc_copyout / acc_delete and their finalize forms (FORCE_FROM, DELETE)."""
    dev = current()
    if not dev.is_initial:
        run(q, lambda: accmap.exit_data(dev, [Item(h, size, kind)]), dev)


def update(h, size, to_device, q=async_sync) -> None:
    """acc_update_device / acc_update_self: the data must be present."""
    dev = current()
    if h and not dev.is_initial:
        kind = kinds.FORCE_TO if to_device else kinds.FORCE_FROM
        run(q, lambda: accmap.update(dev, [Item(h, size, kind)]), dev)


def present(h, size) -> bool:
    if not h or not size:
        return False
    dev = current()
    return dev.is_initial or accmap.is_present(dev, h, size)


def device_address(h) -> int:
    dev = current()
    return h if dev.is_initial else accmap.device_address(dev, h)


def host_address(d) -> int:
    dev = current()
    return d if dev.is_initial else accmap.host_address(dev, d)


_allocated = {}          # (device, address) -> size: what acc_malloc gave


def malloc(size) -> int:
    if not size:
        return 0
    dev = current()
    rec = accprof.mask and prof_record(accprof.construct_runtime_api, dev)
    try:
        d = dev.plugin.alloc(dev.local, size)
    finally:
        if rec:
            accprof.finish(rec)
    with _lock:
        _allocated[dev, d] = size
    return d


def allocations(dev) -> list:
    """``(address, size)`` of what acc_malloc gave on ``dev`` and is not freed."""
    with _lock:
        return [(a, n) for (x, a), n in _allocated.items() if x is dev]


def free(d) -> None:
    """acc_free: memory acc_malloc gave, that no mapping uses."""
    if not d:
        return
    dev = current()
    if not dev.is_initial:
        accmap.check_free(dev, d)
    with _lock:
        size = _allocated.pop((dev, d), None)
    if size is None:
        raise MappingError("error in freeing device memory in acc_free")
    rec = accprof.mask and prof_record(accprof.construct_runtime_api, dev)
    if rec:
        accprof.fire(rec, ev_free, var_name=None, bytes=size, host_ptr=None, device_ptr=d)
        accprof.finish(rec)
    dev.plugin.free(dev.local, d)


def map_data(h, d, size) -> None:
    dev = current()
    if dev.is_initial:
        if d != h:
            raise MappingError("cannot map data on shared-memory system")
        return
    accmap.map_data(dev, h, d, size)


def unmap_data(h) -> None:
    dev = current()
    if not dev.is_initial:
        accmap.unmap_data(dev, h)


def memcpy(dst, src, size, to_device, q=async_sync) -> None:
    """acc_memcpy_to_device (``to_device``) / acc_memcpy_from_device; on a device,
    NULL, equal addresses and copies past the end of acc_malloc's block are errors."""
    dev = current()
    if dev.is_initial:
        return run(q, lambda: deferred.later(ctypes.memmove, dst, src, size), dev)
    d, h = (dst, src) if to_device else (src, dst)
    if d == h or not d or not h:
        raise MappingError("invalid host or device address" if d == h else
                    "invalid device address" if not d else "invalid host address")
    with _lock:
        block = next(((a, n) for (x, a), n in _allocated.items()
                      if x is dev and a <= d < a + n), None)
    if block is not None and d + size > block[0] + block[1]:
        raise MappingError(f"invalid size: {size} bytes at {d:#x}, in the {block[1]} bytes that "
                    f"acc_malloc gave at {block[0]:#x}")
    copy = dev.plugin.host2dev if to_device else dev.plugin.dev2host
    run(q, lambda: deferred.later(copy, dev.local, dst, src, size), dev)


def attach(ptr, q=async_sync) -> None:
    dev = current()
    if not dev.is_initial:
        run(q, lambda: accmap.attach(dev, ptr), dev)


def detach(ptr, finalize=False, q=async_sync) -> None:
    dev = current()
    if not dev.is_initial:
        run(q, lambda: accmap.detach(dev, ptr, finalize), dev)
