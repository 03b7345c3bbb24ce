"""The data constructs in Python: target data, enter/exit data, update.

Items are contiguous arrays (`as_array`) or views of them, optionally wrapped in
`always(...)` and `present(...)`; ``device=None`` is the default device.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

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
    arrays, memoryview, ...) viewed without a copy."""
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, (np.generic, int, float, complex, str)):
        return None
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


def _items(spec):
    for kind, arrays in spec:
        if isinstance(arrays, _Modified) or as_array(arrays) is not None:
            arrays = (arrays,)
        for a in arrays:
            yield array_item(a, kind)


def target_enter_data(device=None, to=(), alloc=()):
    dev = devices.resolve(device)
    mapping.enter_data(dev, list(_items(((kinds.TO, to), (kinds.ALLOC, alloc)))))


def target_exit_data(device=None, from_=(), release=(), delete=()):
    dev = devices.resolve(device)
    mapping.exit_data(dev, list(_items(((kinds.FROM, from_), (kinds.RELEASE, release),
                                        (kinds.DELETE, delete)))))


def target_update(device=None, to=(), from_=()):
    dev = devices.resolve(device)
    mapping.update(dev, list(_items(((kinds.TO, to), (kinds.FROM, from_)))))


@contextmanager
def target_data(device=None, to=(), from_=(), tofrom=(), alloc=()):
    """``with target_data(...):`` maps for the block, unmaps (copying back) at its end."""
    dev = devices.resolve(device)
    region = mapping.begin(dev, list(_items(((kinds.TO, to), (kinds.FROM, from_),
                                             (kinds.TOFROM, tofrom), (kinds.ALLOC, alloc)))))
    try:
        yield dev
    finally:
        mapping.end(region)
