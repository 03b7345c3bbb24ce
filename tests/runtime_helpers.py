"""Shared helpers for the runtime-core tests (not a conftest: import what you use).

- `CountingHostPlugin`: the real host plugin, with its allocations, frees, inits and
  image loads counted (and a hook to slow image loading down for race tests).
- `fresh_device()`: a new `Device` on its own plugin instance, independent of the
  process-wide device list and of PYGOMP_DEVICES.
- `installed_devices(...)`: a context manager that installs a device list (and
  settings) as the process-wide one, and restores the previous one after.
- `build_so()`: compile a small C file into a shared object with gcc.
- `host_table()`: an `OffloadImage` for a hand-written host image.
- `host_image()`: the `Image` of a shared object.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import subprocess
import threading
import time

import numpy as np
import pytest

from pygomp.runtime import devices, env, images
from pygomp.runtime.devices import Device
from pygomp.runtime.images import HostSymbol, OffloadImage
from pygomp.runtime.mapping import INFINITY
from pygomp.runtime.plugin import Image, KernelInfo
from pygomp.plugins.host.plugin import HostPlugin


class CountingHostPlugin(HostPlugin):
    """The real host plugin; it counts what it does and remembers live allocations."""

    def __init__(self, load_delay=0.0):
        super().__init__()
        self.live = {}              # device address -> size
        self.allocs = self.frees = self.inits = self.finis = 0
        self.loads = self.unloads = 0
        self.h2d = self.d2h = 0     # bytes copied each way
        self.load_delay = load_delay
        self.fail_alloc_at = None   # the n-th alloc (1-based) from now on reports no memory
        self._count_lock = threading.Lock()

    def _alloc_impl(self, dev, size):
        with self._count_lock:
            if self.fail_alloc_at is not None:
                self.fail_alloc_at -= 1
                if self.fail_alloc_at == 0:
                    self.fail_alloc_at = None
                    return 0
        addr = super()._alloc_impl(dev, size)
        if addr:
            with self._count_lock:
                self.allocs += 1
                self.live[addr] = size
        return addr

    def _free_impl(self, dev, addr):
        with self._count_lock:
            assert addr in self.live, f"free of {addr:#x}, which this plugin did not allocate"
            del self.live[addr]
            self.frees += 1
        super()._free_impl(dev, addr)

    def _host2dev_impl(self, dev, dst, src, size):
        with self._count_lock:
            self.h2d += size
        super()._host2dev_impl(dev, dst, src, size)

    def _dev2host_impl(self, dev, dst, src, size):
        with self._count_lock:
            self.d2h += size
        super()._dev2host_impl(dev, dst, src, size)

    def _init_impl(self, dev):
        with self._count_lock:
            self.inits += 1
        super()._init_impl(dev)

    def _fini_impl(self, dev):
        with self._count_lock:
            self.finis += 1
        super()._fini_impl(dev)

    def _load_image_impl(self, dev, image):
        if self.load_delay:
            time.sleep(self.load_delay)
        loaded = super()._load_image_impl(dev, image)
        with self._count_lock:
            self.loads += 1             # successful loads only
        return loaded

    def _unload_image_impl(self, dev, image):
        with self._count_lock:
            self.unloads += 1
        super()._unload_image_impl(dev, image)


def fresh_device(number=0, plugin=None, is_initial=False) -> Device:
    plugin = plugin or CountingHostPlugin()
    return Device(number, plugin, 0, plugin.devices()[0], is_initial=is_initial)


def settings(**environ) -> env.Settings:
    """Settings parsed from exactly these variables (nothing from os.environ)."""
    environ = {k: str(v) for k, v in environ.items()}
    environ.setdefault("PYGOMP_CACHE_DIR", "/tmp/pygomp-test-cache")
    return env._parse(environ)


@contextlib.contextmanager
def installed_devices(devs, settings_=None):
    """Make ``devs`` (offload devices, then the initial device) the process-wide list."""
    devices.all_devices()              # the real discovery once: registers the listener
    saved = (devices._devices, devices._default, env._settings)
    devices._devices = list(devs)
    devices._default = threading.local()
    if settings_ is not None:
        env._settings = settings_
    try:
        yield devs
    finally:
        devices._devices, devices._default, env._settings = saved


def addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


_SO_CACHE = {}


def build_so(tmpdir, source: str, name="image") -> str:
    """gcc -shared -fPIC -fopenmp; one build per distinct source in a test session."""
    key = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = _SO_CACHE.get(key)
    if path and os.path.exists(path):
        return path
    c = os.path.join(tmpdir, f"{name}_{key}.c")
    path = os.path.join(tmpdir, f"lib{name}_{key}.so")
    with open(c, "w") as f:
        f.write(source)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-fopenmp", c, "-o", path],
                   check=True, capture_output=True, text=True)
    _SO_CACHE[key] = path
    return path


def host_image(path, functions, variables=(), name="test image") -> Image:
    """The image of a shared object: ``functions`` maps each kernel's symbol to its
    number of argument words, ``variables`` are (symbol, size) pairs."""
    with open(path, "rb") as f:
        code = f.read()
    return Image("host", code, tuple(KernelInfo(n, args=("p",) * words)
                                     for n, words in functions.items()),
                 tuple(variables), name=name)


def host_table(path, functions, variables=(), name="test image"):
    """An OffloadImage for a host image: ``functions`` maps symbol names (each gets a
    HostSymbol) to their number of argument words, ``variables`` are (symbol name, host
    numpy array) pairs."""
    syms = [HostSymbol(f) for f in functions]
    table = OffloadImage(functions=[s.address for s in syms],
                         variables=[(addr(a), a.nbytes) for _, a in variables],
                         images=(host_image(path, functions,
                                            [(n, a.nbytes) for n, a in variables], name),),
                         name=name, keepalive=syms + [a for _, a in variables])
    table.symbols = {s.name: s.address for s in syms}
    return table


@contextlib.contextmanager
def registered(table):
    images.register(table)
    try:
        yield table
    finally:
        if table in images.tables():
            images.unregister(table)


def dev_read(dev, dev_addr, like: np.ndarray) -> np.ndarray:
    """Read ``like.nbytes`` bytes of device memory into a new array shaped like ``like``."""
    out = np.empty_like(like)
    dev.plugin.dev2host(dev.local, addr(out), dev_addr, out.nbytes)
    return out


def user_entries(dev):
    """The map's entries that data mapping made (not images' functions and variables)."""
    return [e for e in dev.map if e.refcount != INFINITY]


def symbol_address(path, name) -> int:
    """The address of a symbol of a loaded shared object (dlopen gives the same copy)."""
    return ctypes.cast(getattr(ctypes.CDLL(path), name), ctypes.c_void_p).value


# -- fixtures (import them into a test module by name) ----------------------------

@pytest.fixture
def plugin():
    return CountingHostPlugin()


@pytest.fixture
def dev(plugin):
    d = fresh_device(0, plugin)
    initial = fresh_device(1, plugin, is_initial=True)
    with installed_devices([d, initial], settings()):
        yield d
        d.finalize()
        initial.finalize()
    # whatever a test did, every device allocation was given back
    assert plugin.live == {}, f"leaked device memory: {plugin.live}"
    assert plugin.allocs == plugin.frees
