"""Devices: discovery through plugins, numbering, lazy initialization, images.

Offload devices are numbered 0..n-1 in the order of PYGOMP_DEVICES (unset: every device
of every installed plugin, GPUs first, the host plugin's device last, or in a C program
those that run its code natively first (`native_first`); ``none``: no offload device);
the initial device, number n, is the host itself: shared memory, no mapping.  Only
devices that work are numbered, one for each piece of hardware (`Plugin.choose`); a
broken device that PYGOMP_DEVICES names is numbered, and its first use is an
OffloadError that says why it does not work.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import operator
import os
import sys
import _thread          # threading's own locks: importing threading takes 0.5 ms
import warnings

from ..errors import PygompError
from . import cache, env, images, interrupt, mapping
from .intervals import IntervalMap
from .contract import API_VERSION, DeviceInfo, PluginError

PLUGIN_GROUP = "pygomp.plugins"
INITIAL_INFO = DeviceInfo(name="host", kind="cpu", properties={"memory": "shared (no mapping)"})


class OffloadError(PygompError, RuntimeError):
    """A device cannot be used as asked (OMP_TARGET_OFFLOAD, device numbers)."""


class OffloadWarning(RuntimeWarning):
    """A construct runs on the initial device instead of the device it names."""


_lock_maker = None      # what a face registered to make devices' locks (`lock_maker`)


def lock_maker(make) -> None:
    """Devices found from now on get ``make(device)`` as their lock (libpygomp.so
    registers a `calls.GateLock` for its host devices: C runs regions there too)."""
    global _lock_maker
    _lock_maker = make


def new_lock(dev):
    """A device's lock: the registered maker's, else a plain RLock."""
    return _thread.RLock() if _lock_maker is None else _lock_maker(dev)


class Device:
    """One device number: its plugin, state, lock, interval map (read and changed by
    `mapping` only) and loaded images."""

    def __init__(self, number, plugin, local, info, is_initial=False):
        self.number = number
        self.plugin = plugin
        self.local = local              # the plugin's own device number
        self.info = info
        self.is_initial = is_initial
        self.target = plugin.target     # the image kind this device loads
        self.state = "uninitialized"
        self.lock = new_lock(self)
        self.map = IntervalMap()
        self.loaded = {}                # id(table) -> (table, image, [entries])
        self.stood_in_for = set()       # the initial device: numbers it fell back for
        self.spare_results = []         # device memory for kernel results (calls.Call)
        self._identity = None

    def __repr__(self):
        kind = "initial device" if self.is_initial else self.plugin.name
        return f"<device {self.number}: {kind} {self.info.name!r}, {self.state}>"

    @property
    def identity(self) -> str:
        """The plugin's identity of this device: which compiled images it can load."""
        if self._identity is None:
            self._identity = self.plugin.identity(self.local)
        return self._identity

    def ensure_init(self):
        if self.state == "initialized":
            return
        with self.lock:
            if self.state == "finalized":
                raise OffloadError(f"device {self.number} is finalized")
            if self.state == "uninitialized":
                if self.info.problem:       # PYGOMP_DEVICES named a broken device
                    raise OffloadError(f"device {self.number} ({self.plugin.name} "
                                       f"{self.local}: {self.info.name}) does not work: "
                                       f"{self.info.problem}")
                if not self.is_initial:
                    self.plugin.init_device(self.local)
                for table in images.tables():
                    self._load(table)
                self.state = "initialized"     # last: other threads test it unlocked

    def _load(self, table):
        if id(table) in self.loaded:
            return
        image = table.image_for(self.target, self.identity)
        if image is None:
            return
        got = self.plugin.load_image(self.local, image, len(table.functions),
                                     len(table.variables))
        try:
            entries = mapping.add_image(self, table, got)
        except ValueError as err:
            self.plugin.unload_image(self.local, image)
            raise OffloadError(f"device {self.number}: image {table.name!r}: {err}") from None
        self.loaded[id(table)] = (table, image, entries)

    def _unload(self, table):
        loaded = self.loaded.pop(id(table), None)
        if loaded is not None:
            mapping.remove_entries(self, loaded[2])
            self.plugin.unload_image(self.local, loaded[1])

    def finalize(self):
        """Release what is still mapped (reported under PYGOMP_INFO) and the images."""
        with self.lock:
            if self.state != "initialized":
                self.state = "finalized"
                return
            mapping.release_all(self)
            for table, _, _ in list(self.loaded.values()):
                self._unload(table)
            if not self.is_initial:
                self.plugin.fini_device(self.local)
            self.state = "finalized"


# -- discovery --------------------------------------------------------------------

_lock = _thread.allocate_lock()
_devices = None          # offload devices, then the initial device last
_native = False          # a C program's order (`native_first`)
_default = _thread._local()     # omp_set_default_device, per thread


def native_first() -> None:
    """With PYGOMP_DEVICES unset, number first the devices that run the program's code
    natively: those of a plugin whose target a registered table has images for (gcc's
    nvptx images: CUDA's GPUs), then the host plugin's, which runs gcc's host code; the
    others (an OpenCL device runs a C region's host code with host copies of its
    data) come after them.  libpygomp.so calls it when it started Python (a C program),
    before the devices are found."""
    global _native
    _native = True


def _order(native):
    """The sort key of (plugin, local number) when PYGOMP_DEVICES is unset: GPUs first,
    the host plugin last; with ``native`` (a set of targets), devices of those targets
    and the host plugin's ahead of the others."""
    def key(d):
        p = d[0]
        foreign = native is not None and p.name != "host" and p.target not in native
        return foreign, p.name == "host", p.devices()[d[1]].kind != "gpu"
    return key


def plugins() -> dict:
    """Installed plugins by name (an entry whose import failed holds its exception)."""
    return {name: plugin(name) for name in _entry_points()}


def plugin(name: str):
    """The installed plugin called ``name``, loaded on first use (only the plugins a
    program uses are imported), or the exception that loading it raised; None if no
    plugin has that name."""
    p = _loaded.get(name)
    if p is None:
        value = _entry_points().get(name)
        if value is None:
            return None
        try:
            cls = _load(value)
            if getattr(cls, "api_version", None) != API_VERSION:
                raise OffloadError(f"it implements plugin API version "
                                   f"{getattr(cls, 'api_version', '?')}, pygomp needs "
                                   f"version {API_VERSION}")
            p = _instance(cls)
        except Exception as e:          # a plugin whose library is missing is skipped
            p = e
        p = _loaded.setdefault(name, p)
    return p


_loaded = {}


def _instance(cls):
    """A new instance of a plugin class, traced under PYGOMP_PROFILE."""
    p = cls()
    profile = env.settings().profile
    if profile:
        from . import trace
        trace.start(profile)
        trace.instrument(p)
    return p


@functools.lru_cache(maxsize=1)
def _entry_points():
    """The values of the plugin group's entry points by name.  Reading every installed
    distribution's metadata takes milliseconds, so the answer is kept in the disk cache
    with a stamp of each directory on sys.path (its modification time, and whether it
    holds distributions), and used while they still hold: installing or removing a
    distribution changes its directory's time; a directory without distributions whose
    time changed is listed again, to see whether it got one."""
    k = cache.key(PLUGIN_GROUP, "stamps", sys.path)
    text = cache.get(k, ".entrypoints")     # a stamp per sys.path entry, a blank line,
    if text is not None:                    # a line per entry point: name, tab, value
        stamps, _, lines = text.decode().partition("\n\n")
        stamps = stamps.split("\n")
        if len(stamps) == len(sys.path) and all(
                _unchanged(d, stamp) for d, stamp in zip(sys.path, stamps)):
            return dict(line.split("\t", 1) for line in lines.splitlines())
    stamps = [_stamp(d) for d in sys.path]  # before the scan: a change during it misses
    from importlib.metadata import entry_points
    found = {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP)}
    try:
        cache.put(k, ("\n".join(stamps) + "\n\n" + "".join(
            f"{n}\t{v}\n" for n, v in found.items())).encode(), ".entrypoints")
    except OSError:
        pass
    return found


def _stamp(d):
    """``"<mtime_ns> <1 if it holds distributions, else 0>"`` of a sys.path directory,
    "-" for one that cannot be read."""
    mtime = _mtime(d)
    return "-" if mtime is None else f"{mtime} {int(_has_dists(d))}"


def _unchanged(d, stamp):
    """Whether directory ``d`` is as its stamp says, for what the plugins are."""
    now = _mtime(d)
    if stamp == "-":
        return now is None
    mtime, dists = stamp.split(" ")
    return now == int(mtime) or dists == "0" and not _has_dists(d)


def _mtime(d):
    try:
        return os.stat(d or ".").st_mtime_ns
    except OSError:
        return None


def _has_dists(d):
    try:
        return any(n.endswith((".dist-info", ".egg-info")) for n in os.listdir(d or "."))
    except OSError:
        return False


def _load(value: str):
    """The object an entry point's value names: ``module:attribute`` (extras ignored)."""
    module, _, attr = value.split("[")[0].partition(":")
    obj = importlib.import_module(module.strip())
    for name in filter(None, attr.strip().split(".")):
        obj = getattr(obj, name)
    return obj


def _plugin(name):
    p = plugin(name)
    if p is None:
        raise OffloadError(f"PYGOMP_DEVICES: unknown plugin {name!r}; installed plugins: "
                           f"{', '.join(sorted(_entry_points())) or 'none'}")
    if isinstance(p, Exception):
        raise OffloadError(f"PYGOMP_DEVICES: plugin {name!r} cannot be loaded: {p}")
    return p


def _discover(s: env.Settings):
    chosen = []                          # (plugin, local number)
    if s.target_offload == "disabled" or s.devices == "none":
        pass
    elif s.devices is None:
        for name, p in plugins().items():
            if isinstance(p, Exception):
                continue
            try:
                chosen += [(p, i) for i in p.choose("", named=False)]
            except Exception as e:
                env.info(env.INFO_TABLE, f"plugin {name} finds no devices: {e}")
        native = {i.target for t in images.tables() for i in t.images} if _native else None
        chosen.sort(key=_order(native))
    else:
        specs = [w.strip() for w in s.devices.split(",") if w.strip()]
        if not specs:
            raise OffloadError(f"PYGOMP_DEVICES is empty: name devices as plugin[:selector], "
                               f"e.g. 'opencl:pocl,host', or 'none' for the initial device "
                               f"alone; installed plugins: {', '.join(sorted(_entry_points()))}")
        for spec in specs:
            name, _, selector = spec.partition(":")
            p = _plugin(name)
            picked = p.choose(selector)
            if not picked:
                listing = "; ".join(f"{i}: {d.name} ({d.platform})"
                                    for i, d in enumerate(p.devices())) or \
                    f"no devices{f' ({p.unavailable})' if p.unavailable else ''}"
                raise OffloadError(f"PYGOMP_DEVICES: {spec!r} matches no device; "
                                   f"{name} has {listing}")
            chosen += [(p, i) for i in picked if (p, i) not in chosen]
    devs = []
    for n, (p, i) in enumerate(chosen):
        p.set_number(i, n)
        devs.append(Device(n, p, i, p.devices()[i]))
    host = _instance(type(_plugin("host")))  # its own: messages name the initial device
    host.set_number(0, len(devs), initial=True)
    devs.append(Device(len(devs), host, 0, INITIAL_INFO, is_initial=True))
    return devs


def all_devices() -> list[Device]:
    """Offload devices then the initial device (discovered once, initialized lazily)."""
    global _devices
    if _devices is None:
        with _lock:
            if _devices is None:
                interrupt.install()     # before a plugin chains its own handler
                devs = _discover(env.settings())
                images.add_listener(_on_table)
                atexit.register(finalize_all)
                _devices = devs
    return _devices


def num_devices() -> int:
    return len(all_devices()) - 1


def initial() -> Device:
    return all_devices()[-1]


# Device numbers with a meaning of their own (libgomp's omp.h and gomp-constants.h).
INITIAL_DEVICE = -1             # omp_initial_device
INVALID_DEVICE = -4             # omp_invalid_device
GOMP_DEVICE_ICV = -1            # compiled code: "the default-device-var ICV"
GOMP_DEVICE_HOST_FALLBACK = -2  # compiled code: "the initial device"


def get_default() -> int:
    n = getattr(_default, "value", None)
    if n is not None:
        return n
    s = env.settings()
    if s.target_offload == "mandatory" and num_devices() == 0:
        return INVALID_DEVICE       # OpenMP 5.2: so that offloading fails
    return s.default_device


def set_default(n: int) -> None:
    _default.value = n


def resolve(number: int | None = None, *, routine=False, compiled=False) -> Device:
    """The device a number names, initialized.  Every face resolves through here.

    With n offload devices (the initial device is number n), the rules are libgomp's,
    except that the omp_* routines (``routine=True``) refuse numbers that name no device:

    ==========================  ==================================  ====================
    number                      constructs, kernels, compiled C     omp_* routines
    ==========================  ==================================  ====================
    None; -1 when ``compiled``  the default-device-var, then below  (not accepted)
    0 .. n-1                    that device (1)                     that device
    n                           the initial device                  the initial device
    -1 (omp_initial_device);    the initial device                  the initial device
    -2 when ``compiled``
    -4 (omp_invalid_device)     error (2)                           error
    any other number            the initial device (2)              error
    ==========================  ==================================  ====================

    (1) One that cannot be initialized: the initial device, or under
    OMP_TARGET_OFFLOAD=MANDATORY an error.  A fallback to the initial device warns
    (`OffloadWarning`) once a device number.  (2) Under MANDATORY with no offload device
    the error says that only the host is available; under MANDATORY any other number is
    an error.  DISABLED discovers no offload device (n = 0).  ``compiled`` numbers are
    those compiled C passes to GOMP_* (GCC turns omp_initial_device into -2).
    """
    devs = all_devices()
    n = len(devs) - 1
    if compiled:
        if number == GOMP_DEVICE_ICV:
            number = None
        elif number == GOMP_DEVICE_HOST_FALLBACK:
            number = INITIAL_DEVICE
    if number is None:
        if routine:
            raise OffloadError("a device routine needs a device number")
        number = get_default()
    if not isinstance(number, int):
        try:
            number = operator.index(number)
        except TypeError:
            raise TypeError(f"a device number is an int, not {type(number).__name__}") from None
    if number == n or number == INITIAL_DEVICE:
        return _ready(devs[n])
    if not 0 <= number < n:
        s = env.settings()
        if routine:
            raise OffloadError(f"invalid device number {number!r}: offload devices are "
                               f"0..{n - 1} and the initial device is {n}")
        if s.target_offload == "mandatory":
            raise OffloadError("OMP_TARGET_OFFLOAD is set to MANDATORY, but only the host "
                               "device is available" if n == 0 else
                               f"OMP_TARGET_OFFLOAD is set to MANDATORY, but device "
                               f"{number} not found (devices 0..{n - 1} exist)")
        if number == INVALID_DEVICE:
            raise OffloadError(f"invalid device number {number}: omp_invalid_device")
        have = ("no offload device" if n == 0 else "1 offload device, number 0" if n == 1
                else f"{n} offload devices, 0..{n - 1}")
        _fallback(devs[n], number, f"device {number} does not exist ({have}, and the "
                                   f"initial device {n})")
        return _ready(devs[n])
    dev = devs[number]
    try:
        dev.ensure_init()
    except PluginError as e:
        if routine:
            raise
        if env.settings().target_offload == "mandatory":
            raise OffloadError(f"OMP_TARGET_OFFLOAD is set to MANDATORY, but device "
                               f"{number} cannot be used for offloading: {e}") from e
        _fallback(devs[n], number, f"device {number} cannot be initialized ({e})")
        return _ready(devs[n])
    return dev


def _fallback(initial, number, why):
    """Say once a number that the initial device stands in for (libgomp's fallback;
    OMP_TARGET_OFFLOAD=MANDATORY makes it an error instead)."""
    if number not in initial.stood_in_for:
        initial.stood_in_for.add(number)
        warnings.warn(f"{why}: running on the initial device instead", OffloadWarning,
                      stacklevel=_caller_level())


def _caller_level():
    """The warnings stack level of the first frame outside pygomp (and contextlib)."""
    here = os.path.dirname(os.path.dirname(__file__))
    level, f = 2, sys._getframe(2)
    while f is not None and (f.f_code.co_filename.startswith(here)
                             or f.f_code.co_filename == contextlib.__file__):
        level, f = level + 1, f.f_back
    return level


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
            print(f"pygomp: finalizing device {dev.number}: {e}", file=sys.stderr)
