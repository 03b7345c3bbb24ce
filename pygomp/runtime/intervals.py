"""The interval map: host address ranges ``[start, end)`` to entries, over sortedcontainers.

Not thread-safe: its owner (a device) holds a lock around every call.

Two ranges hit when they overlap; a zero-length range ``[s, s)`` hits a non-empty range
that strictly contains ``s`` and the zero-length range at ``s`` (libgomp's splay-tree
order).  The map never holds two entries that hit each other.  `find` looks a zero-length
section up as libgomp does: ``[s, s+1)``, then ``[s-1, s)``, then ``[s, s)``.
"""
from __future__ import annotations

from sortedcontainers import SortedKeyList


def hits(a_start, a_end, b_start, b_end) -> bool:
    """Whether two ranges collide in the map's order (libgomp's splay compare)."""
    if a_start == a_end and b_start == b_end:
        return a_start == b_start
    return not (a_end <= b_start or a_start >= b_end)


class IntervalMap:
    """Entries with ``host_start`` and ``host_end`` attributes, kept sorted."""

    def __init__(self):
        self._entries = SortedKeyList(key=lambda e: (e.host_start, e.host_end))
        self._memo = {}     # (start, end) -> entry or None; cleared on every change

    def __len__(self):
        return len(self._entries)

    def __iter__(self):
        return iter(list(self._entries))

    def lookup(self, start: int, end: int):
        """The entry that hits ``[start, end)``, or None (O(log n))."""
        # Entries that start before `end` (or at it: a zero-length entry at `start`),
        # right to left; irange needs no positional index, so changes stay cheap.
        for e in self._entries.irange_key(max_key=(end, end), reverse=True):
            if hits(start, end, e.host_start, e.host_end):
                return e
            # Non-empty entries are disjoint: a non-empty one that starts before
            # `start` and misses ends before it, and so does everything left of it.
            if e.host_start < start and e.host_start < e.host_end:
                return None
        return None

    def find(self, start: int, end: int):
        """`lookup`, with libgomp's rule for zero-length sections; repeated queries of
        an unchanged map are answered from a memo."""
        key = (start, end)
        try:
            return self._memo[key]
        except KeyError:
            pass
        if start != end:
            e = self.lookup(start, end)
        else:
            e = (self.lookup(start, start + 1) or self.lookup(start - 1, start)
                 or self.lookup(start, start))
        if len(self._memo) > 4096:
            self._memo.clear()
        self._memo[key] = e
        return e

    def insert(self, entry) -> None:
        other = self.lookup(entry.host_start, entry.host_end)
        if other is not None:
            raise ValueError(f"[{entry.host_start:#x}..{entry.host_end:#x}) overlaps "
                             f"[{other.host_start:#x}..{other.host_end:#x}) in the map")
        self._entries.add(entry)
        self._memo.clear()

    def remove(self, entry) -> None:
        self._entries.remove(entry)
        self._memo.clear()
