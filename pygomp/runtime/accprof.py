"""OpenACC's profiling interface (OpenACC 2.7, chapter 5): its events and their dispatch,
for the C face and the Python face alike.

The registry is csrc/prof.c's under libpygomp.so (C callbacks, registered before Python
starts too: ACC_PROFLIB, constructors), and the one here in a Python program; both
follow libgomp's rules (counted registrations, end events in reverse order, toggles per
callback, per event, for all events and per thread).  `mask` has bit E set while a
callback for event E is registered and enabled: every hook tests it first, so that with
no callback nothing else runs.

A construct (or an acc_* routine) that profiles makes a `Record`, current for its thread
while it runs (libgomp's per-thread prof_info): the events inside it (alloc, create,
upload, launch, ...) use its device, queue and construct. Their order is the order of
the work: `queued` events go into the construct's list of deferred device work
(`deferred.later`), so a synchronous construct dispatches each when its place comes, and
an async one (`openacc.queues.run`) dispatches them all when it queues its work, with
the enqueue events of its copies and launches (`expand`).
"""
from __future__ import annotations

import atexit
import ctypes
import struct
import threading

from . import deferred

EVENTS = ("none", "device_init_start", "device_init_end", "device_shutdown_start",
          "device_shutdown_end", "runtime_shutdown", "create", "delete", "alloc", "free",
          "enter_data_start", "enter_data_end", "exit_data_start", "exit_data_end",
          "update_start", "update_end", "compute_construct_start", "compute_construct_end",
          "enqueue_launch_start", "enqueue_launch_end", "enqueue_upload_start",
          "enqueue_upload_end", "enqueue_download_start", "enqueue_download_end",
          "wait_start", "wait_end")
(ev_none, ev_device_init_start, ev_device_init_end, ev_device_shutdown_start,
 ev_device_shutdown_end, ev_runtime_shutdown, ev_create, ev_delete, ev_alloc, ev_free,
 ev_enter_data_start, ev_enter_data_end, ev_exit_data_start, ev_exit_data_end,
 ev_update_start, ev_update_end, ev_compute_construct_start, ev_compute_construct_end,
 ev_enqueue_launch_start, ev_enqueue_launch_end, ev_enqueue_upload_start,
 ev_enqueue_upload_end, ev_enqueue_download_start, ev_enqueue_download_end,
 ev_wait_start, ev_wait_end) = range(len(EVENTS))
_END = frozenset(e for e, name in enumerate(EVENTS) if name.endswith("_end"))
_DATA = frozenset({ev_create, ev_delete, ev_alloc, ev_free, ev_enqueue_upload_start,
                   ev_enqueue_upload_end, ev_enqueue_download_start,
                   ev_enqueue_download_end})
_LAUNCH = frozenset({ev_enqueue_launch_start, ev_enqueue_launch_end})
# acc_construct_t
(construct_parallel, construct_kernels, construct_loop, construct_data,
 construct_enter_data, construct_exit_data, construct_host_data, construct_atomic,
 construct_declare, construct_init, construct_shutdown, construct_set, construct_update,
 construct_routine, construct_wait, construct_runtime_api, construct_serial) = range(17)
reg, toggle, toggle_per_thread = range(3)                       # acc_register_t
device_api_none, device_api_cuda, device_api_opencl = 0, 1, 2    # acc_device_api
VERSION = 201711
# valid_bytes of acc_prof_info, the data/launch/other event infos and acc_api_info
PROF_BYTES, DATA_BYTES, LAUNCH_BYTES, OTHER_BYTES, API_BYTES = 72, 56, 56, 24, 40
ASYNC_SYNC = -2

mask = 0
_c = None                       # (ffi, lib) of libpygomp.so: its registry is the one
_lock = threading.Lock()
_entries = [[] for _ in EVENTS]     # Python's registry: [fn, count, enabled], call order
_off = [False] * len(EVENTS)        # toggled off without a callback (ev_none: all)
_local = threading.local()          # .off: toggled off for the thread; .rec: its Record
_callbacks = {}                     # fn -> its C callback (kept: C may call it any time)


# -- registration --------------------------------------------------------------------

def register(event: int, fn, how: int = reg) -> None:
    """acc_prof_register: ``fn(prof_info, event_info, api_info)`` for ``event``."""
    _change(event, fn, how, True)


def unregister(event: int, fn, how: int = reg) -> None:
    """acc_prof_unregister."""
    _change(event, fn, how, False)


def _change(event, fn, how, add):
    if _c is not None:
        ffi, lib = _c
        f = (lib.acc_prof_register if add else lib.acc_prof_unregister)
        f(event, ffi.NULL if fn is None else _c_callback(fn), how)
        return
    if not 0 <= event < len(EVENTS) or (how == reg and (event == ev_none or fn is None)):
        return
    if how == toggle_per_thread:
        if event == ev_none and fn is None:
            _local.off = not add
        return
    with _lock:
        if how == toggle and (fn is None or event == ev_none):
            if fn is None:
                _off[event] = not add
        else:
            entries = _entries[event]
            e = next((e for e in entries if e[0] == fn), None)
            if how == toggle:
                if e is not None:
                    e[2] = add
            elif add and e is not None:
                e[1] += 1
            elif add:
                entries.insert(0 if event in _END else len(entries), [fn, 1, True])
                if event == ev_runtime_shutdown and not _off[ev_none]:
                    _at_exit()
            elif e is not None:
                e[1] -= 1
                if not e[1]:
                    entries.remove(e)
        _set_mask(0 if _off[ev_none] else sum(
            1 << ev for ev, entries in enumerate(_entries)
            if not _off[ev] and any(e[2] for e in entries)))


def _at_exit():
    """A Python program's acc_ev_runtime_shutdown, at exit (once)."""
    if not getattr(_at_exit, "armed", False):
        _at_exit.armed = True
        atexit.register(lambda: mask >> ev_runtime_shutdown & 1 and fire(
            Record(construct_runtime_api, 0, -1, ASYNC_SYNC), ev_runtime_shutdown))


def _set_mask(m):
    global mask
    mask = m


def _c_callback(fn):
    """A C function pointer that calls ``fn`` with the three cffi structs."""
    cb = _callbacks.get(fn)
    if cb is None:
        ffi, _ = _c
        cb = _callbacks[fn] = ffi.callback(
            "void(pg_prof_info *, pg_event_info *, pg_api_info *)", fn)
    return cb


def use_c(ffi, lib) -> None:
    """Under libpygomp.so: csrc/prof.c's registry is the only one from now on."""
    global _c
    _c = (ffi, lib)
    _set_mask(lib.pg_prof_attach())


def mask_changed() -> None:
    """prof.c says its registry changed."""
    _set_mask(_c[1].pg_prof_attach())


# -- the three structs of a callback -----------------------------------------------

class Info:
    """acc_prof_info or acc_api_info of a Python program: attributes named as the C
    fields (``async`` through getattr)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return f"Info({self.__dict__})"


class EventInfo(Info):
    """acc_event_info: one object whose union members are itself."""

    def __init__(self):
        super().__init__(event_type=0, valid_bytes=0, parent_construct=0, implicit=0,
                         tool_info=None)
        self.data_event = self.launch_event = self.other_event = self


class Record:
    """One construct's profiling data: prof_info and api_info, shared by its events."""

    def __init__(self, construct, device_type, device_number, async_, api=device_api_none,
                 implicit=0):
        self.construct, self.implicit, self.api_value = construct, implicit, api
        fields = dict(event_type=0, valid_bytes=PROF_BYTES, version=VERSION,
                      device_type=device_type, device_number=device_number, thread_id=-1,
                      src_file=None, func_name=None, line_no=-1, end_line_no=-1,
                      func_line_no=-1, func_end_line_no=-1)
        api_fields = dict(device_api=device_api_none, valid_bytes=API_BYTES,
                          device_type=device_type, vendor=-1, device_handle=None,
                          context_handle=None, async_handle=None)
        if _c is None:
            self.prof, self.api = Info(**fields), Info(**api_fields)
        else:
            ffi = _c[0]
            self.prof, self.api = ffi.new("pg_prof_info *"), ffi.new("pg_api_info *")
            for k, v in fields.items():
                if v is not None:
                    setattr(self.prof, k, v)
            for k, v in api_fields.items():
                if v is not None:
                    setattr(self.api, k, v)
        self.set_async(async_)

    def set_async(self, q):
        setattr(self.prof, "async", q)
        self.prof.async_queue = q

    def set_device_type(self, t):
        self.prof.device_type = self.api.device_type = t

    def worked(self):
        """The device did work for it: api_info names the device's API from now on."""
        self.api.device_api = self.api_value

    def event_info(self):
        if _c is None:
            return EventInfo()
        return _c[0].new("pg_event_info *")


def current():
    """This thread's current record, or None."""
    return getattr(_local, "rec", None)


def start(construct, device_type, device_number, async_=ASYNC_SYNC, api=device_api_none,
          implicit=0):
    """A record for a construct, current for this thread until `finish`; None when an
    outer construct's record is current (its events use that one)."""
    if getattr(_local, "rec", None) is not None:
        return None
    rec = _local.rec = Record(construct, device_type, device_number, async_, api, implicit)
    return rec


def finish(rec) -> None:
    if rec is not None and getattr(_local, "rec", None) is rec:
        _local.rec = None


# -- dispatch ------------------------------------------------------------------------

def fire(rec, event, info=None, **fields):
    """Dispatch ``event`` with ``rec``'s structs and ``info`` (an event info, kept from a
    start event to its end event: the tool_info a callback puts there stays), its other
    fields from ``fields``.  Returns the event info."""
    if info is None:
        info = rec.event_info()
    if not mask >> event & 1 or getattr(_local, "off", False):
        return info
    kind = (info.data_event if event in _DATA else info.launch_event if event in _LAUNCH
            else info.other_event)
    kind.event_type = event
    kind.valid_bytes = (DATA_BYTES if event in _DATA else LAUNCH_BYTES if event in _LAUNCH
                        else OTHER_BYTES)
    kind.parent_construct = fields.pop("construct", rec.construct)
    kind.implicit = fields.pop("implicit", rec.implicit)
    if event not in _END:
        _set(kind, "tool_info", None)
    for k, v in fields.items():
        _set(kind, k, v)
    rec.prof.event_type = event
    if _c is None:
        with _lock:
            fns = [] if _off[ev_none] or _off[event] else [e[0] for e in _entries[event]
                                                          if e[2]]
        for fn in fns:
            fn(rec.prof, info, rec.api)
    else:
        _c[1].pg_prof_dispatch(rec.prof, info, rec.api)
    return info


def _set(kind, name, value):
    if _c is None or isinstance(value, int) and name not in _POINTERS:
        setattr(kind, name, value)
        return
    ffi = _c[0]
    if value is None:
        value = ffi.NULL
    elif isinstance(value, str):
        value = _c_string(ffi, value)
    elif isinstance(value, int):
        value = ffi.cast("void *", value)
    setattr(kind, name, value)


_POINTERS = {"tool_info", "var_name", "host_ptr", "device_ptr", "kernel_name"}
_strings = {}           # text -> its C string, kept for the program's life


def _c_string(ffi, text):
    """``text`` as a C string that outlives the event: a tool may keep the kernel name
    it was given, as libgomp's points into the image (the texts are kernel names: few)."""
    s = _strings.get(text)
    if s is None:
        s = _strings.setdefault(text, ffi.new("char[]", text.encode()))
    return s


def _queued_fire(rec, event, info, fields):
    fire(rec, event, info, **fields)


def queued(rec, event, info=None, **fields):
    """`fire` in the order of the device work (`deferred.later`): now, or where a
    deferred construct's work does it (`openacc.queues.run`).  Returns the event info."""
    if info is None:
        info = rec.event_info()
    if mask >> event & 1:
        deferred.later(_queued_fire, rec, event, info, fields)
    return info


def pair(rec, start_event, fn, *args, **fields):
    """``start_event``, ``fn(*args)``, its end event (the next event number)."""
    info = fire(rec, start_event, **fields)
    try:
        return fn(*args)
    finally:
        fire(rec, start_event + 1, info, **fields)


def worked(rec) -> None:
    """In the order of the device work: ``rec``'s device has done work for it."""
    deferred.later(_worked, rec)


def is_event(work_item) -> bool:
    """Whether an item of deferred work is profiling's (done when the work is queued)."""
    return work_item[0] is _queued_fire or work_item[0] is _worked


_UPLOAD, _DOWNLOAD, _LAUNCHES, _FREE = (1 << ev_enqueue_upload_start,
                                        1 << ev_enqueue_download_start,
                                        1 << ev_enqueue_launch_start, 1 << ev_free)


def expand(work, dev) -> list:
    """A construct's deferred device work with the events of its copies (enqueue upload
    and download), launches and frees around them, for the current record."""
    rec = current()
    if rec is None or not mask & (_UPLOAD | _DOWNLOAD | _LAUNCHES | _FREE) or not work:
        return work
    plugin, out = dev.plugin, []
    for w in work:
        fn, args = w[0], w[1]
        if fn == plugin.host2dev or fn == plugin.dev2host:
            up = fn == plugin.host2dev
            d, h = (args[1], args[2]) if up else (args[2], args[1])
            ev = ev_enqueue_upload_start if up else ev_enqueue_download_start
            info = rec.event_info()
            fields = dict(implicit=1, var_name=None, bytes=args[3], host_ptr=h, device_ptr=d)
            out += [(_worked, (rec,), None), (_queued_fire, (rec, ev, info, fields), None), w,
                    (_queued_fire, (rec, ev + 1, info, fields), None)]
        elif fn == plugin.free:
            fields = dict(implicit=1, var_name=None, bytes=_sizes.pop(args[1], 0),
                          host_ptr=None, device_ptr=args[1])
            out += [(_queued_fire, (rec, ev_free, None, fields), None), w]
        elif fn == plugin.run:
            info = plugin.kernel_info(args[1])
            out += launched(rec, [w], info.name if info else hex(args[1]), args[3])
        else:
            out.append(w)
    return out


def _worked(rec):
    rec.worked()


def launched(rec, work, name, dims) -> list:
    """``work`` (a launch) between its enqueue launch events."""
    if not mask & _LAUNCHES:
        return work
    info = rec.event_info()
    fields = dict(implicit=1, kernel_name=name, num_gangs=max(dims[0], 1),
                  num_workers=max(dims[1], 1), vector_length=max(dims[2], 1))
    return [(_worked, (rec,), None),
            (_queued_fire, (rec, ev_enqueue_launch_start, info, fields), None), *work,
            (_queued_fire, (rec, ev_enqueue_launch_end, info, fields), None)]


# -- allocations: the plugins' alloc, watched once a callback wants them ---------------

_ALLOCS = 1 << ev_alloc | 1 << ev_free
_sizes = {}             # device address -> bytes, of what the watched plugins allocated


def watch(dev) -> None:
    """Dispatch acc_ev_alloc for what ``dev``'s plugin allocates inside a record, and
    know the sizes that acc_ev_free gives (its `alloc` is wrapped once, the first time a
    callback for alloc or free meets the device)."""
    plugin = dev.plugin
    if not mask & _ALLOCS or getattr(plugin, "_accprof_alloc", None):
        return
    real = plugin.alloc

    def alloc(local, size):
        d = real(local, size)
        _sizes[d] = size
        rec = current()
        if rec is not None and mask & 1 << ev_alloc:
            worked(rec)
            queued(rec, ev_alloc, implicit=1, var_name=None, bytes=size, host_ptr=None,
                   device_ptr=d)
        return d
    plugin.alloc = alloc
    plugin._accprof_alloc = real


def entry(event, e) -> None:
    """acc_ev_create / acc_ev_delete of a map entry (entries' `birth`, `death`)."""
    rec = current()
    if rec is not None:
        queued(rec, event, implicit=1, var_name=None, bytes=e.host_end - e.host_start,
               host_ptr=e.host_start, device_ptr=e.dev_start)


# -- kernel names --------------------------------------------------------------------

_names = {}


def symbol(addr: int) -> str:
    """The name of the function at ``addr`` (its ELF symbol, static ones too), else its
    address in hex."""
    name = _names.get(addr)
    if name is None:
        name = _names[addr] = _elf_symbol(addr) or hex(addr)
    return name


class _DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]


def _elf_symbol(addr):
    info = _DlInfo()
    try:
        if not ctypes.CDLL(None).dladdr(ctypes.c_void_p(addr), ctypes.byref(info)):
            return None
    except (OSError, AttributeError):
        return None
    if info.sname and info.saddr == addr:
        return info.sname.decode()
    path = info.fname.decode() if info.fname else ""
    if "/" not in path:                                 # the program itself
        path = "/proc/self/exe"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or data[4] != 2:          # 64-bit ELF only
        return None
    e_type, = struct.unpack_from("<H", data, 16)
    offset = addr - (info.fbase or 0) if e_type == 3 else addr      # ET_DYN: relative
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    for s in sections:
        if s[1] != 2:                                   # SHT_SYMTAB
            continue
        strtab = sections[s[6]]
        for i in range(s[5] // 24):
            name, stinfo, _, _, value, size = struct.unpack_from("<IBBHQQ", data, s[4] + i * 24)
            if stinfo & 0xF == 2 and value <= offset < value + max(size, 1):   # STT_FUNC
                end = data.index(b"\0", strtab[4] + name)
                return data[strtab[4] + name:end].decode(errors="replace")
    return None
