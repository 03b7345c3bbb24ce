"""Devices: discovery through plugins, numbering, lazy initialization, images.

Offload devices are numbered 0..n-1 in the order of PYGOMP_DEVICES (unset: every device
of every installed plugin, GPUs first, the host plugin's device last); the initial
device, number n, is the host itself: shared memory, no mapping.
"""
from __future__ import annotations

import atexit
import threading
from importlib.metadata import entry_points

from . import env, images
from .intervals import IntervalMap
from .mapping import INFINITY, Entry, table_dump
from .plugin import API_VERSION, DeviceInfo, PluginError

PLUGIN_GROUP = "pygomp.plugins"
INITIAL_INFO = DeviceInfo(name="host", kind="cpu", properties={"memory": "shared (no mapping)"})


class OffloadError(RuntimeError):
    """A device cannot be used as asked (OMP_TARGET_OFFLOAD, device numbers)."""


class Device:
    """One device number: its plugin, state, lock, interval map and loaded images."""

    def __init__(self, number, plugin, local, info, is_initial=False):
        self.number = number
        self.plugin = plugin
        self.local = local              # the plugin's own device number
        self.info = info
        self.is_initial = is_initial
        self.target = plugin.target     # the image kind this device loads
        self.state = "uninitialized"
        self.lock = threading.RLock()
        self.map = IntervalMap()
        self.loaded = {}                # id(table) -> (table, [entries])

    def __repr__(self):
        kind = "initial device" if self.is_initial else self.plugin.name
        return f"<device {self.number}: {kind} {self.info.name!r}, {self.state}>"

    def ensure_init(self):
        if self.state == "initialized":
            return
        with self.lock:
            if self.state == "finalized":
                raise OffloadError(f"device {self.number} is finalized")
            if self.state == "uninitialized":
                if not self.is_initial:
                    self.plugin.init_device(self.local)
                for table in images.tables():
                    self._load(table)
                self.state = "initialized"     # last: other threads test it unlocked

    def _load(self, table):
        if self.target not in table.images or id(table) in self.loaded:
            return
        got = self.plugin.load_image(self.local, table.images[self.target],
                                     len(table.functions), len(table.variables))
        entries = [Entry(h, h + 1, d, refcount=INFINITY)
                   for h, d in zip(table.functions, got.functions)]
        if not self.is_initial:     # the initial device uses host variables as they are
            entries += [Entry(h, h + size, d, refcount=INFINITY)
                        for (h, size), d in zip(table.variables, got.variables)]
        for i, e in enumerate(entries):
            try:
                self.map.insert(e)
            except ValueError as err:
                for done in entries[:i]:
                    self.map.remove(done)
                self.plugin.unload_image(self.local, table.images[self.target])
                raise OffloadError(f"device {self.number}: image {table.name!r}: {err}") from None
        self.loaded[id(table)] = (table, entries)

    def _unload(self, table):
        table_entries = self.loaded.pop(id(table), None)
        if table_entries is not None:
            for e in table_entries[1]:
                self.map.remove(e)
            self.plugin.unload_image(self.local, table.images[self.target])

    def finalize(self):
        """Release what is still mapped (reported under PYGOMP_INFO) and the images."""
        with self.lock:
            if self.state != "initialized":
                self.state = "finalized"
                return
            left = [e for e in self.map if e.refcount != INFINITY]
            if left:
                env.info(env.INFO_TABLE, f"device {self.number} still has {len(left)} "
                                         f"mapping(s) at exit:\n{table_dump(self)}")
            for e in left:
                self.map.remove(e)
                if e.alloc:
                    self.plugin.free(self.local, e.alloc)
            for table, _ in list(self.loaded.values()):
                self._unload(table)
            if not self.is_initial:
                self.plugin.fini_device(self.local)
            self.state = "finalized"


# -- discovery --------------------------------------------------------------------

_lock = threading.Lock()
_plugins = None          # name -> Plugin instance, or the exception that loading raised
_devices = None          # offload devices, then the initial device last
_default = threading.local()     # omp_set_default_device, per thread


def plugins() -> dict:
    """Installed plugins by name (an entry whose import failed holds its exception)."""
    global _plugins
    if _plugins is None:
        found = {}
        for ep in entry_points(group=PLUGIN_GROUP):
            try:
                cls = ep.load()
                if getattr(cls, "api_version", None) != API_VERSION:
                    raise OffloadError(f"it implements plugin API version "
                                       f"{getattr(cls, 'api_version', '?')}, pygomp needs "
                                       f"version {API_VERSION}")
                found[ep.name] = cls()
            except Exception as e:      # a plugin whose library is missing is skipped
                found[ep.name] = e
        _plugins = found
    return _plugins


def _plugin(name):
    p = plugins().get(name)
    if p is None:
        raise OffloadError(f"PYGOMP_DEVICES: unknown plugin {name!r}; installed plugins: "
                           f"{', '.join(sorted(plugins())) or 'none'}")
    if isinstance(p, Exception):
        raise OffloadError(f"PYGOMP_DEVICES: plugin {name!r} cannot be loaded: {p}")
    return p


def _discover(s: env.Settings):
    chosen = []                          # (plugin, local number)
    if s.target_offload == "disabled":
        pass
    elif s.devices is None:
        for name, p in plugins().items():
            if isinstance(p, Exception):
                continue
            try:
                chosen += [(p, i) for i in range(p.num_devices())]
            except Exception as e:
                env.info(env.INFO_TABLE, f"plugin {name} finds no devices: {e}")
        chosen.sort(key=lambda d: (d[0].name == "host", d[0].devices()[d[1]].kind != "gpu"))
    else:
        for spec in filter(None, (w.strip() for w in s.devices.split(","))):
            name, _, selector = spec.partition(":")
            p = _plugin(name)
            picked = p.select(selector)
            if not picked:
                listing = "; ".join(f"{i}: {d.name} ({d.platform})"
                                    for i, d in enumerate(p.devices())) or "no devices"
                raise OffloadError(f"PYGOMP_DEVICES: {spec!r} matches no device; "
                                   f"{name} has {listing}")
            chosen += [(p, i) for i in picked if (p, i) not in chosen]
    devs = [Device(n, p, i, p.devices()[i]) for n, (p, i) in enumerate(chosen)]
    devs.append(Device(len(devs), _plugin("host"), 0, INITIAL_INFO, is_initial=True))
    return devs


def all_devices() -> list[Device]:
    """Offload devices then the initial device (discovered once, initialized lazily)."""
    global _devices
    if _devices is None:
        with _lock:
            if _devices is None:
                devs = _discover(env.settings())
                images.add_listener(_on_table)
                atexit.register(finalize_all)
                _devices = devs
    return _devices


def num_devices() -> int:
    return len(all_devices()) - 1


def initial() -> Device:
    return all_devices()[-1]


def get_default() -> int:
    n = getattr(_default, "value", None)
    if n is not None:
        return n
    s = env.settings()
    if s.target_offload == "mandatory" and num_devices() == 0:
        return -2           # OpenMP 5.2: omp_invalid_device, so that offloading fails
    return s.default_device


def set_default(n: int) -> None:
    _default.value = n


def resolve(device: int | None = None) -> Device:
    """The device a construct runs on, initialized; honours OMP_TARGET_OFFLOAD."""
    devs = all_devices()
    s = env.settings()
    n = len(devs) - 1
    number = get_default() if device is None else device
    if number == n or number == -1 or s.target_offload == "disabled":   # -1: omp_initial_device
        return _ready(devs[-1])
    if not 0 <= number < n:
        if s.target_offload == "mandatory":
            raise OffloadError("OMP_TARGET_OFFLOAD is set to MANDATORY, but only the host "
                               "device is available" if n == 0 else
                               f"OMP_TARGET_OFFLOAD is set to MANDATORY, but device "
                               f"{number} not found (devices 0..{n - 1} exist)")
        if device is not None and number < -1:
            raise OffloadError(f"invalid device number {number}")
        env.info(env.INFO_LAUNCH, f"device {number} not found: host fallback")
        return _ready(devs[-1])
    dev = devs[number]
    try:
        dev.ensure_init()
    except PluginError as e:
        if s.target_offload == "mandatory":
            raise OffloadError(f"OMP_TARGET_OFFLOAD is set to MANDATORY, but device "
                               f"{number} cannot be used for offloading: {e}") from e
        env.info(env.INFO_LAUNCH, f"device {number} cannot be initialized ({e}): host fallback")
        return _ready(devs[-1])
    return dev


def _ready(dev):
    dev.ensure_init()
    return dev


def _on_table(event, table):
    for dev in all_devices():
        with dev.lock:                  # waits for an initialization under way
            if dev.state == "initialized":
                dev._load(table) if event == "register" else dev._unload(table)


def finalize_all():
    for dev in _devices or ():
        try:
            dev.finalize()
        except Exception as e:           # at exit: report, keep releasing the others
            import sys
            print(f"pygomp: finalizing device {dev.number}: {e}", file=sys.stderr)
