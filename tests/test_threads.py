"""Several Python threads on one device: no lost reference-count updates, no corrupted
map, a device initialized once, images loaded before anyone uses them."""
import sys
import threading

import numpy as np
import pytest

from pygomp import (omp_get_mapped_ptr, omp_target_is_present, omp_target_memcpy, present,
                    target_data, target_enter_data, target_exit_data, target_update)
from pygomp.runtime import devices, images, kinds, mapping
from pygomp.runtime.mapping import INFINITY, Item

from runtime_helpers import (CountingHostPlugin, addr, build_so, dev,  # noqa: F401
                             fresh_device, host_table, installed_devices, plugin,
                             registered, settings, user_entries)

THREADS = 8


@pytest.fixture(autouse=True)
def fast_switching():
    """Switch threads often, so that races show up in a short run."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def in_threads(fn, n=THREADS):
    """Run fn(i) in n threads started together; re-raise the first failure."""
    errors = []
    start = threading.Barrier(n)

    def body(i):
        try:
            start.wait()
            fn(i)
        except BaseException as e:          # noqa: BLE001 (reported below)
            errors.append(e)

    ts = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not any(t.is_alive() for t in ts), "a thread hangs"
    if errors:
        raise errors[0]


def device_values(a):
    out = np.empty_like(a)
    assert omp_target_memcpy(out, omp_get_mapped_ptr(a, 0), a.nbytes, 0, 0, 1, 0) == 0
    return out


def set_device_values(a, v):
    v = np.ascontiguousarray(v, dtype=a.dtype)
    assert omp_target_memcpy(omp_get_mapped_ptr(a, 0), v, v.nbytes, 0, 0, 0, 1) == 0


def test_enter_exit_shared_and_private(dev, plugin):
    shared = np.arange(64.0)
    rounds = 60
    middle = threading.Barrier(THREADS)

    def work(i):
        mine = np.full(16, float(i))
        for r in range(rounds):
            target_enter_data(0, to=(shared, mine))
            target_enter_data(0, alloc=shared[8:16])        # a view: the same entry
            set_device_values(mine, np.full(16, i * 1000.0 + r))
            target_exit_data(0, from_=mine)
            assert (mine == i * 1000.0 + r).all()
            assert not omp_target_is_present(mine, 0)
        middle.wait()
        # every thread holds 2 counts a round on the shared array
        assert entry_count(dev, shared) == 2 * rounds * THREADS
        np.testing.assert_array_equal(device_values(shared), np.arange(64.0))
        middle.wait()
        for r in range(rounds):
            target_exit_data(0, release=(shared, shared[8:16]))   # once per construct
            target_exit_data(0, release=shared[8:16])

    in_threads(work)
    assert user_entries(dev) == [] and plugin.live == {}


def entry_count(dev, a):
    """The entry's reference count (OpenMP's one count, as libgomp keeps it)."""
    e = dev.map.find(addr(a), addr(a) + a.nbytes)
    return None if e is None else e.refcount


def test_target_data_and_update(dev, plugin):
    shared = np.arange(32.0)
    target_enter_data(0, to=shared)

    def work(i):
        mine = np.zeros(8)
        for r in range(40):
            with target_data(0, tofrom=mine, to=shared):
                with target_data(0, alloc=present(shared)):
                    set_device_values(mine, np.arange(8.0) + i + r)
                    target_update(0, from_=mine)
                    np.testing.assert_array_equal(mine, np.arange(8.0) + i + r)
                    mine[:] = -1
                    target_update(0, to=mine)
                    target_update(0, from_=shared[4:8])
                    np.testing.assert_array_equal(shared, np.arange(32.0))
            np.testing.assert_array_equal(mine, -1)       # tofrom copied the device back
        assert not omp_target_is_present(mine, 0)

    in_threads(work)
    assert entry_count(dev, shared) == 1                    # back to what enter data left
    target_exit_data(0, delete=shared)
    assert user_entries(dev) == [] and plugin.live == {}


def test_presence_queries_while_others_map(dev):
    """omp_target_is_present / omp_get_mapped_ptr from threads that do not map, while
    others map and unmap: the queries must not disturb the map (or its lookup memo)."""
    arrays = [np.zeros(4) for _ in range(4)]
    stop = threading.Event()

    def work(i):
        if i % 2:                            # a query thread
            while not stop.is_set():
                for a in arrays:
                    omp_target_is_present(a, 0)
                    omp_get_mapped_ptr(a, 0)
            return
        try:
            a = arrays[i // 2]
            for _ in range(400):
                target_enter_data(0, to=a)
                target_update(0, to=present(a))
                target_exit_data(0, from_=a)
                assert not omp_target_is_present(a, 0)
        finally:
            stop.set()

    in_threads(work)
    assert user_entries(dev) == []


SOURCE = r"""
#include <stdint.h>
void add1(void **args, const int64_t *launch)
{
    int64_t *a = (int64_t *) args[0];
    a[0] += 1;
}
"""


def test_concurrent_lazy_init(tmp_path):
    so = build_so(str(tmp_path), SOURCE, "add1")
    plugin = CountingHostPlugin(load_delay=0.02)      # a slow image load widens the window
    d = fresh_device(0, plugin)
    table = host_table(so, {"add1": 1})
    with installed_devices([d, fresh_device(1, plugin, is_initial=True)], settings()), \
            registered(table):
        assert d.state == "uninitialized"
        results = [None] * 16

        def work(i):
            dev = devices.resolve(0)
            assert dev is d
            a = np.array([i], dtype=np.int64)
            mapping.target(dev, table.symbols["add1"], [Item(addr(a), 8, kinds.TOFROM, a)])
            results[i] = int(a[0])

        in_threads(work, 16)
        assert results == [i + 1 for i in range(16)]
        assert plugin.inits == 1
        assert plugin.loads == len([t for t in images.tables() if any(i.target == "host" for i in t.images)])
        assert d.map.find(table.symbols["add1"], table.symbols["add1"] + 1).refcount == INFINITY
        d.finalize()
    assert plugin.live == {}


def test_register_while_initializing(tmp_path):
    """A table registered while another thread initializes the device is loaded once."""
    so = build_so(str(tmp_path), SOURCE, "add1")
    plugin = CountingHostPlugin(load_delay=0.01)
    d = fresh_device(0, plugin)
    first = host_table(so, {"add1": 1}, name="first")
    with installed_devices([d, fresh_device(1, plugin, is_initial=True)], settings()), \
            registered(first):
        later = [host_table(so, {"add1": 1}, name=f"later {i}") for i in range(6)]

        def work(i):
            if i == 0:
                d.ensure_init()
            else:
                images.register(later[i - 1])

        try:
            in_threads(work, 7)
            for t in [first] + later[:6]:
                assert id(t) in d.loaded, f"{t.name} not loaded"
                fn = t.symbols["add1"]
                assert d.map.find(fn, fn + 1).refcount == INFINITY
        finally:
            for t in later:
                if t in images.tables():
                    images.unregister(t)
        d.finalize()
    assert plugin.loads == plugin.unloads
