"""Kernels and the map on every device: an array argument that extends a mapped section is
refused before anything runs, and a model of the map says which calls must fail."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygomp
import pygomp.kernels as omp
from pygomp import MappingError
from pygomp.runtime import devices

N = 64          # elements of the array the property test maps views of


@omp.target
def bump(v):
    for i in omp.parallel_range(v.shape[0]):
        v[i] += 1.0


def rng(a, lo=0, hi=None):
    """``[start..end)`` of elements lo..hi of a float64 array, as the runtime prints it."""
    hi = a.shape[0] if hi is None else hi
    start = a.ctypes.data
    return f"[{start + 8 * lo:#x}..{start + 8 * hi:#x})"


def user_entries(n):
    dev = devices.all_devices()[n]
    return [(e.host_start, e.host_end) for e in dev.map if e.refcount != float("inf")]


def test_argument_extending_a_mapped_section_is_refused(device):
    dev = devices.all_devices()[device]
    a = np.zeros(2000)
    with pygomp.target_data(device=device, tofrom=[a[0:1000]]):
        if dev.is_initial:              # shared memory: nothing is mapped, both run
            bump.on(device)(a[500:1500])
            bump.on(device)(a)
            expect = np.zeros(2000)
            expect[500:1500] += 1
            expect += 1
            np.testing.assert_array_equal(a, expect)
            return
        before = user_entries(device)
        with pytest.raises(MappingError, match=re.escape(
                f"device {device}: bump: argument 'v': trying to map {rng(a, 500, 1500)} "
                f"when {rng(a, 0, 1000)} is already mapped")):
            bump.on(device)(a[500:1500])
        assert user_entries(device) == before
        bump.on(device)(a[0:1000])      # still usable: the present section runs
        assert not a.any()              # on the device only, until the region ends
    np.testing.assert_array_equal(a, np.r_[np.ones(1000), np.zeros(1000)])
    with pygomp.target_data(device=device, tofrom=[a[10:50]]):
        with pytest.raises(MappingError, match=re.escape(
                f"trying to map {rng(a)} when {rng(a, 10, 50)} is already mapped")):
            bump.on(device)(a)
    assert user_entries(device) == []
    np.testing.assert_array_equal(a, np.r_[np.ones(1000), np.zeros(1000)])


# -- the property: random views mapped, random views passed to a kernel ---------------

class Model:
    """What the map holds: disjoint element ranges with a dynamic count and the device's
    copy of their elements; the host array as the program sees it."""

    def __init__(self, initial):
        self.initial = initial
        self.host = np.arange(N, dtype=np.float64)
        self.entries = {}           # (lo, hi) -> [count, device copy]

    def hit(self, lo, hi):
        """The entry overlapping [lo, hi) that the map finds (the last one) and whether it
        contains [lo, hi), or (None, False)."""
        for elo, ehi in sorted(self.entries, reverse=True):
            if lo < ehi and elo < hi:
                return (elo, ehi), elo <= lo and hi <= ehi
        return None, False

    def enter(self, lo, hi):
        """Returns whether target enter data must fail."""
        if self.initial:
            return False
        key, inside = self.hit(lo, hi)
        if key is None:
            self.entries[(lo, hi)] = [1, self.host[lo:hi].copy()]
        elif inside:
            self.entries[key][0] += 1
        else:
            return True
        return False

    def bump(self, lo, hi):
        """Returns whether the kernel call must fail."""
        key, inside = self.hit(lo, hi)
        if self.initial or key is None:
            self.host[lo:hi] += 1
        elif inside:
            self.entries[key][1][lo - key[0]:hi - key[0]] += 1
        else:
            return True
        return False

    def update_from(self, lo, hi):
        key, inside = self.hit(lo, hi)
        if self.initial or key is None:
            return False
        if not inside:
            return True
        self.host[lo:hi] = self.entries[key][1][lo - key[0]:hi - key[0]]
        return False

    def exit_from(self, key):
        e = self.entries[key]
        e[0] -= 1
        if e[0] == 0:
            self.host[key[0]:key[1]] = e[1]
            del self.entries[key]


views = st.tuples(st.integers(0, N - 1), st.integers(1, N)).map(
    lambda t: (min(t[0], t[1] - 1), max(t[0] + 1, t[1])))
ops = st.lists(st.tuples(st.sampled_from(["enter", "bump", "update", "exit"]), views),
               max_size=14)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_views_against_a_model_of_the_map(device, ops):
    initial = devices.all_devices()[device].is_initial
    model = Model(initial)
    a = model.host.copy()
    try:
        for op, (lo, hi) in ops:
            v = a[lo:hi]
            if op == "exit":
                if not model.entries:
                    continue
                key = sorted(model.entries)[lo % len(model.entries)]
                pygomp.target_exit_data(device=device, from_=[a[key[0]:key[1]]])
                model.exit_from(key)
            else:
                call = {"enter": lambda: pygomp.target_enter_data(device=device, to=[v]),
                        "bump": lambda: bump.on(device)(v),
                        "update": lambda: pygomp.target_update(device=device, from_=[v])}[op]
                must_fail = getattr(model, {"update": "update_from"}.get(op, op))(lo, hi)
                if must_fail:
                    key, _ = model.hit(lo, hi)
                    with pytest.raises(MappingError, match=re.escape(
                            f"{rng(a, lo, hi)} when {'only ' if op == 'update' else ''}"
                            f"{rng(a, *key)} is ")):
                        call()
                else:
                    call()
            np.testing.assert_array_equal(a, model.host)
            if not initial:
                assert sorted(user_entries(device)) == sorted(
                    (a.ctypes.data + 8 * lo, a.ctypes.data + 8 * hi) for lo, hi in model.entries)
        for key in list(model.entries):
            while key in model.entries:
                pygomp.target_exit_data(device=device, from_=[a[key[0]:key[1]]])
                model.exit_from(key)
        np.testing.assert_array_equal(a, model.host)
    finally:
        for lo, hi in list(model.entries):
            pygomp.target_exit_data(device=device, delete=[a[lo:hi]])
