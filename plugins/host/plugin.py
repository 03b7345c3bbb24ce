"""The host device: the CPU as an offload device with its own, separate memory.

Data reaches it only through the map, as on a discrete GPU.  Images are shared objects
built by gcc (`compile`); a kernel entry takes its arguments as `KernelInfo` says, and
runs on OpenMP threads: the private scratch holds a part per thread OpenMP may start.
Runs of a kernel without scratch go side by side, each with its own array of words.
A kernel a face noted runs through `pygomp.runtime.faults` (a fault names it), and on
the offload device its arrays' guards are compared when it returns.
"""
from __future__ import annotations

import functools
import operator
import os
import types

from pygomp.errors import CompileError, compiler_error
from pygomp.runtime import cache, faults
from pygomp.runtime.hostmem import c_function as _c_function, ffi as _ffi
from pygomp.runtime.plugin import DONE, DeviceInfo, Kernel, Plugin, ProgramImage

from . import stop

# -ffp-contract=off: ``a * b + c`` rounds the product as numpy does (gnu11 fuses it
# into an fma where the CPU has one); -fno-trapping-math lets a vectorized loop call
# libmvec (target.py) and changes no value, only which floating-point flags are raised
CFLAGS = ["-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-fwrapv",
          "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-std=gnu11"]

_libc = types.SimpleNamespace(
    calloc=_c_function("calloc", "void *(*)(size_t, size_t)"),
    free=_c_function("free", "void (*)(void *)"),
    memcpy=_c_function("memcpy", "void *(*)(void *, const void *, size_t)"),
    copy=_c_function("memcpy", "uintptr_t (*)(uintptr_t, uintptr_t, size_t)"),   # addresses
    dlopen=_c_function("dlopen", "void *(*)(const char *, int)"),
    dlsym=_c_function("dlsym", "void *(*)(void *, const char *)"),
    dlclose=_c_function("dlclose", "int (*)(void *)"),
    dlerror=_c_function("dlerror", "char *(*)(void)"))
RTLD_NOW = 2
# Images built with -fopenmp use libgomp; unloading it while its idle threads live
# crashes, so the plugin keeps it loaded for the life of the process.
_libgomp = _libc.dlopen(b"libgomp.so.1", RTLD_NOW)
# The kernel's first parameter is `void **` in C; uint64_t * has the same ABI and lets
# cffi check the array it is given.
KERNEL_TYPE = "void (*)(uint64_t *, const int64_t *)"


class _Kernel(Kernel):
    """A kernel's entries in a loaded shared object, and its spare arrays of words."""

    def __init__(self, info, entries, stops, fault=None):
        super().__init__(info, entries[0])
        self.entries = [_ffi.cast(KERNEL_TYPE, e) for e in entries]
        if fault is not None:           # its line while it runs, then its guards
            self.entries = [_reported(info, e, *fault) for e in entries]
        if stops is not None:           # Ctrl-C stops them: a stopped one raises
            self.entries = [stop.checked(e, stops) for e in self.entries]
        self.spare = []          # word arrays not in use (list.pop/append are atomic)

    def _plan_impl(self, launch):
        return max(launch[0], _max_threads()), _ffi.new("int64_t[3]", list(launch))

    def _scratch_impl(self, size, old, have):
        new = _ffi.gc(_libc.calloc(size, 1), _libc.free)
        if new == _ffi.NULL:
            raise MemoryError(f"no host memory for {size} bytes of scratch")
        if have:
            _libc.memcpy(new, old, have)
        return new

    def _start_impl(self, args, plan, scratch, wait_for):
        for event in wait_for:
            event.wait()
        words = args
        if scratch is not None or self.info.private:
            words = list(args)
            if scratch is not None:
                words.append(_address(scratch))
            if self.info.private:
                size = self.info.private_part(args) * _max_threads()
                words.append(_address(self.grow("private", size)))
        # The words live in an array this run owns until its last entry returns.
        n = len(words)
        try:
            array = self.spare.pop()
        except IndexError:
            array = _ffi.new("uint64_t[]", max(n, 1))
        array[0:n] = words
        return array, plan[1]

    def _launch_impl(self, run, entry):
        self.entries[entry](*run)

    def _word_impl(self, run, word):
        return _ffi.cast("int64_t *", self.buffers["scratch"][0])[word]

    def _end_impl(self, run):
        self.spare.append(run[0])
        return DONE

    def _launcher_impl(self, launch):
        """`_start_impl`, `_launch_impl` and `_end_impl` of a kernel without scratch or
        program: the words in an array of their own, which the entries only read.  What
        ``prepare`` gives holds that array and calls the entries with it."""
        if self.exclusive or self.info.program:
            return None
        entries, plan = self.entries, self.plan(launch)[1]
        if len(entries) == 1:           # one C call, with no Python frame of ours
            entry = entries[0]
            return (lambda words: functools.partial(entry, _words_array(words), plan),
                    operator.call)

        def prepare(words):
            array = _words_array(words)
            return lambda: [entry(array, plan) for entry in entries]
        return prepare, operator.call


def _reported(info, entry, run, who, guarded, device):
    """``entry`` (an address) called through `faults.runner` with the kernel's line
    ``who``; with ``guarded``, a damaged guard of its address words raises
    `faults.OverrunError` (without, a C call with no Python frame)."""
    record = faults.record(info, entry, who, guarded)
    if not guarded:
        return functools.partial(run, record)

    def call(array, plan):
        bad = run(record, array, plan)
        if bad >= 0:
            raise faults.overrun(info, device, bad)
    return call


def _words_array(words):
    return _ffi.new("uint64_t[]", words or [0])


class HostPlugin(Plugin):
    name = "host"
    target = "host"
    title = "C"
    capabilities = frozenset({"fp64", "int64_atomics", "generic_address_space"})

    def __init__(self):
        super().__init__()
        self._libs = {}          # id(image) -> [dlopen handle, number of loads, loaded]
        self._initial = False    # the initial device's (`set_number`)

    def _devices_impl(self):
        cpus = os.cpu_count() or 1
        return [DeviceInfo(name="host", kind="cpu", platform="gcc",
                           properties={"threads": cpus, "memory": "separate"})]

    # -- compiling -----------------------------------------------------------
    def _identity_impl(self, dev):
        return "host:" + _machine_id()

    def _compiler_key(self, dev, unit):
        return _compiler_id()

    def _compile_impl(self, dev, unit):
        return compile_c(unit.source, ", ".join(k.name for k in unit.kernels))

    # -- images --------------------------------------------------------------
    def _load_image_impl(self, dev, image):
        if isinstance(image, ProgramImage):      # the program's own memory
            return [], list(image.addresses)
        # The offload device and the initial device share this plugin: count the loads.
        stops = stop.install(_libc, _ffi, compile_c, _compiler_id())   # before dlopen
        run = None                      # a C program's regions: no report, no guards
        if any(map(faults.where, image.kernels)):
            run = faults.runner(compile_c, _compiler_id())
        with self._lock:
            held = self._libs.get(id(image))
            if held is None:
                handle = _libc.dlopen(os.fsencode(self.image_path(image)), RTLD_NOW)
                if handle == _ffi.NULL:
                    raise OSError(_dlerror())
                try:
                    loaded = ([_Kernel(info, [_symbol(handle, e) for e in info.entries],
                                       stops, self._fault(run, dev, info))
                               for info in image.kernels],
                              [_symbol(handle, n) for n, _ in image.variables])
                except OSError:
                    _libc.dlclose(handle)
                    raise
                held = self._libs[id(image)] = [handle, 0, loaded]
            held[1] += 1
            return held[2]

    def _fault(self, run, dev, info):
        """What `_reported` needs for a kernel a face noted, else None: the runner, the
        kernel's line, whether its guards are compared (not on the initial device, whose
        arrays are the program's, without guards) and the device's label."""
        who = run and faults.line(info, self.label(dev))
        if who is None:
            return None
        return run, who, not self._initial, self.label(dev)

    def set_number(self, dev, number, initial=False):
        super().set_number(dev, number, initial)
        self._initial = initial

    @staticmethod
    def image_path(image) -> str:
        """The file an image's shared object is loaded from (one per content)."""
        return cache.materialize(cache.digest(image.code, 16), image.code, ".so")

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

    # -- memory --------------------------------------------------------------
    def _alloc_impl(self, dev, size):
        return faults.alloc(size)       # guarded; big ones on transparent huge pages

    def _free_impl(self, dev, addr):
        faults.free(addr)

    def _host2dev_impl(self, dev, dst, src, size):
        _libc.copy(dst, src, size)

    _dev2host_impl = _dev2dev_impl = _host2dev_impl   # one address space: all are memcpy


def compile_c(source: str, name: str = "kernel", flags=()) -> bytes:
    """gcc SOURCE -> shared object bytes (``flags`` added to `CFLAGS`); a failure raises
    CompileError with gcc's text."""
    import subprocess               # here: loading cached kernels never needs them
    import tempfile
    gcc = os.environ.get("CC") or "gcc"
    with tempfile.TemporaryDirectory(prefix="pygomp-") as d:
        src, so = os.path.join(d, "k.c"), os.path.join(d, "k.so")
        with open(src, "w") as f:
            f.write(source)
        try:
            p = subprocess.run([gcc, *CFLAGS, *flags, src, "-o", so, "-lm"],
                               capture_output=True, text=True)
        except OSError as e:
            raise CompileError(f"cannot run the C compiler {gcc!r}: {e}") from None
        if p.returncode != 0 or not os.path.exists(so):
            raise compiler_error("gcc", (p.stderr or p.stdout).strip(), name)
        with open(so, "rb") as f:
            return f.read()


_ids = {}


def _machine_id():
    """CPU model and flags (the code is built with -march=native)."""
    if "machine" not in _ids:
        lines, size = [], 0
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:          # up to 4096 characters: the rest is not read
                    if line.startswith(("model name", "flags")):
                        lines.append(line)
                        size += len(line)
                        if size >= 4096:
                            break
        except OSError:
            pass
        cpu = "".join(lines)[:4096]
        ident = f"{os.uname().machine}|{cpu}"
        _ids["machine"] = cache.digest(ident.encode(), 8)
    return _ids["machine"]


def _compiler_id():
    """The C compiler binary found on PATH (without running it) and the flags; None
    when there is none (cached kernels still load)."""
    if "compiler" not in _ids:
        gcc = _which(os.environ.get("CC") or "gcc")
        if gcc is None:
            _ids["compiler"] = None
        else:
            st = os.stat(gcc)
            _ids["compiler"] = f"{gcc}|{st.st_size}|{st.st_mtime}|" + " ".join(CFLAGS)
    return _ids["compiler"]


def _which(cmd):
    """The executable ``cmd`` names (a path, or a name looked up on PATH), or None; as
    shutil.which, whose import (with bz2 and lzma) the cached path does without."""
    dirs = [""] if os.path.dirname(cmd) else os.environ.get("PATH", os.defpath).split(":")
    for d in dirs:
        path = os.path.join(d, cmd)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _max_threads():
    if "threads" not in _ids:
        _ids["threads"] = _ffi.cast("int (*)(void)", _symbol(_libgomp, "omp_get_max_threads"))()
    return _ids["threads"]


def _address(buf):
    return int(_ffi.cast("intptr_t", buf))


def _dlerror():
    p = _libc.dlerror()
    return _ffi.string(p).decode() if p != _ffi.NULL else "unknown dlerror"


def _symbol(handle, name):
    p = _libc.dlsym(handle, name.encode())
    if p == _ffi.NULL:
        raise OSError(f"symbol {name!r} not found: {_dlerror()}")
    return _address(p)
