"""``PYGOMP_PROFILE=trace.json``: what the runtime did, as a Chrome trace.

Every compile, image load, allocation, free, copy (bytes, direction), kernel launch
(kernel, launch sizes) and map/unmap (and the data constructs around them) becomes a
complete event ("ph": "X") with its start and duration in microseconds.  A device is
a process of the trace (pid: its device number, named as messages name it) and each
Python thread a thread of it, so Perfetto (ui.perfetto.dev) and chrome://tracing show
one track per device and thread.  The file is written when the program ends.

Tracing is each plugin's tracer (`instrument`: `Plugin.trace_with`, for each plugin the
runtime loads), which the plugin base calls around its checked operations, and the
mapping layer's observer (`start`: `mapping.observe`), which its constructs call; without
PYGOMP_PROFILE nothing of it is on any path.  Prepared calls (`calls.Call`) go
through `mapping.target` while tracing, so every map and unmap is seen.
"""
from __future__ import annotations

import atexit
import threading
import time

on = False                  # tracing (set once, by `start`)
_path = None
_events = []
_t0 = time.perf_counter_ns()
_names = {}                 # pid -> its name, (pid, tid) -> the thread's name
_lock = threading.Lock()


def start(path: str) -> None:
    """Trace from now on into ``path`` (written at exit)."""
    global on, _path
    with _lock:
        if on:
            return
        on, _path = True, path
        from . import mapping
        mapping.observe(_construct)
        atexit.register(write)


def _device(dev, *args):
    return dev.number, dev.plugin.label(dev.local)


def _items(dev, items, *args):
    return {"items": len(items), "bytes": sum(it.size for it in items)}


_MAPPING = {        # mapping's construct -> (event, category, its arguments, its device)
    "begin": ("map", "map", _items, _device),
    "end": ("unmap", "map", lambda region, *a: {"items": len(region.items)},
            lambda region, *a: _device(region.dev)),
    "enter_data": ("target enter data", "construct", _items, _device),
    "exit_data": ("target exit data", "construct", _items, _device),
    "update": ("target update", "construct", _items, _device),
    "target": ("target", "construct", lambda dev, fn, items, *a: {
        "function": hex(fn), "items": len(items)}, _device),
    "start": ("target nowait", "construct", lambda dev, fn, items, *a: {
        "function": hex(fn), "items": len(items)}, _device),
}


def _construct(name, construct, args):
    """The mapping layer's observer (`mapping.observe`): an event per construct."""
    event, cat, describe, where = _MAPPING[name]
    t = time.perf_counter_ns()
    try:
        return construct(*args)
    finally:
        end = time.perf_counter_ns()
        pid, pname = where(*args)
        _record(pid, pname, event, cat, t, end, describe(*args))


def instrument(plugin) -> None:
    """Trace the checked operations of one plugin instance (when tracing is on): the
    plugin's tracer hook (`Plugin.trace_with`)."""
    if on:
        plugin.trace_with(_plugin_op)


def _kernel(verb):
    def describe(plugin, dev, fn, args, launch=(0, 0, 0), wait_for=()):
        info = plugin.kernel_info(fn)
        return {"kernel": info.name if info else hex(fn), "launch": list(launch),
                "words": len(args)}
    return (lambda a: f"{verb} {a['kernel']}", "launch", describe)


def _copy(direction):
    return (f"copy {direction}", "copy",
            lambda plugin, dev, dst, src, size: {"bytes": size, "direction": direction})


_PLUGIN = {         # operation -> (event, category, its arguments)
    "compile": ("compile", "compile",
                lambda plugin, dev, unit: {"kernels": [k.name for k in unit.kernels]}),
    "load_image": ("load image", "image",
                   lambda plugin, dev, image: {"image": image.name,
                                               "kernels": len(image.kernels),
                                               "bytes": len(image.code)}),
    "unload_image": ("unload image", "image",
                     lambda plugin, dev, image: {"image": image.name}),
    "init": ("init", "device", lambda plugin, dev: {}),
    "alloc": ("alloc", "memory", lambda plugin, dev, size: {"bytes": size}),
    "free": ("free", "memory", lambda plugin, dev, addr: {"address": hex(addr)}),
    "host2dev": _copy("host to device"),
    "dev2host": _copy("device to host"),
    "dev2dev": _copy("device to device"),
    "run": _kernel("run"),
    "run_async": _kernel("start"),
    "wait": ("wait", "launch", lambda plugin, dev, event: {}),
    "synchronize": ("synchronize", "launch", lambda plugin, dev: {}),
}


def _plugin_op(plugin, op, args, call):
    """The tracer of every plugin: ``call(*args)``, an event if the operation is one of
    `_PLUGIN` (``args[0]`` is the plugin's device)."""
    traced = _PLUGIN.get(op)
    if traced is None:
        return call(*args)
    event, cat, describe = traced
    t = time.perf_counter_ns()
    try:
        return call(*args)
    finally:
        end = time.perf_counter_ns()
        info = describe(plugin, *args)
        _record(plugin.number(args[0]), plugin.label(args[0]),
                event(info) if callable(event) else event, cat, t, end, info)


def _record(pid, pname, event, cat, t, end, args):
    pid = -1 if pid is None else pid
    thread = threading.current_thread()
    tid = thread.native_id or thread.ident
    if pid not in _names:
        _names[pid] = pname
    if (pid, tid) not in _names:
        _names[pid, tid] = thread.name
    _events.append({"name": event, "cat": cat, "ph": "X", "ts": (t - _t0) / 1000,
                    "dur": (end - t) / 1000, "pid": pid, "tid": tid, "args": args})


def events() -> list:
    """The events so far, with the names of the devices and threads (metadata events)."""
    meta = []
    for key, name in list(_names.items()):
        if isinstance(key, tuple):
            meta.append({"name": "thread_name", "ph": "M", "pid": key[0], "tid": key[1],
                         "args": {"name": name}})
        else:
            meta.append({"name": "process_name", "ph": "M", "pid": key, "tid": 0,
                         "args": {"name": name}})
            meta.append({"name": "process_sort_index", "ph": "M", "pid": key, "tid": 0,
                         "args": {"sort_index": key}})
    return meta + list(_events)


def write() -> None:
    """Write the trace file (at exit; may be called earlier to see it so far)."""
    with open(_path, "w") as f:
        import json                 # here: only a profile is written with it
        json.dump({"traceEvents": events(), "displayTimeUnit": "ms"}, f)
