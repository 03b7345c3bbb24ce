"""OpenACC's runtime routines and data clauses, over the same device maps as the OpenMP
face (`pygomp.runtime.mapping` keeps both rule sets), for Python and for the C shim.

Devices.  OpenACC names devices by type and number.  Here the types are:

- ``device_host`` (2): the initial device, the host itself, shared memory; also the
  type the host plugin's devices answer (`acc_get_device_type`, `type_of`): their
  regions run the host's code, which GCC 12 compiles for ``acc_device_host`` (its
  openacc.h has no ``host_nonshm``);
- ``device_host_nonshm`` (3): the host plugin's devices, the CPU with memory of its own,
  as a request (``acc_set_device_type``, ``ACC_DEVICE_TYPE=host_nonshm``);
- ``device_not_host`` (4): every offload device, numbered as pygomp numbers them;
- ``device_nvidia`` (5): the CUDA plugin's devices;
- ``device_opencl`` (16, pygomp's own value): the OpenCL plugin's devices.

``ACC_DEVICE_TYPE`` (one of the names above without ``device_``, or ``cuda``) and
``ACC_DEVICE_NUM`` (a number within that type) choose the default; unset, the default
is ``not_host`` number 0 (pygomp's device 0), or the host when there is no offload
device.  Each thread has its current device, as in libgomp.

Data routines take numpy arrays (contiguous); a mapped array is kept alive while it is
mapped.  With ``async_=q`` (``q >= 0`` or ``async_noval``) the map changes at once (as
in libgomp) and the data moves on queue q of the current device, after the queue's
earlier work (`pygomp.runtime.accqueues`); `wait` waits for it and raises the first
error of the queue's work (which stops the queue's later work).  Errors are
`pygomp.MappingError`s worded as libgomp words them.
"""
from __future__ import annotations

import ctypes
import os
import threading
from contextlib import contextmanager

from ..constructs import array_item, one_clause
from ..runtime import accmap, accprof, accqueues, deferred, devices, env, kinds, mapping
from ..runtime.accprof import (EVENTS, ev_alloc, ev_compute_construct_end,  # noqa: F401
                              ev_compute_construct_start, ev_create, ev_delete,
                              ev_device_init_end, ev_device_init_start,
                              ev_device_shutdown_end, ev_device_shutdown_start,
                              ev_enqueue_download_end, ev_enqueue_download_start,
                              ev_enqueue_launch_end, ev_enqueue_launch_start,
                              ev_enqueue_upload_end, ev_enqueue_upload_start,
                              ev_enter_data_end, ev_enter_data_start, ev_exit_data_end,
                              ev_exit_data_start, ev_free, ev_none, ev_runtime_shutdown,
                              ev_update_end, ev_update_start, ev_wait_end, ev_wait_start)
from ..runtime.mapping import Item, MappingError

device_none, device_default, device_host, device_host_nonshm = 0, 1, 2, 3
device_not_host, device_nvidia, device_radeon, device_opencl = 4, 5, 8, 16
async_noval, async_sync = -1, -2

TYPES = {"none": device_none, "default": device_default, "host": device_host,
         "host_nonshm": device_host_nonshm, "not_host": device_not_host,
         "nvidia": device_nvidia, "cuda": device_nvidia, "radeon": device_radeon,
         "opencl": device_opencl}
_NAMES = {v: k for k, v in reversed(TYPES.items())}
_PLUGIN_TYPES = {"host": device_host, "cuda": device_nvidia, "opencl": device_opencl}


# -- devices ----------------------------------------------------------------------

def _check_type(t):
    if t not in _NAMES:
        raise MappingError(f"unknown device type {t}")


def type_of(dev) -> int:
    """The OpenACC device type of a pygomp device."""
    return device_host if dev.is_initial else _PLUGIN_TYPES.get(dev.plugin.name,
                                                                device_not_host)


def region_type(dev) -> int:
    """What a compute region on ``dev`` is to acc_on_device: the host plugin's regions
    are host code with memory of its own (host and host_nonshm are both true)."""
    return device_host_nonshm if not dev.is_initial and dev.plugin.name == "host" \
        else type_of(dev)


def _devices_of(t) -> list:
    devs = devices.all_devices()
    if t == device_host:
        return devs[-1:]
    if t == device_not_host:
        return devs[:-1]
    if t == device_host_nonshm:
        return [d for d in devs[:-1] if d.plugin.name == "host"]
    return [d for d in devs[:-1] if type_of(d) == t and t != device_none]


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
    _check_type(t)
    if t == device_default:
        name, _ = _environment()
        if name:
            t = TYPES.get(name.lower())
            if t is None or t in (device_none, device_default) or not _devices_of(t):
                if fail:
                    raise MappingError(f"device type {name} not supported")
                return None
        else:
            t = device_not_host if _devices_of(device_not_host) else device_host
    if not _devices_of(t):
        if fail:
            raise MappingError("no device found" if t == device_not_host else
                        f"device type {_NAMES[t]} not supported")
        return None
    return t


_lock = threading.Lock()
_selected = {}            # acc_set_device_type/num: "type" and "num" for every thread
_thread = threading.local()    # .dev: this thread's device, .chosen: when it was chosen
_active = set()          # devices OpenACC initialized (until acc_shutdown)
_shutdowns = [0]         # acc_shutdown calls so far: threads choose their device again


def _select(t, num):
    devs = _devices_of(t)
    if not 0 <= num < len(devs):
        raise MappingError(f"no devices of type {_NAMES[t]} available" if not devs else
                    f"device {num} out of range")
    dev = devs[num]
    dev.ensure_init()
    with _lock:
        _active.add(dev)
    _thread.dev, _thread.chosen = dev, (devices.all_devices(), _shutdowns[0])
    return dev


def _mine():
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
    dev = _mine()
    if dev is None:
        choice = _choice()
        if accprof.mask and not _active:     # the runtime's first device: its init events
            return _initializing(device_default, choice[1], accprof.construct_parallel, 1,
                                 _select, *choice)
        dev = _select(*choice)
    return dev


# -- the profiling interface (pygomp.runtime.accprof) -----------------------------------

_APIS = {"cuda": accprof.device_api_cuda, "opencl": accprof.device_api_opencl}


def prof_register(event: int, fn, how: int = accprof.reg) -> None:
    """acc_prof_register: ``fn(prof_info, event_info, api_info)`` at each ``event``
    (``acc.ev_*``), with the fields of acc_prof.h (``async`` through getattr)."""
    accprof.register(event, fn, how)


def prof_unregister(event: int, fn, how: int = accprof.reg) -> None:
    """acc_prof_unregister."""
    accprof.unregister(event, fn, how)


def prof_record(construct, dev, q=async_sync, implicit=0):
    """A profiling record for a construct on ``dev`` (None if an outer one's is current)."""
    t = type_of(dev)
    devs = _devices_of(device_host_nonshm if t == device_host and not dev.is_initial else t)
    if not dev.is_initial:
        accprof.watch(dev)
    return accprof.start(construct, t, devs.index(dev) if dev in devs else 0, q,
                         _APIS.get(dev.plugin.name, accprof.device_api_none), implicit)


def profiled(construct, dev, q, event, fn, *args):
    """``fn(*args)`` between ``event`` and its end event, in a record of its own (or in
    the current one)."""
    rec = prof_record(construct, dev, q)
    try:
        return accprof.pair(rec or accprof.current(), event, fn, *args)
    finally:
        accprof.finish(rec)


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
        _check_type(t)
        return 0
    t = _resolve(t, fail=False)
    return 0 if t is None else len(_devices_of(t))


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
    dev = _mine()
    if dev is not None:
        return type_of(dev)
    t, num = _choice()
    devs = _devices_of(t)
    return type_of(devs[num]) if 0 <= num < len(devs) else t


def set_device_num(num, t=device_none) -> None:
    """acc_set_device_num: device ``num`` of type ``t`` (none: of the type in use) for
    this thread, and the number (and type) for every thread from now on."""
    _check_type(t)
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
    dev = _mine()
    if t == device_host and dev is not None and type_of(dev) == t and not dev.is_initial:
        t = device_host_nonshm          # a host plugin device: its number among them
    devs = _devices_of(t)
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
    devs = _devices_of(_resolve(t))
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
        devs = _devices_of(t)
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
        devs = [d for d in _devices_of(_resolve(t)) if d in _active]
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


# -- CUDA interop (the C face's acc_get_current_cuda_device ...) -------------------

def _cuda():
    """The CUDA handles of this thread's device (None: it has no device yet, as libgomp
    answers before the first construct or acc_init, or its device is not CUDA's)."""
    dev = _mine()
    handles = None if dev is None else getattr(dev.plugin, "cuda_handles", None)
    return (dev, handles(dev.local)) if handles else (dev, None)


def cuda_device() -> int:
    """acc_get_current_cuda_device: the address of the device's CUdevice, else 0."""
    h = _cuda()[1]
    return h.device if h else 0


def cuda_context() -> int:
    """acc_get_current_cuda_context: the device's CUcontext, else 0."""
    h = _cuda()[1]
    return h.context if h else 0


def cuda_stream(q) -> int:
    """acc_get_cuda_stream: the CUstream of queue ``q`` (all of a device's queues put
    their work on its one stream) once the queue exists, else 0 (an invalid ``q``,
    acc_async_sync too)."""
    dev, h = _cuda()
    if not h or q < async_noval or accqueues.find(dev, q) is None:
        return 0
    return h.stream


def set_cuda_stream(q, stream) -> int:
    """acc_set_cuda_stream: 0 for an invalid ``q``, a NULL stream or acc_async_sync; -1
    where the device is not CUDA's (libgomp's answers).  On a CUDA device 0 as well:
    its queues share the device's one stream, which a queue cannot replace."""
    if q < async_sync or not stream:
        return 0
    current()                                   # libgomp initializes here
    return -1 if _cuda()[1] is None else 0


# -- async queues (pygomp.runtime.accqueues) -----------------------------------------

def _check_async(q):
    if q < async_sync:
        raise MappingError(f"invalid async-argument: {q}")


def run(q, fn, dev=None):
    """``fn()`` now (``q`` is async_sync), or with queue ``q`` of the current device: the
    map changes now, what the construct takes by value is taken now, and the device
    work that ``fn``'s map operations make (copies, launches, frees) is done by the
    queue, after its earlier work (docs/architecture.md, "Async queues").  Device memory
    is freed only after the work queued so far on every queue of the device (as
    cuMemFree waits for the device): that work may still use it."""
    _check_async(q)
    dev = dev or current()
    if accprof.mask:
        return _profiled_run(q, fn, dev)
    with deferred.deferred() as work:
        result = fn()
    _run(q, work, dev)
    return result


def _profiled_run(q, fn, dev):
    """`run` in a profiling record (an acc_* routine's, unless a construct's is
    current), with the events of its device work (`accprof.expand`)."""
    rec = prof_record(accprof.construct_runtime_api, dev, q)
    try:
        with deferred.deferred() as work:
            result = fn()
        _run(q, accprof.expand(work, dev), dev)
        return result
    finally:
        accprof.finish(rec)


def _run(q, work, dev):
    if q == async_sync:
        accqueues.run_now(dev, work)
    else:
        accqueues.run_on(dev, q, work)


def async_test(q) -> bool:
    """acc_async_test: whether queue ``q`` has finished its work."""
    _check_async(q)
    return accqueues.done(current(), q)


def async_test_all() -> bool:
    dev = current()
    return all(accqueues.done(dev, q) for q in accqueues.of(dev))


def wait(q=None) -> None:
    """acc_wait (``q``), or acc_wait_all (None): wait for the queues' work; an error
    of it is raised here."""
    dev = current()
    if q is not None:
        _check_async(q)
    qs = accqueues.of(dev) if q is None else [q]
    if accprof.mask:
        return profiled(accprof.construct_runtime_api, dev, async_sync if q is None else q,
                        ev_wait_start, accqueues.wait, dev, qs)
    accqueues.wait(dev, qs)


def wait_async(q1, q2) -> None:
    """acc_wait_async: queue ``q2``'s later work comes after ``q1``'s work so far
    (``q1`` None: after every queue's)."""
    dev = current()
    for q in (q1, q2):
        if q is not None:
            _check_async(q)
    if q2 == async_sync:
        return wait(q1)
    after = accqueues.of(dev) if q1 is None else \
        [q1] if accqueues.find(dev, q1) is not None else []
    if after and after != [q2]:
        accqueues.enqueue(dev, q2, lambda: None, after)


def wait_list(q, waits) -> None:
    """The ``wait(...)`` clause of a construct on queue ``q`` (GOACC_wait's rules)."""
    if not waits:
        return wait(None) if q == async_sync else wait_async(None, q)
    for w in waits:
        if w == async_noval:
            return wait(None) if q == async_sync else wait_async(None, q)
        if async_test(w) or w == q:
            continue
        if q == async_sync:
            wait(w)
        else:
            wait_async(w, q)


# -- data routines on addresses (the C face's) -----------------------------------

def enter(h, size, kind, obj=None, q=async_sync, align=None) -> int:
    """acc_copyin / acc_create: the device address (the host's on the host).  ``align``:
    the C face's, for libgomp's layout (`mapping.Item`)."""
    if not h or not size:
        raise MappingError(f"[{h:#x},+{size}] is a bad range")
    dev = current()
    if dev.is_initial:
        return h
    run(q, lambda: mapping.enter_data(dev, [Item(h, size, kind, obj, None, align)],
                                       acc=True), dev)
    return accmap.device_address(dev, h)


def leave(h, size, kind, q=async_sync) -> None:
    """acc_copyout / acc_delete and their finalize forms (FORCE_FROM, DELETE)."""
    dev = current()
    if not dev.is_initial:
        run(q, lambda: accmap.exit_data(dev, [Item(h, size, kind)]), dev)


def update(h, size, to_device, q=async_sync) -> None:
    """acc_update_device / acc_update_self: the data must be present."""
    dev = current()
    if h and not dev.is_initial:
        kind = kinds.FORCE_TO if to_device else kinds.FORCE_FROM
        run(q, lambda: accmap.update(dev, [Item(h, size, kind)]), dev)


def present(h, size) -> bool:
    if not h or not size:
        return False
    dev = current()
    return dev.is_initial or accmap.is_present(dev, h, size)


def device_address(h) -> int:
    dev = current()
    return h if dev.is_initial else accmap.device_address(dev, h)


def host_address(d) -> int:
    dev = current()
    return d if dev.is_initial else accmap.host_address(dev, d)


_allocated = {}          # (device, address) -> size: what acc_malloc gave


def malloc(size) -> int:
    if not size:
        return 0
    dev = current()
    rec = accprof.mask and prof_record(accprof.construct_runtime_api, dev)
    try:
        d = dev.plugin.alloc(dev.local, size)
    finally:
        if rec:
            accprof.finish(rec)
    with _lock:
        _allocated[dev, d] = size
    return d


def allocations(dev) -> list:
    """``(address, size)`` of what acc_malloc gave on ``dev`` and is not freed."""
    with _lock:
        return [(a, n) for (x, a), n in _allocated.items() if x is dev]


def free(d) -> None:
    """acc_free: memory acc_malloc gave, that no mapping uses."""
    if not d:
        return
    dev = current()
    if not dev.is_initial:
        accmap.check_free(dev, d)
    with _lock:
        size = _allocated.pop((dev, d), None)
    if size is None:
        raise MappingError("error in freeing device memory in acc_free")
    rec = accprof.mask and prof_record(accprof.construct_runtime_api, dev)
    if rec:
        accprof.fire(rec, ev_free, var_name=None, bytes=size, host_ptr=None, device_ptr=d)
        accprof.finish(rec)
    dev.plugin.free(dev.local, d)


def map_data(h, d, size) -> None:
    dev = current()
    if dev.is_initial:
        if d != h:
            raise MappingError("cannot map data on shared-memory system")
        return
    accmap.map_data(dev, h, d, size)


def unmap_data(h) -> None:
    dev = current()
    if not dev.is_initial:
        accmap.unmap_data(dev, h)


def memcpy(dst, src, size, to_device, q=async_sync) -> None:
    """acc_memcpy_to_device (``to_device``) / acc_memcpy_from_device; on a device,
    NULL, equal addresses and copies past the end of acc_malloc's block are errors."""
    dev = current()
    if dev.is_initial:
        return run(q, lambda: deferred.later(ctypes.memmove, dst, src, size), dev)
    d, h = (dst, src) if to_device else (src, dst)
    if d == h or not d or not h:
        raise MappingError("invalid host or device address" if d == h else
                    "invalid device address" if not d else "invalid host address")
    with _lock:
        block = next(((a, n) for (x, a), n in _allocated.items()
                      if x is dev and a <= d < a + n), None)
    if block is not None and d + size > block[0] + block[1]:
        raise MappingError(f"invalid size: {size} bytes at {d:#x}, in the {block[1]} bytes that "
                    f"acc_malloc gave at {block[0]:#x}")
    copy = dev.plugin.host2dev if to_device else dev.plugin.dev2host
    run(q, lambda: deferred.later(copy, dev.local, dst, src, size), dev)


def attach(ptr, q=async_sync) -> None:
    dev = current()
    if not dev.is_initial:
        run(q, lambda: accmap.attach(dev, ptr), dev)


def detach(ptr, finalize=False, q=async_sync) -> None:
    dev = current()
    if not dev.is_initial:
        run(q, lambda: accmap.detach(dev, ptr, finalize), dev)


# -- the Python face: numpy arrays ---------------------------------------------------

def _array(a, kind):
    it = array_item(a, kind)
    return it.addr, it.size, it.obj


def copyin(a, async_=async_sync) -> int:
    """acc_copyin: present, one dynamic reference more; else mapped and copied in.
    Returns the device address."""
    h, size, obj = _array(a, kinds.TO)
    return enter(h, size, kinds.TO, obj, async_)


def create(a, async_=async_sync) -> int:
    """acc_create: as `copyin`, without the copy."""
    h, size, obj = _array(a, kinds.ALLOC)
    return enter(h, size, kinds.ALLOC, obj, async_)


def copyout(a, finalize=False, async_=async_sync) -> None:
    """acc_copyout(_finalize): one dynamic reference less (all of them); at zero the
    data is copied back and unmapped."""
    h, size, _ = _array(a, kinds.FROM)
    leave(h, size, kinds.FORCE_FROM if finalize else kinds.FROM, async_)


def delete(a, finalize=False, async_=async_sync) -> None:
    """acc_delete(_finalize): as `copyout`, without the copy."""
    h, size, _ = _array(a, kinds.RELEASE)
    leave(h, size, kinds.DELETE if finalize else kinds.RELEASE, async_)


def update_device(a, async_=async_sync) -> None:
    h, size, _ = _array(a, kinds.TO)
    update(h, size, True, async_)


def update_self(a, async_=async_sync) -> None:
    h, size, _ = _array(a, kinds.FROM)
    update(h, size, False, async_)


def is_present(a) -> bool:
    h, size, _ = _array(a, kinds.ALLOC)
    return present(h, size)


def deviceptr(a) -> int:
    """The device address of ``a``'s first element (0 if it is not mapped)."""
    return device_address(_array(a, kinds.ALLOC)[0])


_CLAUSES = {"copy": kinds.TOFROM, "copyin": kinds.TO, "copyout": kinds.FROM,
            "create": kinds.ALLOC, "present": kinds.FORCE_PRESENT,
            "no_create": kinds.IF_PRESENT}


@contextmanager
def data(**clauses):
    """``with acc.data(copy=[...], copyin=[...], copyout=[...], create=[...],
    present=[...], no_create=[...]):`` an OpenACC data region on the current device:
    structured references for the block, copies back at its end.  An array in two
    clauses is a ValueError."""
    unknown = set(clauses) - set(_CLAUSES)
    if unknown:
        raise TypeError(f"acc.data: unknown clause(s) {sorted(unknown)}; the clauses are "
                        f"{', '.join(_CLAUSES)}")
    named = []
    for name, arrays in clauses.items():
        for a in (arrays,) if not isinstance(arrays, (list, tuple)) else arrays:
            named.append((name, array_item(a, _CLAUSES[name])))
    items = one_clause("acc.data", named)
    dev = current()
    if accprof.mask:
        region = profiled(accprof.construct_data, dev, async_sync, ev_enter_data_start, run,
                          async_sync, lambda: mapping.begin(dev, items, acc=True), dev)
    else:
        region = mapping.begin(dev, items, acc=True)
    try:
        yield dev
    finally:
        if accprof.mask:
            profiled(accprof.construct_data, dev, async_sync, ev_exit_data_start, run,
                     async_sync, lambda: mapping.end(region), dev)
        else:
            run(async_sync, lambda: mapping.end(region), dev)
