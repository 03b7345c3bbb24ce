"""The interval map against a naive model: a list of ranges and libgomp's splay order."""
import itertools

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, invariant,
                                 precondition, rule)

from pygomp.runtime.intervals import IntervalMap


class E:
    _ids = itertools.count()

    def __init__(self, start, end):
        self.host_start, self.host_end = start, end
        self.id = next(self._ids)

    def __repr__(self):
        return f"E{self.id}[{self.host_start}..{self.host_end})"


def collide(a0, a1, b0, b1):
    """libgomp's splay_compare == 0, written out case by case."""
    if a0 == a1 and b0 == b1:
        return a0 == b0
    if a0 == a1:                       # a zero-length key hits a range strictly around it
        return b0 < a0 < b1
    if b0 == b1:
        return a0 < b0 < a1
    return a0 < b1 and b0 < a1


class Model:
    def __init__(self):
        self.entries = []

    def hitting(self, s, e):
        return [x for x in self.entries if collide(s, e, x.host_start, x.host_end)]

    def find_candidates(self, s, e):
        if s != e:
            return self.hitting(s, e)
        for q in ((s, s + 1), (s - 1, s), (s, s)):
            got = self.hitting(*q)
            if got:
                return got
        return []


addresses = st.integers(min_value=0, max_value=80)
sizes = st.sampled_from([0, 0, 1, 2, 3, 5, 8, 13])


class IntervalMapMachine(RuleBasedStateMachine):
    inserted = Bundle("inserted")

    def __init__(self):
        super().__init__()
        self.map = IntervalMap()
        self.model = Model()

    @rule(target=inserted, start=addresses, size=sizes)
    def insert(self, start, size):
        e = E(start, start + size)
        others = self.model.hitting(start, start + size)
        if others:
            before = list(self.map)
            with pytest.raises(ValueError) as info:
                self.map.insert(e)
            assert f"[{start:#x}..{start + size:#x}) overlaps [" in str(info.value)
            assert list(self.map) == before
            return None
        self.map.insert(e)
        self.model.entries.append(e)
        return e

    @rule(e=consumes(inserted))
    def remove(self, e):
        if e is None:
            return
        self.map.remove(e)
        self.model.entries.remove(e)

    @rule(start=addresses, size=st.integers(0, 40))
    def lookup(self, start, size):
        got = self.map.lookup(start, start + size)
        expected = self.model.hitting(start, start + size)
        if expected:
            assert got in expected
        else:
            assert got is None

    @rule(start=addresses, size=st.sampled_from([0, 0, 0, 1, 4, 20]))
    def find(self, start, size):
        got = self.map.find(start, start + size)
        expected = self.model.find_candidates(start, start + size)
        if expected:
            assert got in expected
        else:
            assert got is None

    @precondition(lambda self: self.model.entries)
    @rule(data=st.data())
    def lookup_inside_an_entry(self, data):
        e = data.draw(st.sampled_from(self.model.entries))
        if e.host_start == e.host_end:
            assert self.map.find(e.host_start, e.host_end) in self.model.find_candidates(
                e.host_start, e.host_end)
            return
        s = data.draw(st.integers(e.host_start, e.host_end - 1))
        t = data.draw(st.integers(s + 1, e.host_end))
        assert self.map.lookup(s, t) is e
        assert self.map.find(s, s) is e          # [s, s+1) is inside e

    @invariant()
    def same_entries_sorted(self):
        assert len(self.map) == len(self.model.entries)
        assert list(self.map) == sorted(self.model.entries,
                                        key=lambda x: (x.host_start, x.host_end))


IntervalMapMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestIntervalMap = IntervalMapMachine.TestCase


# -- plain examples -------------------------------------------------------------------

@pytest.fixture
def m():
    m = IntervalMap()
    for s, e in [(100, 200), (200, 200), (300, 300), (400, 500)]:
        m.insert(E(s, e))
    return m


def span(e):
    return None if e is None else (e.host_start, e.host_end)


def test_overlap_is_a_hit(m):
    assert span(m.lookup(150, 160)) == (100, 200)
    assert span(m.lookup(50, 101)) == (100, 200)
    assert span(m.lookup(199, 200)) == (100, 200)
    assert span(m.lookup(199, 250)) in {(100, 200), (200, 200)}   # two hit: either
    assert span(m.lookup(450, 600)) == (400, 500)
    assert m.lookup(0, 100) is None          # ends where the entry starts
    assert m.lookup(500, 600) is None        # starts where it ends
    assert m.lookup(201, 299) is None


def test_zero_length_lookup_is_strictly_inside(m):
    assert span(m.lookup(150, 150)) == (100, 200)
    assert m.lookup(100, 100) is None        # at the start: misses the range...
    assert m.lookup(400, 400) is None
    assert span(m.lookup(300, 300)) == (300, 300)   # ...hits only a zero-length entry
    assert span(m.lookup(200, 200)) == (200, 200)


def test_find_zero_length_rule(m):
    # [s, s+1) first: the start of a mapped array
    assert span(m.find(100, 100)) == (100, 200)
    assert span(m.find(400, 400)) == (400, 500)
    # then [s-1, s): one past the end of a mapped array (it wins over [200, 200))
    assert span(m.find(200, 200)) == (100, 200)
    assert span(m.lookup(200, 200)) == (200, 200)
    assert span(m.find(500, 500)) == (400, 500)
    # then [s, s): a zero-length entry on its own
    assert span(m.find(300, 300)) == (300, 300)
    assert m.find(301, 301) is None
    assert m.find(250, 250) is None


def test_insert_collision_names_both_ranges(m):
    with pytest.raises(ValueError, match=r"\[0x1c2\.\.0x1c3\) overlaps \[0x190\.\.0x1f4\) in the map"):
        m.insert(E(450, 451))
    with pytest.raises(ValueError, match=r"\[0x12c\.\.0x12c\) overlaps \[0x12c\.\.0x12c\)"):
        m.insert(E(300, 300))
    m.insert(E(500, 500))                    # zero-length at an end: no collision
    m.insert(E(0, 100))                      # adjacent: no collision
    assert [span(e) for e in m] == [(0, 100), (100, 200), (200, 200), (300, 300),
                                    (400, 500), (500, 500)]


def test_remove_then_reinsert(m):
    e = m.lookup(150, 151)
    m.remove(e)
    assert m.lookup(100, 200) is None
    m.insert(E(120, 180))
    assert span(m.find(150, 150)) == (120, 180)
    with pytest.raises(ValueError):
        m.remove(e)                          # not there any more


def test_many_entries_lookup():
    m = IntervalMap()
    for i in range(1000):
        m.insert(E(i * 16, i * 16 + 8))
    for i in range(0, 1000, 37):
        assert span(m.lookup(i * 16 + 3, i * 16 + 4)) == (i * 16, i * 16 + 8)
        assert m.lookup(i * 16 + 8, i * 16 + 16) is None
        assert span(m.find(i * 16 + 8, i * 16 + 8)) == (i * 16, i * 16 + 8)
