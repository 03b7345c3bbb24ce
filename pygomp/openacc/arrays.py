"""The Python face: OpenACC's data routines on numpy arrays, and the data region
(``with openacc.data(copy=[...]):``)."""
from __future__ import annotations

from contextlib import contextmanager

from ..constructs import array_item, one_clause
from ..runtime import accprof, kinds, mapping
from ..runtime.accprof import ev_enter_data_start, ev_exit_data_start
from .data import device_address, enter, leave, present, update
from .device_types import async_sync
from .devices import current
from .profiling import profiled
from .queues import run


def _array(a, kind):
    it = array_item(a, kind)
    return it.addr, it.size, it.obj


def copyin(a, async_=async_sync) -> int:
    """acc_copyin: present, one dynamic reference more; else mapped and copied in.
    Returns the device address."""
    h, size, obj = _array(a, kinds.TO)
    return enter(h, size, kinds.TO, obj, async_)


def create(a, async_=async_sync) -> int:
    """acc_create: as `copyin`, without the copy."""
    h, size, obj = _array(a, kinds.ALLOC)
    return enter(h, size, kinds.ALLOC, obj, async_)


def copyout(a, finalize=False, async_=async_sync) -> None:
    """acc_copyout(_finalize): one dynamic reference less (all of them); at zero the
    data is copied back and unmapped."""
    h, size, _ = _array(a, kinds.FROM)
    leave(h, size, kinds.FORCE_FROM if finalize else kinds.FROM, async_)


def delete(a, finalize=False, async_=async_sync) -> None:
    """acc_delete(_finalize): as `copyout`, without the copy."""
    h, size, _ = _array(a, kinds.RELEASE)
    leave(h, size, kinds.DELETE if finalize else kinds.RELEASE, async_)


def update_device(a, async_=async_sync) -> None:
    h, size, _ = _array(a, kinds.TO)
    update(h, size, True, async_)


def update_self(a, async_=async_sync) -> None:
    h, size, _ = _array(a, kinds.FROM)
    update(h, size, False, async_)


def is_present(a) -> bool:
    h, size, _ = _array(a, kinds.ALLOC)
    return present(h, size)


def deviceptr(a) -> int:
    """The device address of ``a``'s first element (0 if it is not mapped)."""
    return device_address(_array(a, kinds.ALLOC)[0])


_CLAUSES = {"copy": kinds.TOFROM, "copyin": kinds.TO, "copyout": kinds.FROM,
            "create": kinds.ALLOC, "present": kinds.FORCE_PRESENT,
            "no_create": kinds.IF_PRESENT}


@contextmanager
def data(**clauses):
    """``with acc.data(copy=[...], copyin=[...], copyout=[...], create=[...],
    present=[...], no_create=[...]):`` an OpenACC data region on the current device:
    structured references for the block, copies back at its end.  An array in two
    clauses is a ValueError."""
    unknown = set(clauses) - set(_CLAUSES)
    if unknown:
        raise TypeError(f"acc.data: unknown clause(s) {sorted(unknown)}; the clauses are "
                        f"{', '.join(_CLAUSES)}")
    named = []
    for name, arrays in clauses.items():
        for a in (arrays,) if not isinstance(arrays, (list, tuple)) else arrays:
            named.append((name, array_item(a, _CLAUSES[name])))
    items = one_clause("acc.data", named)
    dev = current()
    if accprof.mask:
        region = profiled(accprof.construct_data, dev, async_sync, ev_enter_data_start, run,
                          async_sync, lambda: mapping.begin(dev, items, acc=True), dev)
    else:
        region = mapping.begin(dev, items, acc=True)
    try:
        yield dev
    finally:
        if accprof.mask:
            profiled(accprof.construct_data, dev, async_sync, ev_exit_data_start, run,
                     async_sync, lambda: mapping.end(region), dev)
        else:
            run(async_sync, lambda: mapping.end(region), dev)
