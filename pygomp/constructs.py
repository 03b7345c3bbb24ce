"""The data constructs in Python: target data, enter/exit data, update.

Items are contiguous arrays (`as_array`) or views of them, optionally wrapped in
`always(...)` and `present(...)`; ``device=None`` is the default device.  An array (or
memory it shares) in two clauses of one construct is a ValueError, as GCC refuses it.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

from .runtime import devices, kinds, mapping


class _Modified:
    __slots__ = ("array", "flags")

    def __init__(self, array, flags):
        inner = array
        while isinstance(inner, _Modified):
            flags |= inner.flags
            inner = inner.array
        self.array, self.flags = inner, flags


def always(a):
    """The ``always`` map-type modifier: copy even when the object is present."""
    return _Modified(a, kinds.FLAG_SPECIAL_2)


def present(a):
    """The ``present`` map-type modifier: the object must already be mapped."""
    return _Modified(a, kinds.FLAG_PRESENT)


def as_array(obj):
    """``obj`` as a numpy array over the same memory, or None if it is no array: an
    ndarray (np.memmap and other subclasses too) as it is; an object with
    ``__array_interface__`` or the buffer protocol (bytearray, array.array, ctypes
    arrays, memoryview, ...) viewed without a copy.  numpy is imported on first use
    (a C program's maps never need it)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, (int, float, complex, str)) or np is not None and isinstance(
            obj, np.generic):
        return None
    import numpy as np
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array_struct__"):
        return np.asarray(obj)
    try:
        view = memoryview(obj)
    except TypeError:
        return None
    try:
        return np.asarray(view)
    except (TypeError, ValueError, NotImplementedError):   # a format numpy cannot read
        return np.frombuffer(view.cast("B"), np.uint8)


ARRAYS = ("numpy arrays (and subclasses such as np.memmap), objects with "
          "__array_interface__ or the buffer protocol")


def array_item(a, kind, flags=0) -> mapping.Item:
    """A map item for one array: its memory range, kind and owner."""
    if isinstance(a, _Modified):
        flags |= a.flags
        a = a.array
    obj, a = a, as_array(a)
    if a is None:
        raise TypeError(f"pygomp: only arrays can be mapped ({ARRAYS}), not "
                        f"{type(obj).__name__}")
    if kinds.copies_from(kind) and not a.flags.writeable:
        raise TypeError(f"pygomp: a read-only array (shape {a.shape}) cannot be mapped "
                        f"{kinds.name(kind).lower()}: nothing may be copied into it")
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        raise TypeError(f"pygomp: cannot map a non-contiguous array (shape {a.shape}, "
                        f"strides {a.strides}): map its contiguous base, or a copy "
                        f"(np.ascontiguousarray)")
    if flags and not kinds.is_mapping(kind):
        raise TypeError(f"pygomp: always and present apply to to, from, tofrom and alloc, "
                        f"not to {kinds.name(kind).lower()}")
    return mapping.Item(a.__array_interface__["data"][0], a.nbytes, kind | flags, a)


_ALONGSIDE = {frozenset(("release", "delete"))}     # delete does all release does


def one_clause(construct, named):
    """The items of ``named``, ``[(clause, item)]``, once it is checked that no memory is
    in two clauses of the construct (GCC refuses an array in two map clauses; release
    with delete is let through, delete deciding)."""
    reach = {}              # clause -> the item of it that ends furthest so far
    for clause, it in sorted((p for p in named if p[1].size), key=lambda p: p[1].addr):
        for other, far in reach.items():
            if other != clause and it.addr < far.addr + far.size \
                    and frozenset((clause, other)) not in _ALONGSIDE:
                raise ValueError(_twice(construct, other, far, clause, it))
        far = reach.get(clause)
        if far is None or it.addr + it.size > far.addr + far.size:
            reach[clause] = it
    return [it for _, it in named]


def _twice(construct, k1, a, k2, b):
    def what(it):
        o = it.obj
        return (f"an array ({o.dtype}, shape {o.shape}) at "
                f"[{it.addr:#x}..{it.addr + it.size:#x})")
    hint = {frozenset(("to", "from")): " (map it tofrom)",
            frozenset(("copyin", "copyout")): " (use copy)"}.get(frozenset((k1, k2)), "")
    if (a.addr, a.size) == (b.addr, b.size):
        return (f"pygomp: {construct}: {what(a)} is in two clauses, {k1} and {k2}; "
                f"an array takes one map kind on a construct{hint}")
    return (f"pygomp: {construct}: {what(a)} is in {k1} and {what(b)}, which shares its "
            f"memory, in {k2}; an array takes one map kind on a construct{hint}")


def _items(construct, spec):
    named = []
    for clause, kind, arrays in spec:
        if isinstance(arrays, _Modified) or as_array(arrays) is not None:
            arrays = (arrays,)
        named += [(clause, array_item(a, kind)) for a in arrays]
    return one_clause(construct, named)


def target_enter_data(device=None, to=(), alloc=()):
    dev = devices.resolve(device)
    mapping.enter_data(dev, _items("target_enter_data", (("to", kinds.TO, to),
                                                         ("alloc", kinds.ALLOC, alloc))))


def target_exit_data(device=None, from_=(), release=(), delete=()):
    dev = devices.resolve(device)
    mapping.exit_data(dev, _items("target_exit_data", (("from", kinds.FROM, from_),
                                                       ("release", kinds.RELEASE, release),
                                                       ("delete", kinds.DELETE, delete))))


def target_update(device=None, to=(), from_=()):
    dev = devices.resolve(device)
    mapping.update(dev, _items("target_update", (("to", kinds.TO, to),
                                                 ("from", kinds.FROM, from_))))


@contextmanager
def target_data(device=None, to=(), from_=(), tofrom=(), alloc=()):
    """``with target_data(...):`` maps for the block, unmaps (copying back) at its end."""
    dev = devices.resolve(device)
    region = mapping.begin(dev, _items("target_data", (
        ("to", kinds.TO, to), ("from", kinds.FROM, from_), ("tofrom", kinds.TOFROM, tofrom),
        ("alloc", kinds.ALLOC, alloc))))
    try:
        yield dev
    finally:
        mapping.end(region)
