"""The plugin interface, version 1 (after libgomp's GOMP_OFFLOAD_* functions), and the
kernel contract between a dialect, a plugin and the runtime.

A plugin drives one kind of device.  It sees device numbers local to itself
(0..num_devices()-1), device addresses as ints and byte counts; it never sees the
interval map.  Host memory is passed as int addresses.

A subclass implements the `_..._impl` hooks.  The public methods here check their
arguments and turn any failure of a hook into one `PluginError` whose message names
the plugin, the device, the operation and the sizes.  A plugin is registered under the
entry-point group ``pygomp.plugins``; the entry point names a subclass of `Plugin`.

Compiling: a dialect (the plugin's ``target_hooks()``) writes a *unit*: an object with
``source`` (text) and ``kernels`` (one `KernelInfo` a kernel), optionally ``variables``
(``(symbol, size)`` pairs).  `Plugin.compile` turns a unit into an `Image` for one device,
through the disk cache (`pygomp.runtime.cache`), keyed by the target, the source, the
device's identity and the compiler's.  A table (`images.OffloadImage`) carries images;
`load_image` loads one and gives the device addresses of its kernels and variables.

Running: ``run(dev, fn, args, launch)`` runs the kernel at device address ``fn``.
``args`` is a list of 64-bit words, one a kernel argument (`KernelInfo.args` says which
is which): a device address for a mapped item, or the raw bits of a firstprivate value
(an int in two's complement, a float's bit pattern zero-extended).  ``launch`` is
``(num_gangs, num_workers, vector_length)``; 0 leaves a level to the plugin.  A kernel
with several entries runs them in order, each to completion before the next starts,
all within one ``run``, with one global scratch buffer that persists across them.
``run_async`` does the same without waiting and returns an event, waited for with
``wait(dev, event)``; a plugin without a queue runs at once and returns a finished event.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import CompileError
from . import cache

API_VERSION = 1

SCALAR_KINDS = {"i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
                "f32": 4, "f64": 8}      # argument-word kinds other than "p", and their bytes


class PluginError(RuntimeError):
    """A device operation failed; the message names device, operation and sizes."""


@dataclass(frozen=True)
class DeviceInfo:
    """What a plugin tells about one of its devices (for selection and `info`)."""
    name: str
    kind: str = "cpu"            # "cpu", "gpu" or "accelerator"; GPUs are numbered first
    platform: str = ""
    memory: int = 0              # bytes of device memory, 0 if unknown
    properties: dict = field(default_factory=dict, hash=False, compare=False)
    problem: str = ""            # why the device does not work ("": its probe passed)
    same_as: int | None = None   # the plugin's number of a device that is this hardware too

    def matches(self, word: str) -> bool:
        word = word.lower()
        return word in self.name.lower() or word in self.platform.lower()


@dataclass(frozen=True)
class KernelInfo:
    """How to launch one kernel (one function of a table).

    - ``entries``: its entry symbols.  One ``run`` launches them in this order; each
      launch finishes before the next starts, and nothing returns to the host between
      them.  ``levels`` gives, per entry, the loop levels it partitions ("g", "w", "v";
      "gwv" when not given); a level it does not partition gets size 1 unless the
      launch asks otherwise, and "" runs the entry on one work-item.
    - ``args``: the kind of each argument word: "p" (a device address) or a scalar kind
      of `SCALAR_KINDS` ("i32", "f64", ...; a bool is "u8").
    - Scratch memory the plugin provides at each run (layouts belong to the dialect):
      ``scratch_bytes + gang_bytes * gangs`` bytes of global scratch, zero when first
      made and kept between entries and runs (so a kernel leaves counters as it found
      them); ``tree_bytes`` of team-shared memory a work-item, sized at launch;
      ``private``: global memory a work-item (private arrays sized at run time), the
      sum over its terms ``(bytes, words)`` of bytes times the product of the argument
      words at the indices ``words``.
    - ``program``: the order of the launches when it is not the entries in order: a
      tuple of ops, each an entry's index, ``("repeat", w, ops)`` (run ``ops`` as many
      times as the int64 at global scratch word ``w`` says when it is reached) or
      ``("while", w, ops)`` (run them while that word is nonzero, read before each
      round).  Reading a word waits for the launches before it.
    - ``team_bytes``: static team-shared memory a gang (checked against the device).
    - ``requires``: capabilities the device must have ("fp64", "int64_atomics").
    - ``cooperative``: all gangs must be resident at once (a grid-wide sync inside).
    - ``any_group_size``: the kernel reads its geometry back and works with any
      work-group size, so the plugin may choose it (one work-item a group on CPUs).
    """
    name: str
    entries: tuple = ()
    args: tuple = ()
    levels: tuple = ()
    scratch_bytes: int = 0
    gang_bytes: int = 0
    tree_bytes: int = 0
    private: tuple = ()
    program: tuple = ()
    team_bytes: int = 0
    requires: tuple = ()
    cooperative: bool = False
    any_group_size: bool = False

    def __post_init__(self):
        if not self.entries:
            object.__setattr__(self, "entries", (self.name,))
        if not self.levels:
            object.__setattr__(self, "levels", ("gwv",) * len(self.entries))
        if len(self.levels) != len(self.entries):
            raise ValueError(f"kernel {self.name}: {len(self.entries)} entries but "
                             f"{len(self.levels)} levels")

    @property
    def has_scratch(self) -> bool:
        return bool(self.scratch_bytes or self.gang_bytes)

    def scratch_size(self, gangs: int) -> int:
        return self.scratch_bytes + self.gang_bytes * gangs

    def private_size(self, args) -> int:
        """Bytes of private scratch a work-item for a run with these argument words."""
        return sum(b * math.prod(args[i] for i in words) for b, words in self.private)


@dataclass(frozen=True, eq=False)
class Image:
    """Code for one kind of device, as every plugin loads it: ``code`` is what the plugin
    compiled (a shared object, a program binary, ...), ``kernels`` describe the table's
    functions in table order, ``variables`` its variables as ``(symbol, size)``.
    ``identity`` is the device identity it was compiled for ("" : any device of
    ``target``)."""
    target: str
    code: bytes
    kernels: tuple = ()
    variables: tuple = ()
    identity: str = ""
    name: str = ""

    def __repr__(self):
        return (f"<{self.target} image {self.name!r}: {len(self.kernels)} kernels, "
                f"{len(self.variables)} variables, {len(self.code)} bytes>")


@dataclass(frozen=True)
class Source:
    """A unit written by hand (what a dialect's `emit.Unit` is for generated code)."""
    source: str
    kernels: tuple = ()
    variables: tuple = ()


@dataclass(frozen=True)
class LoadedImage:
    """Device addresses of an image's functions and variables, in table order."""
    functions: list
    variables: list


@dataclass(frozen=True, eq=False)
class DeviceArray:
    """An array already in a device's memory that a kernel uses in place (OpenMP's
    ``is_device_ptr``): its device address, numpy dtype and shape; ``owner`` keeps the
    memory alive."""
    address: int
    dtype: object
    shape: tuple
    owner: object = None

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Event:
    """A finished operation: what `run_async` returns where a plugin has no queue."""
    __slots__ = ()

    def wait(self) -> None:
        return None


DONE = Event()


class Plugin:
    """Base class: checks, validation and error text; hooks below."""
    name = "?"            # the name used in PYGOMP_DEVICES
    target = "?"          # the kind of image it loads (Image.target)
    title = ""            # how messages name its compiler ("OpenCL"); default: name
    api_version = API_VERSION
    capabilities = frozenset()   # e.g. {"fp64", "int64_atomics", "generic_address_space"}
    asynchronous = False  # run_async returns before the kernel ends (a device queue)
    capability_text = {}  # how a compile error names a missing capability
    _kernel_infos = MappingProxyType({})  # device address -> KernelInfo (load_image)
    unavailable = ""      # why the plugin finds no devices, when it can tell

    # -- discovery ---------------------------------------------------------
    def devices(self) -> list[DeviceInfo]:
        """Every device this plugin finds on this machine (cached)."""
        if not hasattr(self, "_devices"):
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
        return self.__dict__.get("_numbers", {}).get(dev, (None, ""))[0]

    def label(self, dev: int) -> str:
        """How messages name a device: by its device number when it has one."""
        got = self.__dict__.get("_numbers", {}).get(dev)
        return got[1] if got else f"{self.name} device {dev}"

    def set_number(self, dev: int, number: int, initial: bool = False) -> None:
        """Give the plugin's device ``dev`` its device number (the runtime does)."""
        label = f"device {number} ({'the initial device' if initial else f'{self.name} {dev}'})"
        self.__dict__.setdefault("_numbers", {})[dev] = (number, label)

    def device_capabilities(self, dev: int) -> frozenset:
        return frozenset(self.capabilities)

    def identity(self, dev: int) -> str:
        """What makes code compiled for this device run on it: images compiled for one
        identity load on every device of that identity (cached per device)."""
        ids = self.__dict__.setdefault("_identities", {})
        ident = ids.get(dev)
        if ident is None:
            ident = ids[dev] = self._call("identity", dev, "", self._identity_impl, dev)
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
            code = self._call("compile", dev, lambda: f"of {', '.join(names)}",
                              self._compile_impl, dev, unit)
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
        """The compiler's dialect for this plugin's target (see pygomp.compiler)."""
        raise NotImplementedError(f"plugin {self.name} has no compiler target")

    # -- checked operations --------------------------------------------------
    def init_device(self, dev: int) -> None:
        self._call("init", dev, "", self._init_impl, dev)

    def fini_device(self, dev: int) -> None:
        self._call("fini", dev, "", self._fini_impl, dev)

    def load_image(self, dev: int, image: Image, n_functions: int, n_variables: int) -> LoadedImage:
        if len(image.kernels) != n_functions or len(image.variables) != n_variables:
            raise PluginError(
                f"{self.label(dev)}: load_image: image has {len(image.kernels)} "
                f"functions and {len(image.variables)} variables, the table "
                f"{n_functions} and {n_variables}")
        if image.target != self.target:
            raise PluginError(f"{self.label(dev)}: load_image: a {image.target} "
                              f"image, the plugin loads {self.target} images")
        loaded = self._call("load_image", dev, "", self._load_image_impl, dev, image)
        if "_kernel_infos" not in self.__dict__:
            self._kernel_infos, self._loads = {}, {}
        for fn, info in zip(loaded.functions, image.kernels):
            self._kernel_infos[fn] = info
        self._loads.setdefault((dev, id(image)), []).append(loaded.functions)
        return loaded

    def unload_image(self, dev: int, image: Image) -> None:
        self._call("unload_image", dev, "", self._unload_image_impl, dev, image)
        loads = self.__dict__.get("_loads", {})
        held = loads.get((dev, id(image)))
        if not held:
            return
        fns = held.pop()
        if not held:
            del loads[dev, id(image)]
        kept = {fn for lists in list(loads.values()) for fs in lists for fn in fs}
        for fn in fns:                  # unless another load still has it
            if fn not in kept:
                self._kernel_infos.pop(fn, None)

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
        info = self._kernel_infos.get(fn)
        # a kernel is loaded, so devices() has run and _devices is there
        if info is None or len(args) != len(info.args) or not 0 <= dev < len(self._devices):
            self._check_run(dev, fn, args)              # says what is wrong
        try:
            event = self._run_impl(dev, fn, info, args, launch, ())
            if event is not DONE:
                event.wait()
        except PluginError:
            raise
        except Exception as e:
            raise self._run_error(dev, fn, info, args, launch, e) from e

    def run_async(self, dev: int, fn: int, args: list, launch=(0, 0, 0), wait_for=()):
        """Start a kernel after the events ``wait_for``; returns its event."""
        return self._start(dev, fn, args, launch, wait_for)

    def _start(self, dev, fn, args, launch, wait_for):
        info = self._check_run(dev, fn, args)
        try:
            return self._run_impl(dev, fn, info, args, launch, wait_for)
        except PluginError:
            raise
        except Exception as e:
            raise self._run_error(dev, fn, info, args, launch, e) from e

    def _run_error(self, dev, fn, info, args, launch, e):
        return PluginError(f"{self.label(dev)}: run of kernel {info.name} at {fn:#x} with "
                           f"{len(args)} arguments, launch {tuple(launch)} failed: "
                           f"{type(e).__name__}: {e}")

    def wait(self, dev: int, event) -> None:
        """Wait for an event of `run_async`; work that failed on the device (the kernel,
        or an event it waited for) is a PluginError."""
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
        return self._kernel_infos.get(fn)

    def _check_run(self, dev, fn, args):
        if not 0 <= dev < len(self.devices()):
            raise PluginError(f"{self.name}: run: no device {dev} "
                              f"(the plugin has {self.num_devices()})")
        info = self._kernel_infos.get(fn)
        if info is None:
            raise PluginError(f"{self.label(dev)}: run: no kernel is loaded at {fn:#x}")
        if len(args) != len(info.args):
            raise PluginError(f"{self.label(dev)}: run: kernel {info.name} takes "
                              f"{len(info.args)} argument words, got {len(args)}")
        return info

    def _call(self, op, dev, what, hook, *args):
        """Run a hook; ``what`` (a string or a function giving one) describes the call
        in the error message, and is only evaluated on failure."""
        if not 0 <= dev < len(self.devices()):
            raise PluginError(f"{self.name}: {op}: no device {dev} "
                              f"(the plugin has {self.num_devices()})")
        try:
            return hook(*args)
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
    def _init_impl(self, dev): pass
    def _fini_impl(self, dev): pass
    def _load_image_impl(self, dev, image) -> LoadedImage: raise NotImplementedError
    def _unload_image_impl(self, dev, image): pass
    def _alloc_impl(self, dev, size) -> int: raise NotImplementedError
    def _free_impl(self, dev, addr): raise NotImplementedError
    def _host2dev_impl(self, dev, dst, src, size): raise NotImplementedError
    def _dev2host_impl(self, dev, dst, src, size): raise NotImplementedError
    def _dev2dev_impl(self, dev, dst, src, size): raise NotImplementedError
    def _synchronize_impl(self, dev): pass

    def _run_impl(self, dev, fn, info, args, launch, wait_for):
        """Launch every entry of ``info`` in order; return an event (or `DONE` after
        running to completion)."""
        raise NotImplementedError


def _check_size(size):
    if not isinstance(size, int) or size < 0:
        raise PluginError(f"invalid size {size!r}: a byte count must be an int >= 0")
