"""The host device: the CPU as an offload device with its own, separate memory.

Data reaches it only through the map, as on a discrete GPU.  Images are shared objects
(built by gcc); a kernel is ``void f(void **args, const int64_t *launch)``.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import cffi

from pygomp.runtime.plugin import DeviceInfo, LoadedImage, Plugin

_ffi = cffi.FFI()
_ffi.cdef("""
    int posix_memalign(void **memptr, size_t alignment, size_t size);
    void free(void *ptr);
    void *memcpy(void *dest, const void *src, size_t n);
    void *dlopen(const char *filename, int flags);
    void *dlsym(void *handle, const char *symbol);
    int dlclose(void *handle);
    char *dlerror(void);
""")
RTLD_NOW = 2
_libc = _ffi.dlopen(None)
_dlerror_fn = _libc.dlerror      # looked up once: a lookup itself would clear the error
# Images built with -fopenmp use libgomp; unloading it while its idle threads live
# crashes, so the plugin keeps it loaded for the life of the process.
_libgomp = _libc.dlopen(b"libgomp.so.1", RTLD_NOW)
# The kernel's first parameter is `void **` in C; uint64_t * has the same ABI and lets
# cffi check the array it is given.
KERNEL_TYPE = "void (*)(uint64_t *, const int64_t *)"
ALIGNMENT = 64


@dataclass(frozen=True)
class HostImage:
    """A shared object and the symbol names of its table's functions and variables."""
    path: str
    functions: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()


class HostPlugin(Plugin):
    name = "host"
    target = "host"
    capabilities = frozenset({"fp64", "int64_atomics", "generic_address_space"})

    def __init__(self):
        self._libs = {}          # id(image) -> [dlopen handle, number of loads, LoadedImage]
        self._kernels = {}       # function address -> (callable, its argument arrays)
        self._launches = {}      # launch tuple -> its int64_t[3] (read-only for kernels)
        self._lock = threading.Lock()

    def _devices_impl(self):
        cpus = os.cpu_count() or 1
        return [DeviceInfo(name="host", kind="cpu", platform="gcc",
                           properties={"threads": cpus, "memory": "separate"})]

    def _load_image_impl(self, dev, image):
        # The offload device and the initial device share this plugin: count the loads.
        with self._lock:
            held = self._libs.get(id(image))
            if held is None:
                handle = _libc.dlopen(os.fsencode(image.path), RTLD_NOW)
                if handle == _ffi.NULL:
                    raise OSError(_dlerror())
                try:
                    loaded = LoadedImage([_symbol(handle, n) for n in image.functions],
                                         [_symbol(handle, n) for n in image.variables])
                except OSError:
                    _libc.dlclose(handle)
                    raise
                held = self._libs[id(image)] = [handle, 0, loaded]
            held[1] += 1
            return held[2]

    def _unload_image_impl(self, dev, image):
        with self._lock:
            held = self._libs.get(id(image))
            if held is None:
                return
            held[1] -= 1
            if held[1]:
                return
            del self._libs[id(image)]
        _libc.dlclose(held[0])

    def _alloc_impl(self, dev, size):
        p = _ffi.new("void **")
        if _libc.posix_memalign(p, ALIGNMENT, max(size, 1)) != 0:
            return 0
        return int(_ffi.cast("intptr_t", p[0]))

    def _free_impl(self, dev, addr):
        _libc.free(_ffi.cast("void *", addr))

    def _host2dev_impl(self, dev, dst, src, size):
        _libc.memcpy(_ffi.cast("void *", dst), _ffi.cast("void *", src), size)

    _dev2host_impl = _dev2dev_impl = _host2dev_impl   # one address space: all are memcpy

    def _run_impl(self, dev, fn, args, launch):
        k = self._kernels.get(fn)
        if k is None:
            k = self._kernels[fn] = (_ffi.cast(KERNEL_TYPE, fn), [])
        kernel, spare = k
        sizes = self._launches.get(launch)
        if sizes is None:
            sizes = self._launches[tuple(launch)] = _ffi.new("int64_t[3]", list(launch))
        # The argument words live in an array this call owns until the kernel returns;
        # arrays are reused (one a concurrent call: list.pop/append are atomic).
        n = len(args)
        try:
            words = spare.pop()
            if len(words) != n:
                words = _ffi.new("uint64_t[]", max(n, 1))
        except IndexError:
            words = _ffi.new("uint64_t[]", max(n, 1))
        words[0:n] = args
        kernel(words, sizes)
        spare.append(words)

    def target_hooks(self):
        from . import target
        return target.HOOKS


def _dlerror():
    p = _dlerror_fn()
    return _ffi.string(p).decode() if p != _ffi.NULL else "unknown dlerror"


def _symbol(handle, name):
    p = _libc.dlsym(handle, name.encode())
    if p == _ffi.NULL:
        raise OSError(f"symbol {name!r} not found: {_dlerror()}")
    return int(_ffi.cast("intptr_t", p))
