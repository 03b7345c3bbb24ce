"""Offload descriptor tables and their process-wide registry.

A table lists host functions (host addresses) and host variables (address, size), and
carries images (`plugin.Image`): code compiled for one device identity, or for any
device of a target kind (an image whose identity is "").  A device loads the image of
its identity (else its kind's), and gets back the device addresses of the same
functions and variables, in the same order.

An image may be `Pending`: its target and identity are known, its contents are read
the first time a device of that target asks for it (GCC's nvptx images: registering
one costs nothing until a GPU initializes).
"""
from __future__ import annotations

import ctypes
import _thread          # threading's own locks: importing threading takes 0.5 ms


class OffloadImage:
    """A table: ``functions`` (host addresses), ``variables`` ((host address, size)),
    ``images`` (`plugin.Image`, each for one identity), a ``name``, and ``keepalive``:
    the owners of the host addresses.  Each is equal only to itself."""

    def __init__(self, functions, variables, images, name="", keepalive=None):
        self.functions, self.variables, self.images = functions, variables, images
        self.name = name
        self.keepalive = [] if keepalive is None else keepalive

    def __repr__(self):
        return (f"OffloadImage(functions={self.functions!r}, "
                f"variables={self.variables!r}, images={self.images!r}, "
                f"name={self.name!r})")

    def image_for(self, target: str, identity: str):
        """The image a device of this target and identity loads, or None."""
        fallback = None
        for image in self.images:
            if image.target == target:
                if image.identity == identity:
                    fallback = image
                    break
                if not image.identity:
                    fallback = image
        return fallback.get() if isinstance(fallback, Pending) else fallback


class Pending:
    """An image read on first use: ``make()`` returns the `plugin.Image`, once."""
    __slots__ = ("target", "identity", "_make", "_image", "_lock")

    def __init__(self, target: str, identity: str, make):
        self.target, self.identity, self._make = target, identity, make
        self._image = None
        self._lock = _thread.allocate_lock()

    def get(self):
        with self._lock:
            if self._image is None:
                self._image = self._make()
                self._make = None
            return self._image

    def __repr__(self):
        state = "read" if self._image is not None else "not read yet"
        return f"<pending {self.target} image, {state}>"


class HostSymbol:
    """A unique host address for something that has none of its own (a Python kernel):
    one byte of real host memory, so it can never collide with mapped data."""
    __slots__ = ("_cell", "address", "name")

    def __init__(self, name: str):
        self._cell = ctypes.c_char()     # not a char array: no array type to make
        self.address = ctypes.addressof(self._cell)
        self.name = name

    def __repr__(self):
        return f"HostSymbol({self.name!r}, {self.address:#x})"


_lock = _thread.allocate_lock()
_tables: list[OffloadImage] = []
_listeners = []      # called as f("register" | "unregister", table)


def register(table: OffloadImage) -> OffloadImage:
    """Add a table; devices already initialized load its image of their kind at once."""
    with _lock:
        _tables.append(table)
        listeners = list(_listeners)
    try:
        for f in listeners:
            f("register", table)
    except BaseException:       # a device could not load it: take it back everywhere
        unregister(table)
        raise
    return table


def unregister(table: OffloadImage) -> None:
    with _lock:
        _tables.remove(table)
        listeners = list(_listeners)
    for f in listeners:
        f("unregister", table)


def tables() -> list[OffloadImage]:
    with _lock:
        return list(_tables)


def add_listener(f) -> None:
    with _lock:
        _listeners.append(f)
