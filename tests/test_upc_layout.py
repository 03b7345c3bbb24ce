"""UPC's layout, queries and pointer arithmetic against a brute-force model (no MPI).

The model deals the elements out as UPC describes it, one block at a time to thread 0,
1, ..., THREADS-1, 0, ...; each thread appends what it gets to its local part.  It never
uses the div/mod formulas that the code uses.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pygomp.upc.layout import Layout, affinitysize
from pygomp.upc.pointer import SharedPointer


def deal(shape, blocksize, threads):
    """(block size, [(thread, phase, local offset)] a row-major element, local parts)."""
    n = math.prod(shape)
    if blocksize is None:
        blocksize = max(1, math.ceil(n / threads))
    parts = [[] for _ in range(threads)]
    where = {}
    elements = list(np.ndindex(*shape))
    thread, pos = 0, 0
    while pos < n:
        take = n - pos if blocksize == 0 else min(blocksize, n - pos)
        for phase in range(take):
            where[elements[pos + phase]] = (thread, phase if blocksize else 0,
                                            len(parts[thread]))
            parts[thread].append(pos + phase)
        pos += take
        if blocksize:
            thread = (thread + 1) % threads
    return blocksize, [where[e] for e in elements], parts


shapes = st.lists(st.integers(0, 7), min_size=1, max_size=3).map(tuple)


@st.composite
def layouts(draw):
    shape = draw(shapes)
    n = math.prod(shape)
    blocksize = draw(st.one_of(st.sampled_from([0, 1, 3, None]), st.integers(n + 1, n + 9),
                               st.integers(1, 12)))
    return shape, blocksize, draw(st.integers(1, 7)), draw(st.sampled_from([1, 4, 8]))


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_layout_matches_the_model(case):
    shape, blocksize, threads, elemsize = case
    B, where, parts = deal(shape, blocksize, threads)
    lay = Layout(shape, elemsize, blocksize, threads)
    assert lay.blocksize == B and lay.size == len(where)
    flat = np.arange(lay.size, dtype=np.int64)
    thread, addr = lay.place(flat)
    assert [(int(t), int(p), int(a)) for t, p, a in zip(thread, lay.phase(flat), addr)] == where
    assert np.array_equal(lay.index(thread, addr), flat)
    longest = max(len(p) for p in parts)
    rounded = -(-longest // B) * B if B else longest
    assert lay.localsizeof == rounded * elemsize           # UPC's bound, in whole blocks
    for t in range(threads):
        assert lay.count(t) == len(parts[t])
        assert lay.indices(t).tolist() == parts[t]
        assert affinitysize(lay.size * elemsize, B * elemsize, t, threads) \
            == len(parts[t]) * elemsize


@settings(max_examples=300, deadline=None)
@given(layouts(), st.data())
def test_pointer_arithmetic_matches_the_model(case, data):
    shape, blocksize, threads, elemsize = case
    _, where, _ = deal(shape, blocksize, threads)
    n = len(where)
    lay = Layout(shape, elemsize, blocksize, threads)
    if n == 0:
        return
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, n - 1))
    idx_i = np.unravel_index(i, shape)
    p = SharedPointer.to(lay, int(np.ravel_multi_index(idx_i, shape)))
    q = p + (j - i)
    thread, phase, offset = where[j]
    assert (q.thread, q.phase, q.addrfield) == (thread, phase, offset * elemsize)
    assert q == SharedPointer.to(lay, j) and q.index == j
    assert q - p == j - i and (q - (j - i)) == p
    assert (q < p, q <= p, q > p, q >= p) == (j < i, j <= i, j > i, j >= i)
    end = SharedPointer.to(lay, n)                       # one past the end
    assert end - p == n - i


def test_indefinite_block_stays_on_thread_0():
    lay = Layout((4, 5), 8, 0, 3)
    p = SharedPointer.to(lay, 0) + 17
    assert (p.thread, p.phase, p.addrfield) == (0, 0, 17 * 8)
    assert lay.localsizeof == 20 * 8 and lay.count(1) == 0


def test_star_block_size_spreads_evenly():
    lay = Layout((3, 7), 4, None, 4)          # 21 elements: blocks of 6
    assert lay.blocksize == 6
    assert [lay.count(t) for t in range(4)] == [6, 6, 6, 3]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="blocksize must be an int >= 0, not -1"):
        Layout(10, 8, -1, 2)
    with pytest.raises(ValueError, match="threadid 3 is not a thread"):
        affinitysize(80, 8, 3, 3)
    with pytest.raises(IndexError, match="index 11 is outside the shared array of 10"):
        SharedPointer.to(Layout(10, 8, 1, 2), 11)
    p, q = SharedPointer.to(Layout(10, 8, 1, 2), 0), SharedPointer.to(Layout(10, 8, 1, 2), 1)
    with pytest.raises(TypeError, match="different shared arrays"):
        q - p
