"""OpenMP 5.2 map semantics on the host plugin's device (separate memory, like a GPU).

Each test gets a fresh device 0 on its own (counting) host plugin and the initial
device 1, installed as the process-wide device list, so the public constructs and the
omp_* routines work on them and nothing leaks from one test to the next.  What the
device holds is read back through omp_get_mapped_ptr + omp_target_memcpy.
"""
import contextlib
import ctypes
import gc
import re
import struct
import weakref

import numpy as np
import pytest

from pygomp import (always, omp_get_mapped_ptr, omp_target_is_present, omp_target_memcpy,
                    present, target_data, target_enter_data, target_exit_data, target_update)
from pygomp.constructs import array_item
from pygomp.runtime import accmap, calls, devices, images, kinds, mapping
from pygomp.runtime.mapping import INFINITY, Item, MappingError
from pygomp.runtime.plugin import PluginError

from runtime_helpers import (addr, build_so, dev, host_table, installed_devices,  # noqa: F401
                             plugin, registered, settings, symbol_address, user_entries)

DEV, HOST = 0, 1      # the offload device and the initial device in these tests


@pytest.fixture
def initial(dev):
    return devices.all_devices()[HOST]


@contextlib.contextmanager
def uncounted():
    """Copies the test itself makes do not count as the runtime's."""
    plugin = devices.all_devices()[DEV].plugin
    saved = plugin.h2d, plugin.d2h
    yield
    plugin.h2d, plugin.d2h = saved


def on_device(a):
    """What device 0 holds for ``a`` (through its mapped pointer)."""
    p = omp_get_mapped_ptr(a, DEV)
    assert p, "not mapped"
    out = np.empty_like(a)
    with uncounted():
        assert omp_target_memcpy(out, p, a.nbytes, 0, 0, HOST, DEV) == 0
    return out


def write_device(a, values):
    """Store ``values`` into device 0's copy of ``a`` (what a kernel would do)."""
    values = np.ascontiguousarray(values, dtype=a.dtype)
    p = omp_get_mapped_ptr(a, DEV)
    assert p, "not mapped"
    with uncounted():
        assert omp_target_memcpy(p, values, values.nbytes, 0, 0, DEV, HOST) == 0


def entry(dev, a):
    return dev.map.find(addr(a), addr(a) + a.nbytes)


def count(dev, a):
    """The entry's reference count: OpenMP keeps one (libgomp's ``refcount``), its
    OpenACC dynamic part stays 0."""
    e = entry(dev, a)
    if e is None:
        return None
    assert e.dynamic_refcount == 0
    return e.refcount


def rng(a, lo=0, hi=None):
    hi = a.nbytes if hi is None else hi
    return f"[{addr(a) + lo:#x}..{addr(a) + hi:#x})"


# -- the map kinds ------------------------------------------------------------------

def test_to_copies_in_not_back(dev, plugin):
    a = np.arange(10.0)
    target_enter_data(DEV, to=a)
    assert plugin.h2d == a.nbytes
    assert omp_get_mapped_ptr(a, DEV) not in (0, addr(a))       # separate memory
    np.testing.assert_array_equal(on_device(a), np.arange(10.0))
    a[:] = -1                                                   # host changes stay on host
    np.testing.assert_array_equal(on_device(a), np.arange(10.0))
    write_device(a, np.full(10, 7.0))
    target_exit_data(DEV, release=a)
    np.testing.assert_array_equal(a, -1)                        # release copies nothing
    assert plugin.d2h == 0
    assert user_entries(dev) == [] and plugin.live == {}


def test_from_copies_back_not_in(dev, plugin):
    a = np.arange(6, dtype=np.int32)
    with target_data(DEV, from_=a):
        assert plugin.h2d == 0
        write_device(a, [9, 8, 7, 6, 5, 4])
        np.testing.assert_array_equal(a, np.arange(6))          # not yet
    np.testing.assert_array_equal(a, [9, 8, 7, 6, 5, 4])
    assert plugin.d2h == a.nbytes
    assert user_entries(dev) == []


def test_tofrom_round_trip(dev, plugin):
    a = np.linspace(0, 1, 33)
    with target_data(DEV, tofrom=a):
        np.testing.assert_array_equal(on_device(a), np.linspace(0, 1, 33))
        write_device(a, on_device(a) * 2)
    np.testing.assert_array_equal(a, np.linspace(0, 1, 33) * 2)
    assert (plugin.h2d, plugin.d2h) == (a.nbytes, a.nbytes)


def test_alloc_copies_nothing(dev, plugin):
    a = np.ones(16)
    with target_data(DEV, alloc=a):
        assert plugin.h2d == 0 and omp_target_is_present(a, DEV)
        write_device(a, np.zeros(16))
    np.testing.assert_array_equal(a, 1.0)
    assert plugin.d2h == 0 and plugin.live == {}


def test_release_decrements_delete_removes(dev, plugin):
    a = np.arange(4.0)
    target_enter_data(DEV, to=a)
    target_enter_data(DEV, to=a)            # present: count 2, no second copy
    assert count(dev, a) == 2 and plugin.h2d == a.nbytes
    target_exit_data(DEV, release=a)
    assert count(dev, a) == 1 and omp_target_is_present(a, DEV)
    target_enter_data(DEV, alloc=a)
    target_enter_data(DEV, alloc=a)
    assert count(dev, a) == 3
    write_device(a, [5, 5, 5, 5])
    target_exit_data(DEV, delete=a)         # whatever the count
    assert count(dev, a) is None and not omp_target_is_present(a, DEV)
    np.testing.assert_array_equal(a, np.arange(4.0))   # delete copies nothing back
    assert plugin.d2h == 0 and plugin.live == {}
    target_exit_data(DEV, release=a, delete=a)   # absent: nothing happens, no error


def test_exit_from_copies_when_count_reaches_zero(dev):
    a = np.zeros(5)
    target_enter_data(DEV, to=a)
    target_enter_data(DEV, to=a)
    write_device(a, [1, 2, 3, 4, 5])
    target_exit_data(DEV, from_=a)          # count 2 -> 1: no copy
    np.testing.assert_array_equal(a, 0)
    target_exit_data(DEV, from_=a)          # 1 -> 0: copy and remove
    np.testing.assert_array_equal(a, [1, 2, 3, 4, 5])
    assert user_entries(dev) == []


def test_always_to_copies_when_present(dev, plugin):
    a = np.arange(8.0)
    target_enter_data(DEV, to=a)
    a += 100
    with target_data(DEV, to=a):            # present: no copy
        np.testing.assert_array_equal(on_device(a), np.arange(8.0))
    with target_data(DEV, to=always(a)):    # always: copy even though present
        np.testing.assert_array_equal(on_device(a), np.arange(8.0) + 100)
    a += 100
    target_enter_data(DEV, to=always(a))
    np.testing.assert_array_equal(on_device(a), np.arange(8.0) + 200)
    assert count(dev, a) == 2
    target_update(DEV, to=always(a))        # harmless on update
    target_exit_data(DEV, delete=a)
    assert plugin.h2d == 4 * a.nbytes


def test_always_from_copies_while_still_mapped(dev):
    a = np.zeros(4)
    target_enter_data(DEV, to=a)
    write_device(a, [1, 2, 3, 4])
    with target_data(DEV, from_=a):
        pass
    np.testing.assert_array_equal(a, 0)     # the dynamic count holds it: no copy
    with target_data(DEV, from_=always(a)):
        pass
    np.testing.assert_array_equal(a, [1, 2, 3, 4])
    write_device(a, [5, 6, 7, 8])
    target_enter_data(DEV, alloc=a)         # count 2
    target_exit_data(DEV, from_=always(a))  # 2 -> 1, copies anyway
    np.testing.assert_array_equal(a, [5, 6, 7, 8])
    assert count(dev, a) == 1
    target_exit_data(DEV, release=a)


def test_present_on_absent_object_names_address_and_size(dev, plugin):
    a = np.zeros(10)
    msg = re.escape(f"device 0: present: {rng(a)} (80 bytes at host address {addr(a):#x}) "
                    f"is not present on the device")
    with pytest.raises(MappingError, match=msg):
        with target_data(DEV, tofrom=present(a)):
            pass
    with pytest.raises(MappingError, match=msg):
        target_enter_data(DEV, to=present(a))
    with pytest.raises(MappingError, match=msg):
        target_update(DEV, from_=present(a))
    with pytest.raises(MappingError, match=msg):
        target_exit_data(DEV, from_=present(a))
    with pytest.raises(MappingError, match=msg):    # always + present
        target_enter_data(DEV, to=always(present(a)))
    target_update(DEV, from_=a)                      # without present: nothing, no error
    assert user_entries(dev) == [] and plugin.allocs == 0


def test_present_on_present_object(dev):
    a = np.arange(3.0)
    b = a[1:]
    target_enter_data(DEV, to=a)
    with target_data(DEV, tofrom=[present(b), present(a)]):
        assert count(dev, a) == 2
        write_device(a, [7, 8, 9])
    np.testing.assert_array_equal(a, [0, 1, 2])    # still mapped: no copy back
    target_update(DEV, from_=present(b))
    np.testing.assert_array_equal(a, [0, 8, 9])
    target_exit_data(DEV, from_=present(a))
    assert user_entries(dev) == []


# -- reference counts -----------------------------------------------------------------

def test_target_data_inside_enter_exit(dev):
    a = np.zeros(3)
    target_enter_data(DEV, to=a)
    with target_data(DEV, tofrom=a):
        assert count(dev, a) == 2
        with target_data(DEV, from_=a):
            assert count(dev, a) == 3
            write_device(a, [1, 1, 1])
        assert count(dev, a) == 2
    assert count(dev, a) == 1
    np.testing.assert_array_equal(a, 0)       # no copy while enter data's reference holds it
    target_exit_data(DEV, from_=a)
    np.testing.assert_array_equal(a, 1)
    assert user_entries(dev) == []


def test_enter_exit_inside_target_data(dev, plugin):
    """OpenMP has one reference count (libgomp's gomp_exit_data decrements it whoever
    took the reference): a second exit data takes the region's reference, copies back
    and removes the entry; the region's end then leaves it alone."""
    a = np.zeros(3)
    with target_data(DEV, tofrom=a):
        target_enter_data(DEV, to=a)
        assert count(dev, a) == 2
        write_device(a, [2, 2, 2])
        target_exit_data(DEV, from_=a)        # 2 -> 1: no copy
        np.testing.assert_array_equal(a, 0)
        assert count(dev, a) == 1
        target_exit_data(DEV, from_=a)        # 1 -> 0: copy back, remove
        np.testing.assert_array_equal(a, 2)
        assert count(dev, a) is None and plugin.live == {}
        a[:] = 7
    np.testing.assert_array_equal(a, 7)       # nothing copied at the region's end
    assert user_entries(dev) == [] and plugin.d2h == a.nbytes


def test_delete_inside_target_data(dev, plugin):
    a = np.zeros(3)
    with target_data(DEV, tofrom=a):
        target_enter_data(DEV, to=a)
        write_device(a, [4, 5, 6])
        target_exit_data(DEV, delete=a)        # the count to zero: removed at once
        assert not omp_target_is_present(a, DEV) and plugin.live == {}
    np.testing.assert_array_equal(a, 0)        # nothing to copy back at the region's end
    assert user_entries(dev) == [] and plugin.frees == 1
    with target_data(DEV, tofrom=a):           # and it maps again as new
        assert count(dev, a) == 1


def test_nested_from_copies_at_outermost_end(dev):
    a = np.zeros(2)
    with target_data(DEV, from_=a):
        with target_data(DEV, from_=a):
            write_device(a, [3, 4])
        np.testing.assert_array_equal(a, 0)
    np.testing.assert_array_equal(a, [3, 4])


def test_count_incremented_once_per_construct(dev, plugin):
    a = np.arange(6.0)
    with target_data(DEV, tofrom=(a, a, a[2:4])):
        assert count(dev, a) == 1
        assert len(user_entries(dev)) == 1 and plugin.allocs == 1
    assert user_entries(dev) == []
    target_enter_data(DEV, to=(a, a, a[1:3]))
    assert count(dev, a) == 1
    target_exit_data(DEV, from_=(a, a[::1], a[2:4]))    # decremented once
    assert user_entries(dev) == []


def test_openacc_struct_members_keep_counts_of_their_own(dev, plugin):
    s = np.arange(4.0)                          # a struct of two members, s[:2] and s[2:]
    a, b = Item(addr(s), 16, kinds.TO, s), Item(addr(s) + 16, 16, kinds.TO, s)

    def struct(*members):
        return [Item(members[0].addr, len(members), kinds.STRUCT), *members]
    mapping.enter_data(dev, struct(a, b), acc=True)
    mapping.enter_data(dev, struct(b), acc=True)
    assert plugin.allocs == 1 and [e.dynamic_refcount for e in user_entries(dev)] == [1, 2]
    s[:] = -1
    accmap.exit_data(dev, [a._replace(kind=kinds.FROM)])   # a's last reference: a goes
    assert not accmap.is_present(dev, a.addr, 16) and accmap.is_present(dev, b.addr, 16)
    assert s.tolist() == [0, 1, -1, -1] and len(plugin.live) == 1   # b keeps the block
    with pytest.raises(MappingError, match="weren't mapped together"):
        mapping.enter_data(dev, struct(a, b), acc=True)    # a anew would need b's block
    accmap.exit_data(dev, [b._replace(kind=kinds.FORCE_FROM)])     # finalize
    assert s.tolist() == [0, 1, 2, 3] and user_entries(dev) == [] and plugin.live == {}
    mapping.enter_data(dev, struct(a, b))       # OpenMP: one count, the members go together
    mapping.exit_data(dev, [a._replace(kind=kinds.RELEASE)])
    assert user_entries(dev) == [] and plugin.live == {}


def test_every_kind_has_a_name():
    consts = {n: v for n, v in vars(kinds).items() if n.isupper() and isinstance(v, int)
              and not n.startswith(("FLAG_", "TARGET_")) and n != "IMPLICIT"}
    for n, v in consts.items():
        assert kinds.name(v) in consts
        if not v & kinds.FLAG_SPECIAL_BITS:     # GCC's GOMP_MAP_IMPLICIT_P: no special bits
            assert kinds.name(v | kinds.IMPLICIT).endswith(",implicit")
    assert kinds.name(16) == "USE_DEVICE_PTR_IF_PRESENT"


# -- views, ranges, implicit partial presence --------------------------------------

def test_view_found_in_parent_entry(dev, plugin):
    a = np.arange(20.0)
    target_enter_data(DEV, to=a)
    base = omp_get_mapped_ptr(a, DEV)
    v = a[5:9]
    assert omp_get_mapped_ptr(v, DEV) == base + 5 * 8
    np.testing.assert_array_equal(on_device(v), [5, 6, 7, 8])
    m = a.reshape(4, 5)[1:3]                     # a contiguous 2-D view
    assert omp_get_mapped_ptr(m, DEV) == base + 5 * 8
    write_device(a, np.arange(20.0) * 10)
    target_update(DEV, from_=v)                  # only the view's range comes back
    np.testing.assert_array_equal(a[5:9], [50, 60, 70, 80])
    np.testing.assert_array_equal(a[:5], np.arange(5.0))
    np.testing.assert_array_equal(a[9:], np.arange(9.0, 20))
    with target_data(DEV, tofrom=v):
        assert count(dev, a) == 2 and plugin.allocs == 1
    target_exit_data(DEV, release=a)
    assert user_entries(dev) == []


def test_explicit_map_extending_a_mapped_range_fails(dev, plugin):
    a = np.arange(10, dtype=np.int64)
    v = a[2:5]
    target_enter_data(DEV, to=v)
    msg = re.escape(f"device 0: trying to map {rng(a)} when {rng(a, 16, 40)} is already mapped")
    with pytest.raises(MappingError, match=msg):
        target_enter_data(DEV, to=a)
    with pytest.raises(MappingError, match=msg):
        with target_data(DEV, tofrom=a):
            pass
    w = a[4:8]                                   # overlaps the end only
    with pytest.raises(MappingError, match=re.escape(
            f"trying to map {rng(a, 32, 64)} when {rng(a, 16, 40)} is already mapped")):
        target_enter_data(DEV, to=w)
    with pytest.raises(MappingError, match=re.escape(
            f"device 0: trying to update {rng(a)} when only {rng(a, 16, 40)} is mapped")):
        target_update(DEV, from_=a)
    assert count(dev, v) == 1 and plugin.allocs == 1
    assert [(e.host_start, e.host_end) for e in user_entries(dev)] == [(addr(a) + 16, addr(a) + 40)]
    target_exit_data(DEV, release=v)


@pytest.mark.parametrize("kind", [kinds.FORCE_ALLOC, kinds.FORCE_TO, kinds.FORCE_FROM,
                                  kinds.FORCE_TOFROM])
def test_a_force_kind_on_a_present_object_fails(dev, plugin, kind):
    # libgomp: a FORCE kind finding the object mapped is an error, even inside the entry
    a = np.arange(8.0)
    with target_data(DEV, to=a):
        msg = re.escape(f"device 0: trying to map {rng(a, 8, 16)} when {rng(a)} is already "
                        f"mapped ({kinds.name(kind)} needs an object not present)")
        with pytest.raises(MappingError, match=msg):
            mapping.begin(dev, [Item(addr(a) + 8, 8, kind, a)])
        assert count(dev, a) == 1
    region = mapping.begin(dev, [Item(addr(a), a.nbytes, kind, a)])   # absent: mapped
    assert count(dev, a) == 1
    mapping.end(region)
    assert count(dev, a) is None and plugin.live == {}


def test_array_likes_are_mapped_in_place(dev):
    import array
    import tempfile
    with tempfile.NamedTemporaryFile() as f:
        mm = np.memmap(f.name, dtype=np.float64, mode="w+", shape=(4,))
        buf = array.array("d", [1.0, 2.0, 3.0])
        cbuf = (ctypes.c_int32 * 3)(7, 8, 9)

        class Iface:            # only __array_interface__ (what a foreign array type offers)
            def __init__(self, a):
                self.a, self.__array_interface__ = a, a.__array_interface__
        base = np.arange(5.0)
        for obj, size in ((mm, 32), (buf, 24), (cbuf, 12), (bytearray(b"abc"), 3),
                          (Iface(base), 40)):
            view = np.asarray(obj).view(np.uint8).reshape(-1)
            start, before = view.__array_interface__["data"][0], view.copy()
            with target_data(DEV, tofrom=obj):
                e = dev.map.find(start, start + 1)
                assert (e.host_start, e.host_end) == (start, start + size)
                assert omp_get_mapped_ptr(obj, DEV) == e.dev_start
                assert (on_device(view) == before).all()
                write_device(view, before + 1)          # what a kernel would do
            assert not omp_target_is_present(obj, DEV)
            assert (view == before + 1).all()           # copied back into the object
        del mm


def test_implicit_partial_presence_is_accepted(dev):
    a = np.arange(10.0)
    v = a[2:5]
    target_enter_data(DEV, to=v)
    pv = omp_get_mapped_ptr(v, DEV)
    region = mapping.begin(dev, [Item(addr(a), a.nbytes, kinds.TOFROM | kinds.IMPLICIT, a)])
    assert region.args == [pv - 2 * 8]          # the pointer the kernel sees for a
    assert count(dev, v) == 2 and len(user_entries(dev)) == 1
    write_device(v, [-1, -2, -3])
    v[:] = 0                                    # host changes to the mapped part
    mapping.end(region)
    # still dynamically mapped: tofrom copies nothing back yet
    np.testing.assert_array_equal(a, [0, 1, 0, 0, 0, 5, 6, 7, 8, 9])
    region = mapping.begin(dev, [Item(addr(a), a.nbytes, kinds.FROM | kinds.IMPLICIT, a)])
    target_exit_data(DEV, release=v)            # 2 -> 1
    mapping.end(region)                         # copies back only the present part
    np.testing.assert_array_equal(a, [0, 1, -1, -2, -3, 5, 6, 7, 8, 9])
    assert user_entries(dev) == []
    # explicitly, the same item fails
    target_enter_data(DEV, alloc=v)
    with pytest.raises(MappingError, match="is already mapped"):
        mapping.begin(dev, [Item(addr(a), a.nbytes, kinds.TOFROM, a)])
    target_exit_data(DEV, delete=v)


def test_implicit_map_overlapping_only_part_of_an_entry_fails(dev, plugin):
    """libgomp accepts an implicit item that contains an entry, not one that straddles it:
    the kernel would use device memory past the entry's end."""
    a = np.arange(10.0)
    target_enter_data(DEV, to=a[2:5])
    for lo, hi in ((4, 8), (0, 3)):
        with pytest.raises(MappingError, match=re.escape(
                f"trying to map {rng(a, 8 * lo, 8 * hi)} when {rng(a, 16, 40)} is already mapped")):
            mapping.begin(dev, [Item(addr(a[lo:hi]), 8 * (hi - lo), kinds.TOFROM | kinds.IMPLICIT,
                                     a, "argument 'v'")])
    assert count(dev, a[2:5]) == 1 and plugin.allocs == 1
    target_exit_data(DEV, delete=a[2:5])


def test_zero_length_arrays(dev, plugin):
    z = np.empty(0)
    with target_data(DEV, tofrom=z):             # absent zero-length object: a zero-length
        p = omp_get_mapped_ptr(z, DEV)           # entry with a device address of its own,
        assert p not in (0, addr(z))             # as libgomp makes one
        assert [(e.host_start, e.host_end) for e in user_entries(dev)] == [(addr(z), addr(z))]
        region = mapping.begin(dev, [array_item(z, kinds.TOFROM)])
        assert region.args == [p] and count(dev, z) == 2
        mapping.end(region)
    assert user_entries(dev) == [] and plugin.live == {} and plugin.allocs == 1
    a = np.arange(8.0)
    target_enter_data(DEV, to=a)
    base = omp_get_mapped_ptr(a, DEV)
    # numpy gives an empty view the address of its base, so the sections are raw
    # items here, as the C shim passes them: (address, 0 bytes)
    for lo in (0, 3, 8):                          # start, inside, one past the end
        p = addr(a) + lo * 8
        region = mapping.begin(dev, [Item(p, 0, kinds.TOFROM)])
        assert region.args == [base + lo * 8]
        mapping.end(region)
        assert omp_get_mapped_ptr(p, DEV) == base + lo * 8
        mapping.update(dev, [Item(p, 0, kinds.FROM)])            # copies nothing
    assert omp_get_mapped_ptr(addr(a) + 9 * 8, DEV) == 0         # beyond the end
    assert omp_get_mapped_ptr(a[8:8], DEV) == base
    assert count(dev, a) == 1
    mapping.enter_data(dev, [Item(addr(a) + 64, 0, kinds.TO)])   # the end of a: finds a
    assert count(dev, a) == 2
    mapping.exit_data(dev, [Item(addr(a) + 64, 0, kinds.DELETE)])
    assert user_entries(dev) == [] and plugin.live == {}


# -- errors leave the map as it was ---------------------------------------------------

def test_error_leaves_map_unchanged(dev, plugin):
    a, b, c = np.zeros(4), np.ones(4), np.full(4, 2.0)
    target_enter_data(DEV, to=a)
    before = [(e.host_start, e.host_end, e.refcount, e.dynamic_refcount) for e in dev.map]
    with pytest.raises(MappingError, match="is not present on the device"):
        target_enter_data(DEV, to=(a, b, present(c)))
    with pytest.raises(MappingError, match="is not present on the device"):
        with target_data(DEV, tofrom=(b, a, present(c))):
            raise AssertionError("the block must not run")
    after = [(e.host_start, e.host_end, e.refcount, e.dynamic_refcount) for e in dev.map]
    assert after == before
    assert plugin.allocs == plugin.frees + 1 and len(plugin.live) == 1
    target_exit_data(DEV, release=a)


def test_plugin_failure_midway_leaves_map_unchanged(dev, plugin):
    a, b, c = np.zeros(4), np.ones(40), np.full(4, 2.0)
    target_enter_data(DEV, to=a)
    plugin.fail_alloc_at = 2                     # b gets memory, c does not
    with pytest.raises(PluginError, match=r"^host device 0: alloc: out of memory for 32 bytes$"):
        target_enter_data(DEV, to=(a, b, c))
    assert count(dev, a) == 1 and count(dev, b) is None and count(dev, c) is None
    assert list(plugin.live) == [omp_get_mapped_ptr(a, DEV)]
    target_exit_data(DEV, release=a)


def test_error_in_exit_data_changes_nothing(dev):
    a, b = np.zeros(4), np.zeros(4)
    target_enter_data(DEV, to=a)
    write_device(a, [1, 2, 3, 4])
    with pytest.raises(MappingError, match="is not present"):
        target_exit_data(DEV, from_=(a, present(b)))
    assert count(dev, a) == 1
    np.testing.assert_array_equal(a, 0)
    target_exit_data(DEV, from_=a)
    np.testing.assert_array_equal(a, [1, 2, 3, 4])


def test_invalid_kinds_and_items(dev):
    a = np.arange(10.0)
    with pytest.raises(TypeError, match=re.escape(
            "pygomp: cannot map a non-contiguous array (shape (5,), strides (16,)): map its "
            "contiguous base, or a copy (np.ascontiguousarray)")):
        target_enter_data(DEV, to=a[::2])
    with pytest.raises(TypeError, match=re.escape(
            "pygomp: only arrays can be mapped (numpy arrays (and subclasses such as "
            "np.memmap), objects with __array_interface__ or the buffer protocol), not list")):
        target_enter_data(DEV, to=[[1.0, 2.0]])
    ro = np.arange(4.0)
    ro.flags.writeable = False
    for how in ({"from_": ro}, {"tofrom": ro}):
        with pytest.raises(TypeError, match=re.escape(
                "pygomp: a read-only array (shape (4,)) cannot be mapped")):
            with target_data(DEV, **how):
                pass
    with target_data(DEV, to=ro):           # nothing is copied into it: fine
        assert omp_target_is_present(ro, DEV)
    with pytest.raises(MappingError, match="not valid on target exit data"):
        mapping.exit_data(dev, [array_item(a, kinds.TO)])
    with pytest.raises(MappingError, match="not valid on target enter data"):
        mapping.enter_data(dev, [array_item(a, kinds.DELETE)])
    with pytest.raises(TypeError, match="always and present apply to to, from, tofrom and alloc"):
        target_exit_data(DEV, delete=always(a))
    assert user_entries(dev) == []


# -- lifetime of host objects, separate memory ----------------------------------------

def test_mapped_temporary_is_kept_alive(dev):
    target_enter_data(DEV, to=np.arange(1000.0) * 3)    # the only reference is the map's
    (e,) = user_entries(dev)
    ref = weakref.ref(e.keepalive)
    gc.collect()
    junk = [np.full(1000, -1.0) for _ in range(50)]     # would reuse freed memory
    assert ref() is not None
    host = np.frombuffer(ctypes.string_at(e.host_start, 8000), dtype=np.float64)
    np.testing.assert_array_equal(host, np.arange(1000.0) * 3)
    np.testing.assert_array_equal(on_device(ref()), np.arange(1000.0) * 3)
    target_exit_data(DEV, delete=ref())
    del junk, e
    gc.collect()
    assert ref() is None                                 # released with the mapping


def test_missing_from_leaves_a_stale_value(dev, initial):
    a = np.zeros(4)
    with target_data(DEV, to=a):
        write_device(a, [1, 2, 3, 4])                    # "the kernel" writes the device copy
    np.testing.assert_array_equal(a, 0)                  # host memory is separate
    with target_data(HOST, to=a):                        # the initial device: shared memory
        assert omp_get_mapped_ptr(a, HOST) == addr(a)
        assert omp_target_memcpy(addr(a), np.full(4, 9.0), 32, 0, 0, HOST, HOST) == 0
    np.testing.assert_array_equal(a, 9)
    assert initial.map is not None and user_entries(initial) == []


def test_finalize_releases_what_is_left(dev, plugin):
    a, b = np.zeros(3), np.zeros(5)
    target_enter_data(DEV, to=(a, b))
    assert len(plugin.live) == 2
    dev.finalize()
    assert plugin.live == {} and dev.state == "finalized" and len(dev.map) == 0


def test_info_messages(dev, capsys):
    import pygomp.runtime.env as env
    env._settings = settings(PYGOMP_INFO=0x1f)           # restored by the fixture
    a = np.zeros(4)
    target_enter_data(DEV, to=a)
    with target_data(DEV, from_=a):
        pass
    target_exit_data(DEV, from_=a)
    with pytest.raises(MappingError):
        target_update(DEV, to=present(np.zeros(1)))
    err = capsys.readouterr().err
    assert omp_get_mapped_ptr(a, DEV) == 0
    assert re.search(rf"pygomp: device 0: mapped {re.escape(rng(a))} \(TO\) at 0x[0-9a-f]+\n", err)
    assert f"pygomp: device 0: copy to device {rng(a)}" in err
    assert f"pygomp: device 0: {rng(a)} present in [{addr(a):#x}..{addr(a) + 32:#x})" in err
    assert f"pygomp: device 0: copy from device {rng(a)}" in err
    assert f"pygomp: device 0: removed [{addr(a):#x}..{addr(a) + 32:#x})" in err
    dump = err.split("pygomp: device 0 map at error:\n", 1)[1]
    assert "[" not in dump or "dynamic 0\n" in dump   # only images' entries, if any
    assert "refcount 1" not in dump and "dynamic 1" not in dump


# -- mapping.target with a hand-written host image -----------------------------------

KERNELS = r"""
#include <stdint.h>
#include <string.h>

double gvar[4];

void scale(void **args, const int64_t *launch)
{
    double *a = (double *) args[0];
    int64_t n = (int64_t) (intptr_t) args[1];
    double s;
    memcpy(&s, &args[2], sizeof s);
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        a[i] *= s;
}

void add_gvar(void **args, const int64_t *launch)
{
    double *out = (double *) args[0];
    for (int i = 0; i < 4; i++) {
        out[i] += gvar[i];
        gvar[i] += 1;
    }
}

void words(void **args, const int64_t *launch)
{
    int64_t *out = (int64_t *) args[0];
    out[0] = (int64_t) (intptr_t) args[1];
    out[1] = launch[0];
    out[2] = launch[1];
    out[3] = launch[2];
}

void clobber(void **args, const int64_t *launch)
{
    double *p = (double *) args[0];
    p[0] = -1;
}

void twice(void **args, const int64_t *launch)
{
    double x;
    memcpy(&x, &args[0], sizeof x);
    const double *a = (const double *) args[1];
    double *out = (double *) args[2];
    *out = 2 * x + a[0];
}
"""


@pytest.fixture(scope="module")
def kernels_so(tmp_path_factory):
    return build_so(str(tmp_path_factory.mktemp("kernels")), KERNELS, "kernels")


@pytest.fixture
def table(kernels_so):
    store = np.zeros(8)
    gvar = store[:4]                # the host copy of `double gvar[4]`, inside a bigger array
    gvar[:] = [1.0, 2.0, 3.0, 4.0]
    t = host_table(kernels_so, {"scale": 3, "add_gvar": 1, "words": 2, "clobber": 1,
                                   "twice": 3},
                   [("gvar", gvar)])
    t.gvar, t.store = gvar, store
    with registered(t):
        yield t


def word(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def item(a, kind):
    return array_item(a, kind)


def test_target_runs_a_host_image(dev, table):
    a = np.arange(100.0)
    mapping.target(dev, table.symbols["scale"],
                   [item(a, kinds.TOFROM), Item(100, 0, kinds.FIRSTPRIVATE_INT),
                    Item(word(2.5), 0, kinds.FIRSTPRIVATE_INT)])
    np.testing.assert_array_equal(a, np.arange(100.0) * 2.5)
    b = np.arange(10.0)
    mapping.target(dev, table.symbols["scale"],
                   [item(b, kinds.TO), Item(10, 0, kinds.FIRSTPRIVATE_INT),
                    Item(word(-1.0), 0, kinds.FIRSTPRIVATE_INT)])
    np.testing.assert_array_equal(b, np.arange(10.0))      # map(to:): stale host copy
    assert user_entries(dev) == []


def test_a_prepared_call_follows_the_map(dev, plugin, table, monkeypatch):
    a = np.arange(10.0)
    call = calls.Call(dev, table.symbols["scale"],
                      [item(a, kinds.TOFROM), Item(10, 0, kinds.FIRSTPRIVATE_INT),
                       Item(0, 0, kinds.FIRSTPRIVATE_INT)], slots=[2])
    call.run([word(2.0)])                       # absent: mapped, copied in and back
    np.testing.assert_array_equal(a, np.arange(10.0) * 2)
    assert user_entries(dev) == [] and plugin.live == {}
    with target_data(DEV, tofrom=a):
        copied = plugin.h2d, plugin.d2h
        call.run([word(3.0)])                   # present: counted, nothing copied
        call.run([word(0.5)])
        assert (plugin.h2d, plugin.d2h) == copied and count(dev, a) == 1
        b = np.zeros(4)
        target_enter_data(DEV, to=b)            # the map changes: looked up again
        call.run([word(2.0)])
        target_exit_data(DEV, delete=b)
        np.testing.assert_array_equal(on_device(a), np.arange(10.0) * 6)
        np.testing.assert_array_equal(a, np.arange(10.0) * 2)      # not yet copied back
    np.testing.assert_array_equal(a, np.arange(10.0) * 6)
    # unmapped by another construct while the kernel runs: the call's own count keeps
    # the entry, and its end copies back (tofrom) and removes it
    target_enter_data(DEV, to=a)
    launcher = plugin.launcher

    def exit_meanwhile(*args):
        prepare, start = launcher(*args)

        def exit_then_start(words):
            target_exit_data(DEV, from_=a)
            assert count(dev, a) == 1
            start(words)
        return prepare, exit_then_start
    monkeypatch.setattr(plugin, "launcher", exit_meanwhile)
    call.run([word(2.0)])
    assert not omp_target_is_present(a, DEV) and plugin.live == {}
    np.testing.assert_array_equal(a, np.arange(10.0) * 12)


def test_a_fresh_call_in_flight_holds_its_entries(dev, plugin, table, monkeypatch):
    """A fresh call runs without counting its entries up; an exit data that would take
    an entry's last reference while the kernel runs leaves the entry to the call, whose
    end copies it back (tofrom) and removes it.  A kernel that fails leaves the counts
    as they were, and copies nothing back."""
    a = np.arange(10.0)
    meanwhile = []                              # what runs just before the kernel
    launcher = plugin.launcher

    def hooked(*args):
        prepare, start = launcher(*args)

        def start_after(words):
            for f in meanwhile:
                f()
            start(words)
        return prepare, start_after
    monkeypatch.setattr(plugin, "launcher", hooked)
    call = calls.Call(dev, table.symbols["scale"],
                      [item(a, kinds.TOFROM), Item(10, 0, kinds.FIRSTPRIVATE_INT),
                       Item(word(2.0), 0, kinds.FIRSTPRIVATE_INT)])
    target_enter_data(DEV, to=a)
    call.run()                                  # looked up
    assert call.fresh() and count(dev, a) == 1

    def exit_data():
        host = a.copy()
        target_exit_data(DEV, from_=a)
        assert count(dev, a) == 1               # the call's
        np.testing.assert_array_equal(a, host)  # not copied back
    meanwhile.append(exit_data)
    call.run()
    assert not omp_target_is_present(a, DEV) and plugin.live == {}
    np.testing.assert_array_equal(a, np.arange(10.0) * 4)

    def fail():
        raise RuntimeError("the kernel failed")
    target_enter_data(DEV, to=a)
    meanwhile[:] = []
    call.run()
    assert call.fresh()
    meanwhile[:] = [fail]
    with pytest.raises(RuntimeError, match="the kernel failed"):
        call.run()
    assert count(dev, a) == 1
    meanwhile[:] = [exit_data, fail]            # the entry left to the failed call
    with pytest.raises(RuntimeError, match="the kernel failed"):
        call.run()
    assert not omp_target_is_present(a, DEV) and plugin.live == {}
    np.testing.assert_array_equal(a, np.arange(10.0) * 4)       # nothing copied back
    meanwhile[:] = []
    call.run()                                  # absent now: mapped, copied in and back
    np.testing.assert_array_equal(a, np.arange(10.0) * 8)
    assert user_entries(dev) == []


def test_a_prepared_call_makes_small_absent_items_each_time(dev, plugin, table,
                                                            monkeypatch):
    a = np.arange(10.0)
    call = calls.Call(dev, table.symbols["scale"],
                      [item(a, kinds.TOFROM), Item(10, 0, kinds.FIRSTPRIVATE_INT),
                       Item(0, 0, kinds.FIRSTPRIVATE_INT)], slots=[2])
    call.run([word(2.0)])                       # loads the image: through `target`
    call.run([word(2.0)])
    assert call.made == [0] and call.fresh()    # its own entry came and went
    np.testing.assert_array_equal(a, np.arange(10.0) * 4)
    assert user_entries(dev) == [] and plugin.live == {}
    a[:] = 1.0                                  # copied in anew at the next call
    call.run([word(3.0)])
    np.testing.assert_array_equal(a, np.full(10, 3.0))
    assert call.fresh() and user_entries(dev) == []
    # another construct maps it while the kernel runs: the count keeps the entry, and
    # nothing is copied back until that construct lets go
    target_enter_data(DEV, to=np.zeros(2))      # the map changes: looked up again
    launcher = plugin.launcher

    def enter_meanwhile(*args):
        prepare, start = launcher(*args)

        def enter_then_start(words):
            target_enter_data(DEV, alloc=a)
            assert count(dev, a) == 2
            start(words)
        return prepare, enter_then_start
    monkeypatch.setattr(plugin, "launcher", enter_meanwhile)
    call.run([word(2.0)])
    assert count(dev, a) == 1 and not call.fresh()
    np.testing.assert_array_equal(a, np.full(10, 3.0))
    target_exit_data(DEV, from_=a)
    np.testing.assert_array_equal(a, np.full(10, 6.0))
    assert not omp_target_is_present(a, DEV)
    for e in user_entries(dev):
        mapping.exit_data(dev, [Item(e.host_start, e.host_end - e.host_start,
                                     kinds.DELETE)])


def test_a_prepared_call_is_fresh_while_the_map_and_devices_stay(dev, plugin, table):
    a = np.arange(10.0)
    call = calls.Call(dev, table.symbols["scale"],
                      [item(a, kinds.TOFROM), Item(10, 0, kinds.FIRSTPRIVATE_INT),
                       Item(word(2.0), 0, kinds.FIRSTPRIVATE_INT)])
    assert not call.fresh()                     # nothing looked up yet
    with target_data(DEV, tofrom=a):
        call.run()
        assert call.fresh()
        b = np.zeros(4)
        target_enter_data(DEV, to=b)
        assert not call.fresh()                 # the map changed
        call.run()
        assert call.fresh()
        with installed_devices(list(devices.all_devices())):
            assert not call.fresh()             # another device list
        target_exit_data(DEV, delete=b)
    np.testing.assert_array_equal(a, np.arange(10.0) * 4)


def test_a_prepared_call_returns_its_result(dev, plugin, table):
    a = np.array([10.0])
    call = calls.Call(dev, table.symbols["twice"], [Item(0, 0, kinds.FIRSTPRIVATE_INT),
                                                    item(a, kinds.TO)], slots=[0], result=8)
    result = lambda x: struct.unpack("<d", call.run([word(x)]))[0]    # noqa: E731
    assert result(1.5) == 13.0                  # absent: through target, mapped from
    assert user_entries(dev) == [] and plugin.live == {}
    with target_data(DEV, to=a):
        assert result(2.0) == 14.0 and result(3.0) == 16.0     # present: a result slot
        assert len(dev.spare_results) == 1 and len(plugin.live) == 2
    dev.finalize()
    assert plugin.live == {} and dev.spare_results == []


def test_target_inside_target_data(dev, table):
    a = np.ones(8)
    with target_data(DEV, to=a):
        for _ in range(3):
            mapping.target(dev, table.symbols["scale"],
                           [item(a, kinds.TOFROM), Item(8, 0, kinds.FIRSTPRIVATE_INT),
                            Item(word(2.0), 0, kinds.FIRSTPRIVATE_INT)])
            np.testing.assert_array_equal(a, 1.0)           # the outer region holds it
        target_update(DEV, from_=a)
        np.testing.assert_array_equal(a, 8.0)


def test_kernel_gets_device_addresses_and_launch(dev, table):
    a = np.zeros(3)
    out = np.zeros(4, dtype=np.int64)
    target_enter_data(DEV, to=a)
    mapping.target(dev, table.symbols["words"], [item(out, kinds.FROM), item(a, kinds.TO)],
                   launch=(3, 4, 5))
    assert out.tolist() == [omp_get_mapped_ptr(a, DEV), 3, 4, 5]
    assert out[0] != addr(a)
    target_exit_data(DEV, delete=a)


def test_firstprivate_copy_is_private(dev, table):
    a = np.full(2, 5.0)
    out = np.zeros(4, dtype=np.int64)
    mapping.target(dev, table.symbols["clobber"], [Item(addr(a), a.nbytes, kinds.FIRSTPRIVATE)])
    np.testing.assert_array_equal(a, 5.0)
    assert user_entries(dev) == []
    mapping.target(dev, table.symbols["words"],
                   [item(out, kinds.TOFROM), Item(addr(a), a.nbytes, kinds.FIRSTPRIVATE)])
    assert out[0] not in (0, addr(a))


def test_declare_target_variable(dev, table, kernels_so):
    dev.ensure_init()
    gvar = table.gvar
    e = entry(dev, gvar)
    assert e is not None and e.refcount == INFINITY
    so_gvar = symbol_address(dev.plugin.image_path(table.images[0]), "gvar")
    assert omp_get_mapped_ptr(gvar, DEV) == so_gvar            # the image's own copy
    target_update(DEV, to=gvar)
    assert np.ctypeslib.as_array((ctypes.c_double * 4).from_address(so_gvar)).tolist() == [1, 2, 3, 4]
    out = np.zeros(4)
    mapping.target(dev, table.symbols["add_gvar"], [item(out, kinds.TOFROM)])
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    np.testing.assert_array_equal(gvar, [1, 2, 3, 4])          # device copy changed only
    target_update(DEV, from_=gvar)
    np.testing.assert_array_equal(gvar, [2, 3, 4, 5])
    target_enter_data(DEV, to=gvar)                           # present, never removed
    target_exit_data(DEV, delete=gvar)
    with target_data(DEV, from_=gvar):
        pass
    assert entry(dev, gvar) is e
    with pytest.raises(MappingError, match=re.escape(
            f"trying to map {rng(table.store)} when {rng(gvar)} is already mapped")):
        target_enter_data(DEV, to=table.store)


def test_target_on_initial_device_shares_memory(dev, table, initial):
    a = np.arange(4.0)
    out = np.zeros(4, dtype=np.int64)
    mapping.target(initial, table.symbols["scale"],
                   [item(a, kinds.TO), Item(4, 0, kinds.FIRSTPRIVATE_INT),
                    Item(word(3.0), 0, kinds.FIRSTPRIVATE_INT)])
    np.testing.assert_array_equal(a, np.arange(4.0) * 3)      # no copies: the host's memory
    mapping.target(initial, table.symbols["words"], [item(out, kinds.ALLOC), item(a, kinds.TO)])
    assert out[0] == addr(a)
    assert user_entries(initial) == [] and dev.plugin.allocs == 0


def test_target_unknown_function(dev, table):
    a = np.zeros(2)
    fn = images.HostSymbol("nowhere").address
    with pytest.raises(MappingError, match=re.escape(
            f"device 0: function at host address {fn:#x} is not loaded: no registered "
            f"offload image of kind 'host' lists it")):
        mapping.target(dev, fn, [item(a, kinds.TOFROM)])
    assert user_entries(dev) == [] and dev.plugin.allocs == 0


def test_target_mapping_error_does_not_run(dev, table):
    a = np.ones(2)
    out = np.zeros(4, dtype=np.int64)
    with pytest.raises(MappingError, match="is not present"):
        mapping.target(dev, table.symbols["words"],
                       [item(out, kinds.FROM), item(a, kinds.PRESENT_TO)])
    np.testing.assert_array_equal(out, 0)
    assert user_entries(dev) == [] and dev.plugin.live == {}
