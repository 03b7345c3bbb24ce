"""The plugin base, version 1 of the plugin interface (after libgomp's GOMP_OFFLOAD_*
functions); its records are in `contract.py` (re-exported here), its kernel level in
`kernel.py`.

Three levels, as in LLVM's offload plugins: the plugin (`Plugin`), its devices (the
state `_start_device_impl` makes, once per device, under the plugin's lock) and their
loaded kernels (`Kernel`).  A subclass implements the `_..._impl` hooks; the public
methods here check their arguments, lock and turn any failure of a hook into one
`PluginError` whose message names the plugin, the device, the operation and the sizes.
A plugin writes memory, copies, compiling, loading and the launch of one entry; the
base owns the kernel registry, the order of the launches, scratch memory and launch
sizes.  No plugin overrides `run`, `run_async` or `launcher`: a kernel enqueues a whole
program at once through its `Kernel._program_impl`, runs repeated calls its own way
through `Kernel._launcher_impl`, and a plugin offers a run_async in C through
`_fast_impl`, which the base installs (`fast_path`).  A tracer (`trace_with`) is called
around each checked operation.  A plugin is registered under the entry-point group
``pygomp.plugins``; the entry point names a subclass of `Plugin`, whose ``__init__``
calls the base's.

Compiling: a dialect (the plugin's ``target_hooks()``, by default ``HOOKS`` of the
``target`` module beside the plugin's) writes a *unit*: an object with ``source``
(text) and ``kernels`` (one `KernelInfo` per kernel), optionally ``variables``
(``(symbol, size)`` pairs).  `Plugin.compile` turns a unit into an `Image` for one
device, through the disk cache (`pygomp.runtime.cache`), keyed by the target, the
source, the device's identity and the compiler's.  A table (`images.OffloadImage`)
carries images; `load_image` loads one and gives the device addresses of its kernels and
variables.

Running: ``run(dev, fn, args, launch)`` runs the kernel at device address ``fn``.
``args`` holds its argument words (`KernelInfo` says what they are and how a plugin
passes them).  ``launch`` is ``(num_gangs, num_workers, vector_length)``; 0 leaves a
level to the plugin.  A kernel with several entries runs them in order (or as its
``program`` says), each to completion before the next starts, all within one ``run``,
with one global scratch buffer that persists across them.  ``run_async`` does the same
without waiting and returns an event, waited for with ``wait(dev, event)``; a plugin
without a queue runs at once and returns a finished event.  ``launcher`` prepares calls
that repeat (`calls.Call`).
"""
from __future__ import annotations

import importlib
import _thread          # threading's own locks: importing threading takes 0.5 ms

from ..errors import CompileError
from . import cache
from .contract import (API_VERSION, DONE, SCALAR_KINDS, DeviceArray,  # noqa: F401
                       DeviceInfo, Event, Image, KernelInfo, LoadedImage, PluginError,
                       ProgramImage, Source)
from .kernel import Kernel, program  # noqa: F401


class Plugin:
    """Base class: checks, validation and error text; hooks below."""
    name = "?"            # the name used in PYGOMP_DEVICES
    target = "?"          # the kind of image it loads (Image.target)
    title = ""            # how messages name its compiler ("OpenCL"); default: name
    api_version = API_VERSION
    capabilities = frozenset()   # e.g. {"fp64", "int64_atomics", "generic_address_space"}
    asynchronous = False  # run_async returns before the kernel ends (a device queue)
    capability_text = {}  # how a compile error names a missing capability
    unavailable = ""      # why the plugin finds no devices, when it can tell
    tracer = None         # called around each checked operation (`trace_with`)

    def __init__(self):
        self._devices = None  # what _devices_impl found, once
        self._kernels = {}    # device address -> Kernel, of every image loaded
        self._loads = {}      # (device, id(image)) -> [kernel addresses], per load
        self._state = {}      # device -> what _start_device_impl made of it
        self._lock = _thread.RLock()
        self._numbers = {}    # device -> (device number, how messages name it)
        self._identities = {}
        self.fast = None      # the installed `_fast_impl` (False: none), see `fast_path`

    # -- discovery ---------------------------------------------------------
    def devices(self) -> list[DeviceInfo]:
        """Every device this plugin finds on this machine (cached)."""
        if self._devices is None:
            self._devices = list(self._devices_impl())
        return self._devices

    def num_devices(self) -> int:
        return len(self.devices())

    def select(self, selector: str) -> list[int]:
        """Plugin-local numbers chosen by a PYGOMP_DEVICES selector.

        The selector is ``word[:word...]``: a word that is an integer picks the
        n-th of the devices matched so far, any other word keeps the devices whose
        name or platform contains it (case-insensitive); empty keeps all.
        """
        found = list(range(self.num_devices()))
        for word in filter(None, selector.split(":")):
            if word.isdigit():
                found = found[int(word):int(word) + 1]
            else:
                found = [i for i in found if self.devices()[i].matches(word)]
        return found

    def choose(self, selector: str, named: bool = True) -> list[int]:
        """The devices a selector gives offload numbers: those it matches that work,
        less any that is the same hardware as one kept.  A selector that ``named``
        devices (PYGOMP_DEVICES) and matches only broken ones keeps them, so that their
        first use says why they do not work."""
        found = self.select(selector)
        infos = self.devices()
        kept = [i for i in found if not infos[i].problem and infos[i].same_as not in found]
        return kept or (found if named else [])

    def number(self, dev: int) -> int | None:
        """The device number the runtime gave the plugin's device ``dev`` (None: none)."""
        return self._numbers.get(dev, (None, ""))[0]

    def label(self, dev: int) -> str:
        """How messages name a device: by its device number when it has one."""
        got = self._numbers.get(dev)
        return got[1] if got else f"{self.name} device {dev}"

    def set_number(self, dev: int, number: int, initial: bool = False) -> None:
        """Give the plugin's device ``dev`` its device number (the runtime does)."""
        label = f"device {number} ({'the initial device' if initial else f'{self.name} {dev}'})"
        self._numbers[dev] = (number, label)

    def device_capabilities(self, dev: int) -> frozenset:
        return frozenset(self.capabilities)

    def identity(self, dev: int) -> str:
        """What makes code compiled for this device run on it: images compiled for one
        identity load on every device of that identity (cached per device)."""
        ident = self._identities.get(dev)
        if ident is None:
            ident = self._identities[dev] = self._call("identity", dev, "", self._identity_impl,
                                                       dev)
        return ident

    # -- compiling -----------------------------------------------------------
    def compile(self, dev: int, unit) -> Image:
        """``unit`` as an image for device ``dev``, from the disk cache when it holds one.

        The key is the target, the source, the device's identity and the compiler's
        (the pygomp version is added by the cache).  With no compiler here
        (`_compiler_key` gives None), the entry built last for that target, source and
        device identity is used.  A kernel that needs a capability
        the device lacks is a CompileError; a failing compiler raises what its hook
        raises (a CompileError at the Python line, or a PluginError with its log)."""
        missing = set().union(*(k.requires for k in unit.kernels)) - \
            self.device_capabilities(dev)
        if missing:
            what = " and ".join(self.capability_text.get(m, m) for m in sorted(missing))
            names = ", ".join(k.name for k in unit.kernels if set(k.requires) & missing)
            raise CompileError(f"kernel {names} uses {what}; {self.label(dev)} "
                               f"({self.devices()[dev].name}) cannot run it")
        names = [k.name for k in unit.kernels]
        return self._call("compile", dev, lambda: f"of {', '.join(names)}", self._compile,
                          dev, unit)

    def _compile(self, dev, unit):
        ident = self.identity(dev)
        compiler = self._compiler_key(dev, unit)
        source_key = cache.key(self.target, unit.source, ident)
        stats = cache.target_stats(self.target)
        if compiler is None:            # no compiler here: an entry any compiler built
            latest = cache.get(source_key, ".latest")
            key, code = None, latest and cache.get(latest.decode())
        else:
            key = cache.key(source_key, compiler)
            code = cache.get(key)
        names = [k.name for k in unit.kernels]
        if code is None:
            code = self._compile_impl(dev, unit)
            stats["builds"] += 1
            cache.stats["builds"] += 1
            if key is not None:
                try:
                    cache.put(key, code)
                    cache.put(source_key, key.encode(), ".latest")
                except OSError:
                    pass                # a read-only cache is no error
        else:
            stats["cache_hits"] += 1
        return Image(self.target, code, tuple(unit.kernels),
                     tuple(getattr(unit, "variables", ())), ident,
                     names[0] if len(names) == 1 else ", ".join(names))

    def target_hooks(self):
        """The compiler's dialect for this plugin's target (see pygomp.compiler): ``HOOKS``
        of the module ``target`` in the package of the plugin's class (or of the
        nearest base class that has one)."""
        for cls in type(self).__mro__[:type(self).__mro__.index(Plugin)]:
            package = cls.__module__.rpartition(".")[0]
            if package:
                try:
                    return importlib.import_module(package + ".target").HOOKS
                except ModuleNotFoundError as e:
                    if e.name != package + ".target":
                        raise
        raise NotImplementedError(f"plugin {self.name} has no compiler target")

    # -- devices -------------------------------------------------------------
    def _device(self, dev):
        """The state of device ``dev``, started on first use (`_start_device_impl`,
        once, under the plugin's lock)."""
        try:
            return self._state[dev]
        except KeyError:
            with self._lock:
                if dev not in self._state:
                    self._state[dev] = self._start_device_impl(dev)
                return self._state[dev]

    # -- checked operations --------------------------------------------------
    def init_device(self, dev: int) -> None:
        self._call("init", dev, "", self._init_impl, dev)

    def fini_device(self, dev: int) -> None:
        """Finalize a device (`_fini_impl` sees its state still there); its kernels and
        state are forgotten."""
        self._call("fini", dev, "", self._fini_impl, dev)
        with self._lock:
            self._state.pop(dev, None)
            for key in [key for key in self._loads if key[0] == dev]:
                self._forget(key, len(self._loads[key]))

    def load_image(self, dev: int, image: Image, n_functions: int, n_variables: int) -> LoadedImage:
        if len(image.kernels) != n_functions or len(image.variables) != n_variables:
            raise PluginError(
                f"{self.label(dev)}: load_image: image has {len(image.kernels)} "
                f"functions and {len(image.variables)} variables, the table "
                f"{n_functions} and {n_variables}")
        if image.target != self.target:
            raise PluginError(f"{self.label(dev)}: load_image: a {image.target} "
                              f"image, the plugin loads {self.target} images")
        kernels, variables = self._call("load_image", dev, "", self._load_image_impl,
                                        dev, image)
        fns = [k.address for k in kernels]
        with self._lock:
            for k in kernels:
                k.dev = dev
                self._kernels[k.address] = k
            self._loads.setdefault((dev, id(image)), []).append(fns)
        return LoadedImage(fns, list(variables))

    def unload_image(self, dev: int, image: Image) -> None:
        self._call("unload_image", dev, "", self._unload_image_impl, dev, image)
        with self._lock:
            self._forget((dev, id(image)), 1)

    def _forget(self, key, n):
        """Forget the last ``n`` loads of ``key``: the kernels no other load holds."""
        held = self._loads.get(key, [])
        gone = {fn for fns in held[len(held) - n:] for fn in fns}
        del held[len(held) - n:]
        if not held:
            self._loads.pop(key, None)
        kept = {fn for lists in self._loads.values() for fns in lists for fn in fns}
        for fn in gone - kept:
            self._kernels.pop(fn, None)

    def alloc(self, dev: int, size: int) -> int:
        _check_size(size)
        addr = self._call("alloc", dev, lambda: f"{size} bytes", self._alloc_impl, dev, size)
        if not addr:
            raise PluginError(f"{self.label(dev)}: alloc: out of memory for {size} bytes")
        return addr

    def free(self, dev: int, addr: int) -> None:
        self._call("free", dev, lambda: f"at {addr:#x}", self._free_impl, dev, addr)

    def host2dev(self, dev: int, dst: int, src: int, size: int) -> None:
        _check_size(size)
        if size:
            self._call("host2dev", dev, lambda: f"{size} bytes from host {src:#x} to device {dst:#x}",
                       self._host2dev_impl, dev, dst, src, size)

    def dev2host(self, dev: int, dst: int, src: int, size: int) -> None:
        _check_size(size)
        if size:
            self._call("dev2host", dev, lambda: f"{size} bytes from device {src:#x} to host {dst:#x}",
                       self._dev2host_impl, dev, dst, src, size)

    def dev2dev(self, dev: int, dst: int, src: int, size: int) -> None:
        _check_size(size)
        if size:
            self._call("dev2dev", dev, lambda: f"{size} bytes from device {src:#x} to device {dst:#x}",
                       self._dev2dev_impl, dev, dst, src, size)

    def run(self, dev: int, fn: int, args: list, launch=(0, 0, 0)) -> None:
        """Run a kernel to completion (see the module's docstring).  ``args`` is not
        changed."""
        if self.tracer is not None:
            return self.tracer(self, "run", (dev, fn, args, launch), self._run)
        return self._run(dev, fn, args, launch)

    def _run(self, dev, fn, args, launch):
        self._finish(self._start(dev, fn, args, launch, ()), dev, fn, args, launch)

    def _finish(self, event, dev, fn, args, launch):
        """The end of a run's ``event``; an error of the plugin's own says which run."""
        if event is not DONE:
            try:
                event.wait()
            except PluginError:
                raise
            except Exception as e:
                raise self._run_error(dev, fn, self._kernels[fn].info, args, launch, e) \
                    from e

    def run_async(self, dev: int, fn: int, args: list, launch=(0, 0, 0), wait_for=()):
        """Start a kernel after the events ``wait_for``; returns its event.  Once a
        plugin's fast path is installed (`fast_path`), it is the instance's run_async."""
        if self.tracer is not None:
            return self.tracer(self, "run_async", (dev, fn, args, launch, wait_for),
                               self._start)
        return self._start(dev, fn, args, launch, wait_for)

    def _start(self, dev, fn, args, launch=(0, 0, 0), wait_for=()):
        """`run_async` untraced: the checks, then the kernel's `Kernel.run`."""
        if self.fast is None:
            self.fast_path()
        k = self._kernels.get(fn)
        if k is None or k.dev != dev or len(args) != k.nwords:
            k = self._check_run(dev, fn, args)          # says what is wrong
        try:
            return k.run(args, launch, wait_for)
        except PluginError:
            raise
        except Exception as e:
            raise self._run_error(dev, fn, k.info, args, launch, e) from e

    def launcher(self, dev: int, fn: int, launch, nwords: int):
        """``(prepare, start)`` for calls that repeat (`calls.Call`): ``start(prepare(
        words))`` is `run` of the kernel at ``fn`` with these launch sizes and ``nwords``
        argument words, and what ``prepare`` returns may be started again and again, also
        by several threads at once.  The kernel's own (`Kernel.launcher`) where it has
        one, else `run_async` (the fast path where there is one) and a wait, of the words
        as a tuple, which a kernel may know again by identity."""
        k = self._kernels.get(fn)
        if k is None or k.dev != dev or nwords != k.nwords or self.tracer is not None:
            return list, lambda args: self.run(dev, fn, args, launch)   # says what is wrong
        own = k.launcher(launch)
        if own is not None:
            return own
        launch = tuple(launch)
        run_async = self.fast_path() or self._start

        def start(args):
            self._finish(run_async(dev, fn, args, launch), dev, fn, args, launch)
        return tuple, start

    def fast_path(self):
        """The plugin's run_async in C (`_fast_impl`, given the checked Python path for
        what it does not do itself), made on first use and installed as the instance's
        ``run_async``; False where the plugin has none, or while it is traced."""
        if self.fast is None:
            with self._lock:
                if self.fast is None:
                    fast = self._fast_impl(self._start) if self.tracer is None else None
                    if fast:
                        self.run_async = fast
                    self.fast = fast or False
        return self.fast

    def trace_with(self, tracer) -> None:
        """Call ``tracer(plugin, op, args, call)`` around each checked operation from now
        on (it returns ``call(*args)``); the fast path, which it would not see, goes."""
        with self._lock:
            self.tracer = tracer
            self.fast = False
            vars(self).pop("run_async", None)

    def _run_error(self, dev, fn, info, args, launch, e):
        return PluginError(f"{self.label(dev)}: run of kernel {info.name} at {fn:#x} with "
                           f"{len(args)} arguments, launch {tuple(launch)} failed: "
                           f"{type(e).__name__}: {e}")

    def wait(self, dev: int, event) -> None:
        """Wait for an event of `run_async`; work that failed on the device (the kernel,
        or an event it waited for) is a PluginError."""
        if self.tracer is not None:
            return self.tracer(self, "wait", (dev, event), self._wait)
        return self._wait(dev, event)

    def _wait(self, dev, event):
        try:
            event.wait()
        except PluginError:
            raise
        except Exception as e:
            raise PluginError(f"{self.label(dev)}: a kernel failed on the device: "
                              f"{type(e).__name__}: {e}") from e

    def synchronize(self, dev: int) -> None:
        """Wait for everything started on a device."""
        self._call("synchronize", dev, "", self._synchronize_impl, dev)

    def device_array(self, dev: int, obj) -> DeviceArray:
        """``obj``, an array in a GPU's memory (``__cuda_array_interface__`` or DLPack),
        as memory a kernel on this device uses in place; a TypeError or ValueError says
        why it cannot be."""
        raise TypeError(f"it is in GPU memory, which {self.title or self.name} devices "
                        f"cannot use")

    def kernel_info(self, fn: int) -> KernelInfo | None:
        """The KernelInfo of a loaded kernel, by device address."""
        k = self._kernels.get(fn)
        return k and k.info

    def _check_run(self, dev, fn, args):
        """The kernel a run of ``fn`` on ``dev`` with ``args`` launches, or the
        PluginError that says what is wrong."""
        if not 0 <= dev < len(self.devices()):
            raise PluginError(f"{self.name}: run: no device {dev} "
                              f"(the plugin has {self.num_devices()})")
        k = self._kernels.get(fn)
        if k is None:
            raise PluginError(f"{self.label(dev)}: run: no kernel is loaded at {fn:#x}")
        if k.nwords is not None and len(args) != k.nwords:
            raise PluginError(f"{self.label(dev)}: run: kernel {k.info.name} takes "
                              f"{k.nwords} argument words, got {len(args)}")
        if k.dev != dev:
            raise PluginError(f"{self.label(dev)}: run: kernel {k.info.name} at {fn:#x} "
                              f"is loaded on {self.label(k.dev)}")
        return k

    def _call(self, op, dev, what, hook, *args):
        """Run a hook; ``what`` (a string or a function giving one) describes the call
        in the error message, and is only evaluated on failure."""
        if not 0 <= dev < len(self.devices()):
            raise PluginError(f"{self.name}: {op}: no device {dev} "
                              f"(the plugin has {self.num_devices()})")
        try:
            if self.tracer is None:
                return hook(*args)
            return self.tracer(self, op, args, hook)
        except (PluginError, CompileError):
            raise
        except Exception as e:
            what = what() if callable(what) else what
            detail = f" {what}" if what else ""
            raise PluginError(f"{self.label(dev)}: {op}{detail} failed: "
                              f"{type(e).__name__}: {e}") from e

    # -- hooks a plugin implements ------------------------------------------
    def _devices_impl(self): raise NotImplementedError
    def _identity_impl(self, dev) -> str: return self.target
    def _compiler_key(self, dev, unit) -> str | None: return ""   # None: no compiler
    def _compile_impl(self, dev, unit) -> bytes: raise NotImplementedError
    def _start_device_impl(self, dev): return None
    def _init_impl(self, dev): self._device(dev)
    def _fini_impl(self, dev): pass
    def _load_image_impl(self, dev, image) -> tuple: raise NotImplementedError  # ([Kernel], [int])
    def _unload_image_impl(self, dev, image): pass
    def _alloc_impl(self, dev, size) -> int: raise NotImplementedError
    def _free_impl(self, dev, addr): raise NotImplementedError
    def _host2dev_impl(self, dev, dst, src, size): raise NotImplementedError
    def _dev2host_impl(self, dev, dst, src, size): raise NotImplementedError
    def _dev2dev_impl(self, dev, dst, src, size): raise NotImplementedError
    def _synchronize_impl(self, dev): pass

    def _fast_impl(self, fallback):
        """A callable like `run_async` (a C extension's) that launches what it can
        itself and calls ``fallback`` with the same arguments for the rest; None: no
        fast path."""
        return None


def _check_size(size):
    if not isinstance(size, int) or size < 0:
        raise PluginError(f"invalid size {size!r}: a byte count must be an int >= 0")
