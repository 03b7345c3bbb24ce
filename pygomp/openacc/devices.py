"""OpenACC's devices: the current device of each thread (chosen by ACC_DEVICE_TYPE,
ACC_DEVICE_NUM and acc_set_device_*), the acc_get/set routines, acc_get_property,
acc_init and acc_shutdown (libgomp's oacc-init.c)."""
from __future__ import annotations

import os
import threading

from ..runtime import accprof, accqueues, devices, env, mapping
from ..runtime.accprof import ev_device_init_start, ev_device_shutdown_start
from ..runtime.mapping import MappingError
from .device_types import (NAMES, TYPES, async_sync, check_type, device_default,
                           device_host, device_host_nonshm, device_none, device_not_host,
                           devices_of, type_of)
from .profiling import profiled


def _environment():
    name = os.environ.get("ACC_DEVICE_TYPE", "").strip()
    text = os.environ.get("ACC_DEVICE_NUM", "").strip()
    try:
        num = int(text) if text else 0
    except ValueError:
        num = -1
    if num < 0:
        raise env.EnvError(f"invalid value for environment variable ACC_DEVICE_NUM: "
                           f"{text!r} (expected a device number >= 0)")
    return name, num


def _resolve(t, fail=True):
    """A device type with devices for ``t`` (default: ACC_DEVICE_TYPE, else not_host,
    else the host); None (or an error with ``fail``) where there is none."""
    check_type(t)
    if t == device_default:
        name, _ = _environment()
        if name:
            t = TYPES.get(name.lower())
            if t is None or t in (device_none, device_default) or not devices_of(t):
                if fail:
                    raise MappingError(f"device type {name} not supported")
                return None
        else:
            t = device_not_host if devices_of(device_not_host) else device_host
    if not devices_of(t):
        if fail:
            raise MappingError("no device found" if t == device_not_host else
                        f"device type {NAMES[t]} not supported")
        return None
    return t


_lock = threading.Lock()
_selected = {}            # acc_set_device_type/num: "type" and "num" for every thread
_thread = threading.local()    # .dev: this thread's device, .chosen: when it was chosen
_active = set()          # devices OpenACC initialized (until acc_shutdown)
_shutdowns = [0]         # acc_shutdown calls so far: threads choose their device again


def _select(t, num):
    devs = devices_of(t)
    if not 0 <= num < len(devs):
        raise MappingError(f"no devices of type {NAMES[t]} available" if not devs else
                    f"device {num} out of range")
    dev = devs[num]
    dev.ensure_init()
    with _lock:
        _active.add(dev)
    _thread.dev, _thread.chosen = dev, (devices.all_devices(), _shutdowns[0])
    return dev


def mine():
    """This thread's device, while its choice holds (the device list and no
    acc_shutdown since), else None."""
    dev = getattr(_thread, "dev", None)
    if dev is not None and _thread.chosen == (devices.all_devices(), _shutdowns[0]):
        return dev
    return None


def _choice():
    """The type and number a thread without a device takes."""
    with _lock:
        t, num = _selected.get("type"), _selected.get("num")
    return (t if t is not None else _resolve(device_default),
            num if num is not None else _environment()[1])


def current():
    """This thread's current device (chosen on first use, as acc_init would)."""
    dev = mine()
    if dev is None:
        choice = _choice()
        if accprof.mask and not _active:     # the runtime's first device: its init events
            return _initializing(device_default, choice[1], accprof.construct_parallel, 1,
                                 _select, *choice)
        dev = _select(*choice)
    return dev


def _initializing(t, num, construct, implicit, fn, *args):
    """``fn(*args)`` between the device init events (the type and number asked for);
    meanwhile the thread has no device type yet (`get_device_type`)."""
    rec = accprof.start(construct, t, num, implicit=implicit)
    _thread.initializing = True
    try:
        return accprof.pair(rec or accprof.current(), ev_device_init_start, fn, *args)
    finally:
        _thread.initializing = False
        accprof.finish(rec)


def get_num_devices(t=device_default) -> int:
    if t == device_none:
        check_type(t)
        return 0
    t = _resolve(t, fail=False)
    return 0 if t is None else len(devices_of(t))


def set_device_type(t) -> None:
    t = _resolve(t)
    with _lock:
        _selected["type"] = t
        num = _selected.get("num", _environment()[1])
    _select(t, num)


def get_device_type() -> int:
    """This thread's device type (choosing no device, as libgomp's does not)."""
    if getattr(_thread, "initializing", False):    # asked by a device_init callback
        return device_none
    dev = mine()
    if dev is not None:
        return type_of(dev)
    t, num = _choice()
    devs = devices_of(t)
    return type_of(devs[num]) if 0 <= num < len(devs) else t


def set_device_num(num, t=device_none) -> None:
    """acc_set_device_num: device ``num`` of type ``t`` (none: of the type in use) for
    this thread, and the number (and type) for every thread from now on."""
    check_type(t)
    with _lock:
        if num < 0:
            num = _selected.get("num", _environment()[1])
        known = _selected.get("type")
    t = (known or _resolve(device_default)) if t == device_none else _resolve(t)
    _select(t, num)
    with _lock:
        _selected.update(type=t, num=num)


def get_device_num(t=device_default) -> int:
    t = _resolve(t)
    dev = mine()
    if t == device_host and dev is not None and type_of(dev) == t and not dev.is_initial:
        t = device_host_nonshm          # a host plugin device: its number among them
    devs = devices_of(t)
    if dev in devs:
        return devs.index(dev)
    with _lock:
        return _selected.get("num", _environment()[1])


property_memory, property_free_memory = 1, 2
property_name, property_vendor, property_driver = 0x10001, 0x10002, 0x10003


def get_property(num, t, prop):
    """acc_get_property(_string): device ``num`` of type ``t``: its memory in bytes (0
    where its plugin does not tell; free memory: 0, never known), or its name, vendor
    (the plugin's platform, else pygomp) and driver (pygomp and the plugin); None for
    another property.  The initial device answers as libgomp's host device does."""
    from .. import __version__
    devs = devices_of(_resolve(t))
    if not 0 <= num < len(devs):
        raise MappingError(f"device {num} out of range")
    dev = devs[num]
    if dev.is_initial:
        known = (0, 0, "GOMP", "GNU", "1.0")
    else:
        known = (dev.info.memory, 0, f"{dev.info.name} ({dev.plugin.name} plugin)",
                 dev.info.platform or "pygomp", f"pygomp {__version__}")
    return dict(zip((property_memory, property_free_memory, property_name,
                     property_vendor, property_driver), known)).get(prop)


def init(t=device_default) -> None:
    """acc_init: initialize the device of type ``t`` and number ACC_DEVICE_NUM (or the
    number set), and make it this thread's."""
    asked, t = t, _resolve(t)
    with _lock:
        num = _selected.get("num", _environment()[1])
        devs = devices_of(t)
        if 0 <= num < len(devs) and devs[num] in _active:
            raise MappingError("device already active")
        _selected["type"] = t
    if accprof.mask:
        _initializing(asked, num, accprof.construct_runtime_api, 0, _select, t, num)
    else:
        _select(t, num)


def shutdown(t=device_default) -> None:
    """acc_shutdown: wait for the queues of every device of type ``t``, then remove
    everything mapped on them; threads choose their device again on next use."""
    with _lock:
        devs = [d for d in devices_of(_resolve(t)) if d in _active]
    if not devs:
        raise MappingError("no device initialized")
    for dev in devs:
        if accprof.mask:
            profiled(accprof.construct_runtime_api, dev, async_sync, ev_device_shutdown_start,
                     _shut, dev)
        else:
            _shut(dev)
    with _lock:
        _active.difference_update(devs)
        _shutdowns[0] += 1


def _shut(dev):
    accqueues.wait(dev, accqueues.of(dev))
    if not dev.is_initial:
        with dev.lock:
            mapping.release_all(dev)


def on_device(t) -> bool:
    """acc_on_device: Python code runs on the host."""
    return t in (device_host, device_none)
