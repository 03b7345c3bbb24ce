"""Offload images: the registry, lazy loading at first use, loading into initialized
devices at once, unregistering, declare-target variables, missing functions."""
import ctypes
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pygomp import MappingError, OffloadError, PluginError, target_enter_data, target_exit_data
from pygomp.runtime import images, kinds, mapping
from pygomp.runtime.images import HostSymbol, OffloadImage
from pygomp.runtime.mapping import INFINITY, Item
from pygomp.runtime.plugin import Image, KernelInfo
from pygomp.plugins.host.plugin import HostPlugin

from runtime_helpers import (CountingHostPlugin, addr, build_so, fresh_device, host_table,
                             installed_devices, registered, settings, symbol_address,
                             user_entries)

SOURCE = r"""
#include <stdint.h>
int64_t counter[2];
void bump(void **args, const int64_t *launch)
{
    int64_t *out = (int64_t *) args[0];
    counter[0] += 1;
    out[0] = counter[0];
}
void twice(void **args, const int64_t *launch)
{
    int64_t *a = (int64_t *) args[0];
    a[0] *= 2;
}
"""


@pytest.fixture(scope="module")
def so(tmp_path_factory):
    return build_so(str(tmp_path_factory.mktemp("images")), SOURCE, "images")


@pytest.fixture
def plugin():
    return CountingHostPlugin()


@pytest.fixture
def devs(plugin):
    d = fresh_device(0, plugin)
    initial = fresh_device(1, plugin, is_initial=True)
    with installed_devices([d, initial], settings()):
        yield d, initial
        d.finalize()
        initial.finalize()
    assert plugin.live == {}
    assert plugin.loads == plugin.unloads, "an image was left loaded"


def host_images():
    return [t for t in images.tables() if any(i.target == "host" for i in t.images)]


def run(dev, table, name, *arrays):
    mapping.target(dev, table.symbols[name], [Item(addr(a), a.nbytes, kinds.TOFROM, a)
                                             for a in arrays])


def test_registered_before_init_loads_at_first_use(devs, plugin, so):
    dev, initial = devs
    counter = np.zeros(2, dtype=np.int64)
    with registered(host_table(so, {"bump": 1, "twice": 1}, [("counter", counter)])) as t:
        assert dev.state == "uninitialized" and plugin.inits == 0 and plugin.loads == 0
        assert dev.map.find(t.symbols["bump"], t.symbols["bump"] + 1) is None
        out = np.zeros(1, dtype=np.int64)
        run(dev, t, "bump", out)                       # first use: init, then load
        assert dev.state == "initialized" and plugin.inits == 1
        assert id(t) in dev.loaded
        assert plugin.loads == len(host_images())      # every host table, this one included
        assert out[0] == 1
        run(dev, t, "bump", out)
        assert out[0] == 2 and plugin.inits == 1 and plugin.loads == len(host_images())
        f = dev.map.find(t.symbols["bump"], t.symbols["bump"] + 1)
        assert f.refcount == INFINITY and f.dev_start == symbol_address(HostPlugin.image_path(t.images[0]), "bump")
        assert initial.state == "uninitialized"        # the initial device was not used


def test_registered_after_init_loads_at_once(devs, plugin, so):
    dev, initial = devs
    dev.ensure_init()
    initial.ensure_init()
    loads = plugin.loads
    counter = np.zeros(2, dtype=np.int64)
    with registered(host_table(so, {"bump": 1, "twice": 1}, [("counter", counter)])) as t:
        assert plugin.loads == loads + 2               # both initialized devices, at once
        assert id(t) in dev.loaded and id(t) in initial.loaded
        fn = t.symbols["twice"]
        twice = symbol_address(HostPlugin.image_path(t.images[0]), "twice")
        assert mapping.function_address(dev, fn) == twice
        assert mapping.function_address(initial, fn) == twice
        # the variable: on the offload device only (the initial device uses the host's)
        assert dev.map.find(addr(counter), addr(counter)).refcount == INFINITY
        assert initial.map.find(addr(counter), addr(counter)) is None
        a = np.array([21], dtype=np.int64)
        run(dev, t, "twice", a)
        assert a[0] == 42
    # unregistered: the entries are gone from both maps, the image unloaded
    assert id(t) not in dev.loaded and id(t) not in initial.loaded
    assert dev.map.find(fn, fn + 1) is None and initial.map.find(fn, fn + 1) is None
    assert dev.map.find(addr(counter), addr(counter)) is None
    assert plugin.unloads == 2
    with pytest.raises(MappingError, match=re.escape(
            f"device 0: function at host address {fn:#x} is not loaded: no registered "
            f"offload image of kind 'host' lists it")):
        run(dev, t, "twice", a)


def test_unregister_before_init_never_loads(devs, plugin, so):
    dev, _ = devs
    t = host_table(so, {"bump": 1})
    images.register(t)
    images.unregister(t)
    assert t not in images.tables()
    dev.ensure_init()
    assert id(t) not in dev.loaded and plugin.loads == len(host_images())
    with pytest.raises(ValueError):
        images.unregister(t)                           # not registered (any more)


def test_declare_target_variable_in_map(devs, so):
    dev, _ = devs
    counter = np.array([10, 20], dtype=np.int64)
    with registered(host_table(so, {"bump": 1}, [("counter", counter)])) as t:
        dev.ensure_init()
        e = dev.map.find(addr(counter), addr(counter) + 16)
        assert (e.host_start, e.host_end) == (addr(counter), addr(counter) + 16)
        assert e.refcount == INFINITY and e.alloc == 0
        assert e.dev_start == symbol_address(HostPlugin.image_path(t.images[0]), "counter")
        # enter/exit data change nothing; update moves the values both ways
        target_enter_data(0, to=counter)
        target_exit_data(0, delete=counter)
        assert dev.map.find(addr(counter), addr(counter)) is e
        mapping.update(dev, [Item(addr(counter), 16, kinds.TO)])
        dev_counter = (ctypes.c_int64 * 2).from_address(e.dev_start)
        assert list(dev_counter) == [10, 20]
        out = np.zeros(1, dtype=np.int64)
        run(dev, t, "bump", out)
        assert out[0] == 11 and counter.tolist() == [10, 20]
        mapping.update(dev, [Item(addr(counter), 16, kinds.FROM)])
        assert counter.tolist() == [11, 20]
        dev.finalize()                                 # finalize unloads, keeps nothing
        assert len(dev.map) == 0 and dev.loaded == {}


def test_function_missing_on_a_device(devs, plugin, so):
    dev, _ = devs
    # a table with no image of this device's kind
    k = HostSymbol("elsewhere")
    t = OffloadImage(functions=[k.address], variables=[],
                     images=(Image("opencl", b"", (KernelInfo("elsewhere"),)),),
                     name="opencl only", keepalive=[k])
    with registered(t):
        dev.ensure_init()
        assert id(t) not in dev.loaded
        out = np.zeros(1)
        with pytest.raises(MappingError, match=re.escape(
                f"device 0: function at host address {k.address:#x} is not loaded: no "
                f"registered offload image of kind 'host' lists it")):
            mapping.target(dev, k.address, [Item(addr(out), 8, kinds.TOFROM, out)])
        assert user_entries(dev) == [] and plugin.allocs == 0


def test_symbol_missing_in_the_image(devs, plugin, so):
    dev, _ = devs
    dev.ensure_init()
    t = host_table(so, {"bump": 1, "no_such_kernel": 1})
    with pytest.raises(PluginError, match=r"^host device 0: load_image failed: OSError: "
                                          r"symbol 'no_such_kernel' not found"):
        with registered(t):
            pass
    assert id(t) not in dev.loaded
    assert dev.map.find(t.symbols["bump"], t.symbols["bump"] + 1) is None


def test_image_colliding_with_mapped_data_is_rolled_back(devs, plugin, so):
    dev, _ = devs
    a = np.zeros(4)
    target_enter_data(0, to=a)
    # a table whose "function" host address lies inside mapped data
    t = OffloadImage(functions=[addr(a) + 8], variables=[],
                     images=host_table(so, {"bump": 1}).images, name="clash")
    unloads = plugin.unloads
    with pytest.raises(OffloadError, match=re.escape(
            f"device 0: image 'clash': [{addr(a) + 8:#x}..{addr(a) + 9:#x}) overlaps "
            f"[{addr(a):#x}..{addr(a) + 32:#x}) in the map")):
        with registered(t):
            pass
    assert id(t) not in dev.loaded and plugin.unloads == unloads + 1
    assert [(e.host_start, e.host_end) for e in dev.map
            if e.refcount != INFINITY] == [(addr(a), addr(a) + 32)]
    target_exit_data(0, delete=a)


def test_table_counts_checked(devs, so):
    dev, _ = devs
    dev.ensure_init()
    t = host_table(so, {"bump": 1, "twice": 1})
    t.functions = t.functions[:1]                  # the table lists 1, the image 2
    with pytest.raises(PluginError, match="load_image: image has 2 functions and 0 variables, "
                                          "the table 1 and 0"):
        with registered(t):
            pass


def test_unloading_openmp_images_keeps_libgomp(tmp_path):
    """Unloading an image built with -fopenmp must not unload libgomp under its idle
    worker threads: load, run a parallel kernel, unload, thirty times, in a fresh
    process that does not hold libgomp itself."""
    so_path = build_so(str(tmp_path), r"""
        #include <stdint.h>
        void par(void **args, const int64_t *launch)
        {
            double *a = (double *) args[0];
            #pragma omp parallel for
            for (int i = 0; i < 1000; i++) a[i] += 1;
        }""", "par")
    script = textwrap.dedent(f"""
        import numpy as np
        from pygomp.runtime import images, kinds, mapping
        from pygomp.runtime.devices import Device
        from pygomp.runtime.images import HostSymbol, OffloadImage
        from pygomp.runtime.mapping import Item
        from pygomp.runtime.plugin import Image, KernelInfo
        from pygomp.plugins.host.plugin import HostPlugin
        p = HostPlugin()
        a = np.zeros(1000)
        for i in range(30):
            d = Device(0, p, 0, p.devices()[0])
            k = HostSymbol("par")
            code = open({so_path!r}, "rb").read()
            image = Image("host", code, (KernelInfo("par", args=("p",)),))
            t = images.register(OffloadImage([k.address], [], (image,)))
            d.ensure_init()
            mapping.target(d, k.address, [Item(a.ctypes.data, a.nbytes, kinds.TOFROM, a)])
            d.finalize()
            images.unregister(t)
        assert (a == 30).all()
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout == "ok\n", (
        f"exit status {r.returncode} (-11: segfault)\n{r.stderr[-2000:]}")
