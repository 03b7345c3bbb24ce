"""The interval map: host address ranges ``[start, end)`` to entries, kept sorted.

Not thread-safe: its owner (a device) holds a lock around every call.

Two ranges hit when they overlap; a zero-length range ``[s, s)`` hits a non-empty range
that strictly contains ``s`` and the zero-length range at ``s`` (libgomp's splay-tree
order).  The map never holds two entries that hit each other.  `find` looks a zero-length
section up as libgomp does: ``[s, s+1)``, then ``[s-1, s)``, then ``[s, s)``.

Entries are kept in two plain lists ordered by ``(start, end)``: their starts, and the
entries.  A lookup is a binary search over the starts (C code, `bisect`) and a step or
two back; an insertion or removal moves the tail of the lists (a memmove).  ``version``
counts the changes, so that a caller may keep what it looked up while it stays the same.
"""
from __future__ import annotations

from _bisect import bisect_left, bisect_right     # bisect.py, less its own import


def hits(a_start, a_end, b_start, b_end) -> bool:
    """Whether two ranges collide in the map's order (libgomp's splay compare)."""
    if a_start == a_end and b_start == b_end:
        return a_start == b_start
    return not (a_end <= b_start or a_start >= b_end)


class IntervalMap:
    """Entries with ``host_start`` and ``host_end`` attributes, kept sorted."""

    def __init__(self):
        self._starts = []
        self._entries = []
        self.version = 0        # changes with every insertion and removal

    def __len__(self):
        return len(self._entries)

    def __iter__(self):
        return iter(list(self._entries))

    def lookup(self, start: int, end: int):
        """The entry that hits ``[start, end)``, or None (O(log n))."""
        entries = self._entries
        # Entries that start at or before `end`, right to left.  Non-empty entries are
        # disjoint: a non-empty one that starts before `start` and misses ends before
        # it, and so does everything left of it.
        i = bisect_right(self._starts, end) - 1
        while i >= 0:
            e = entries[i]
            s, t = e.host_start, e.host_end
            if start < end and s < t:           # two non-empty ranges: do they overlap
                if s < end and start < t:
                    return e
            elif hits(start, end, s, t):
                return e
            if s < start and s < t:
                return None
            i -= 1
        return None

    def find(self, start: int, end: int):
        """`lookup`, with libgomp's rule for zero-length sections."""
        if start != end:
            return self.lookup(start, end)
        return (self.lookup(start, start + 1) or self.lookup(start - 1, start)
                or self.lookup(start, start))

    def insert(self, entry) -> None:
        start, end = entry.host_start, entry.host_end
        other = self.lookup(start, end)
        if other is not None:
            raise ValueError(f"[{start:#x}..{end:#x}) overlaps "
                             f"[{other.host_start:#x}..{other.host_end:#x}) in the map")
        i = bisect_left(self._starts, start)
        while i < len(self._starts) and self._starts[i] == start \
                and self._entries[i].host_end < end:
            i += 1
        self._starts.insert(i, start)
        self._entries.insert(i, entry)
        self.version += 1

    def remove(self, entry) -> None:
        i = bisect_left(self._starts, entry.host_start)
        n = len(self._entries)
        while i < n and self._entries[i] is not entry and self._starts[i] == entry.host_start:
            i += 1
        if i == n or self._entries[i] is not entry:
            raise ValueError(f"[{entry.host_start:#x}..{entry.host_end:#x}) is not in the map")
        del self._starts[i]
        del self._entries[i]
        self.version += 1
