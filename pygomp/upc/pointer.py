"""Pointers to shared: (thread, phase, local address) with UPC's arithmetic.

For block size B > 0 and p + k (div rounds toward minus infinity, mod is >= 0):

    phase'  = (phase + k) mod B
    thread' = (thread + (phase + k) div B) mod THREADS
    addr'   = addr + ((thread + (phase + k) div B) div THREADS) * B + phase' - phase

so the address moves by whole blocks each time the thread wraps around.  With an
indefinite block size (B = 0) the thread stays, the phase is 0 and the address moves by
k.  ``p - q`` is the distance in elements and comparisons order by it; both need
pointers into the same array.
"""
from __future__ import annotations

import numbers


class SharedPointer:
    """A pointer to an element (or one past the end) of a shared array or layout."""

    __slots__ = ("target", "layout", "thread", "phase", "addr")

    def __init__(self, target, thread: int, phase: int, addr: int):
        self.target = target            # a SharedArray, or a bare Layout (no memory)
        self.layout = getattr(target, "layout", target)
        self.thread, self.phase, self.addr = thread, phase, addr

    @classmethod
    def to(cls, target, i: int):
        """The pointer to flat index i of target."""
        layout = getattr(target, "layout", target)
        if not 0 <= i <= layout.size:
            raise IndexError(f"index {i} is outside the shared array of {layout.size} "
                             f"elements (0..{layout.size} can be pointed at)")
        thread, addr = layout.place(i)
        return cls(target, int(thread), int(layout.phase(i)), int(addr))

    @property
    def index(self) -> int:
        """The flat index this pointer points at."""
        return int(self.layout.index(self.thread, self.addr))

    @property
    def addrfield(self) -> int:
        """UPC's upc_addrfield: the byte offset in the thread's local part."""
        return self.addr * self.layout.elemsize

    def __add__(self, k):
        if not isinstance(k, numbers.Integral) or isinstance(k, bool):
            return NotImplemented
        k = int(k)
        B, T = self.layout.blocksize, self.layout.threads
        if B == 0:
            return SharedPointer(self.target, self.thread, 0, self.addr + k)
        moved = self.thread + (self.phase + k) // B
        phase = (self.phase + k) % B
        addr = self.addr + (moved // T) * B + phase - self.phase
        return SharedPointer(self.target, moved % T, phase, addr)

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, numbers.Integral):
            return self + (-int(other))
        return self._distance(other, "-")

    def _same_array(self, other, op):
        if other.target is not self.target:
            raise TypeError(f"pointer {op}: the pointers point into different shared arrays")

    def _distance(self, other, op):
        if not isinstance(other, SharedPointer):
            raise TypeError(f"pointer {op}: {type(other).__name__} is not a pointer to shared")
        self._same_array(other, op)
        return self.index - other.index

    def __lt__(self, other):
        return self._distance(other, "<") < 0

    def __le__(self, other):
        return self._distance(other, "<=") <= 0

    def __gt__(self, other):
        return self._distance(other, ">") > 0

    def __ge__(self, other):
        return self._distance(other, ">=") >= 0

    def __eq__(self, other):
        if not isinstance(other, SharedPointer):
            return NotImplemented
        return other.target is self.target and (self.thread, self.phase, self.addr) == (
            other.thread, other.phase, other.addr)

    def __hash__(self):
        return hash((id(self.target), self.thread, self.phase, self.addr))

    def __repr__(self):
        return (f"<pointer to shared: thread {self.thread}, phase {self.phase}, "
                f"addrfield {self.addrfield} (index {self.index})>")

    # -- through the array's memory --------------------------------------------------
    def _array(self):
        if not hasattr(self.target, "local"):
            raise TypeError("this pointer is over a bare layout: it has no memory")
        return self.target

    def _element(self, k):
        i = (self + k).index
        if not 0 <= i < self.layout.size:
            raise IndexError(f"pointer to shared + {k} points at index {i}, outside the "
                             f"array of {self.layout.size} elements")
        return i

    def __getitem__(self, k: int):
        """``p[k]``: the element at p + k (read through MPI when it is remote)."""
        return self._array().flat_get(self._element(k))

    def __setitem__(self, k: int, value):
        self._array().flat_set(self._element(k), value)

    def local(self):
        """The cast to a local pointer: a numpy view of the thread's part from this
        element on.  Only where the pointer has affinity to one of this rank's threads."""
        return self._array().local(self.thread)[self.addr:]
