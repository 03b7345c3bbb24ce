"""The plugin interface, version 1 (after libgomp's GOMP_OFFLOAD_* functions), and the
kernel contract between a dialect, a plugin and the runtime.

A plugin drives one kind of device.  It sees device numbers local to itself
(0..num_devices()-1), device addresses as ints and byte counts; it never sees the
interval map.  Host memory is passed as int addresses.

Three levels, as in LLVM's offload plugins: the plugin (`Plugin`), its devices (the
state `_start_device_impl` makes, once per device, under the plugin's lock) and their
loaded kernels (`Kernel`).  A subclass implements the `_..._impl` hooks; the public
methods here check their arguments, lock and turn any failure of a hook into one
`PluginError` whose message names the plugin, the device, the operation and the sizes.
A plugin writes memory, copies, compiling, loading and the launch of one entry; the
base owns the kernel registry, the order of the launches, scratch memory and launch
sizes.  A plugin is registered under the entry-point group ``pygomp.plugins``; the
entry point names a subclass of `Plugin`, whose ``__init__`` calls the base's.

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
without a queue runs at once and returns a finished event.
"""
from __future__ import annotations

import importlib
import math
import _thread          # threading's own locks: importing threading takes 0.5 ms

from ..errors import CompileError
from ..frozen import Frozen
from . import cache

API_VERSION = 1

SCALAR_KINDS = {"i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
                "f32": 4, "f64": 8}      # argument-word kinds other than "p", and their bytes


class PluginError(RuntimeError):
    """A device operation failed; the message names device, operation and sizes."""


class DeviceInfo(Frozen):
    """What a plugin tells about one of its devices (for selection and `info`):

    - ``name``, ``platform``; ``kind``: "cpu", "gpu" or "accelerator" (GPUs are
      numbered first)
    - ``memory``: bytes of device memory, 0 if unknown
    - ``properties``: a dict of what else it tells (not compared)
    - ``problem``: why the device does not work ("": its probe passed)
    - ``same_as``: the plugin's number of a device that is this hardware too, or None"""
    __slots__ = _fields = ("name", "kind", "platform", "memory", "properties", "problem",
                           "same_as")
    _defaults = {"kind": "cpu", "platform": "", "memory": 0, "properties": None,
                 "problem": "", "same_as": None}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.properties is None:
            object.__setattr__(self, "properties", {})

    def _key(self):
        return tuple([getattr(self, n) for n in self._fields if n != "properties"])

    def matches(self, word: str) -> bool:
        word = word.lower()
        return word in self.name.lower() or word in self.platform.lower()


class KernelInfo(Frozen):
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
      them); ``tree_bytes`` of team-shared memory per work-item, sized at launch;
      ``private``: global memory per work-item (private arrays sized at run time), the
      sum over its terms ``(bytes, words)`` of bytes times the product of the argument
      words at the indices ``words``.
    - ``program``: the order of the launches when it is not the entries in order: a
      tuple of ops, each an entry's index, ``("repeat", w, ops)`` (run ``ops`` as many
      times as the int64 at global scratch word ``w`` says when it is reached) or
      ``("while", w, ops)`` (run them while that word is nonzero, read before each
      round).  Reading a word waits for the launches before it.
    - ``team_bytes``: static team-shared memory per gang (checked against the device).
    - ``requires``: capabilities the device must have ("fp64", "int64_atomics").
    - ``cooperative``: all gangs must be resident at once (a grid-wide sync inside).
    - ``any_group_size``: the kernel reads its geometry back and works with any
      work-group size, so the plugin may choose it (one work-item per group on CPUs).
    - ``one_group``: the index of an entry that does the whole run in one work-group,
      in place of a looping ``program`` (0: none); the plugin may launch it instead.

    The argument layout, the same for every entry of a kernel:

    1. the argument words, one per kind in ``args``, in the order of the function's
       parameters: an array is its device address followed by one int64 word per
       dimension (its extents), a scalar is its bits (an int in two's complement, a
       float's bit pattern zero-extended), and a function that returns a value ends
       with the address of its result slot;
    2. the address of the global scratch, if the kernel has one (``has_scratch``);
    3. the address of the private scratch, if it has one (``private``): a part per
       work-item of `private_size` bytes rounded up to 8, work-item k's at k times
       that, k counting the work-items of the whole launch;
    4. ``tree_bytes`` of team-local memory per work-item, if it has any.

    How each plugin passes them: the host as an array of 64-bit words, the entry being
    ``void f(uint64_t *words, const int64_t *launch)`` with ``launch`` the three launch
    sizes (4. does not exist there); OpenCL as kernel parameters, a "p" word as two
    (``__global T *base, ulong offset``, bytes; address 0 is NULL and 0), a scalar as its
    type (``int``, ``double``, ...), the scratch as ``__global ulong *``, the tree as
    ``__local ulong *``; CUDA as one ``unsigned long long`` parameter per word and per
    scratch address, the tree as dynamic shared memory.
    """
    __slots__ = _fields = ("name", "entries", "args", "levels", "scratch_bytes",
                           "gang_bytes", "tree_bytes", "private", "program", "team_bytes",
                           "requires", "cooperative", "any_group_size", "one_group")
    _defaults = {"entries": (), "args": (), "levels": (), "scratch_bytes": 0, "gang_bytes": 0,
                 "tree_bytes": 0, "private": (), "program": (), "team_bytes": 0,
                 "requires": (), "cooperative": False, "any_group_size": False,
                 "one_group": 0}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
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

    def private_part(self, args) -> int:
        """Bytes of a work-item's part of the private scratch: `private_size` rounded up
        to 8."""
        return -(-self.private_size(args) // 8) * 8

    def private_size(self, args) -> int:
        """Bytes of private scratch per work-item for a run with these argument words."""
        return sum(b * math.prod(args[i] for i in words) for b, words in self.private)


class Image(Frozen):
    """Code for one kind of device, as every plugin loads it: ``code`` is what the plugin
    compiled (a shared object, a program binary, ...), ``kernels`` describe the table's
    functions in table order, ``variables`` its variables as ``(symbol, size)``.
    ``identity`` is the device identity it was compiled for ("" : any device of
    ``target``).  Each is equal only to itself."""
    __slots__ = _fields = ("target", "code", "kernels", "variables", "identity", "name")
    _defaults = {"kernels": (), "variables": (), "identity": "", "name": ""}
    __eq__, __hash__ = object.__eq__, object.__hash__

    def __repr__(self):
        return (f"<{self.target} image {self.name!r}: {len(self.kernels)} kernels, "
                f"{len(self.variables)} variables, {len(self.code)} bytes>")


class ProgramImage(Image):
    """A C program's own host code as the image of a device that runs it (the host
    plugin's): its variables are the program's, at their host ``addresses``, so the
    region's host code and the device's map see the same memory (runtime/elf_tables.py
    makes them)."""
    __slots__ = ("addresses",)
    _fields = Image._fields + __slots__
    _defaults = {**Image._defaults, "addresses": ()}


class Source(Frozen):
    """A unit written by hand (what a dialect's `emit.Unit` is for generated code):
    ``source``, ``kernels``, ``variables``."""
    __slots__ = _fields = ("source", "kernels", "variables")
    _defaults = {"kernels": (), "variables": ()}


class LoadedImage(Frozen):
    """Device addresses of an image's ``functions`` and ``variables``, in table order."""
    __slots__ = _fields = ("functions", "variables")


class DeviceArray(Frozen):
    """An array already in a device's memory that a kernel uses in place (OpenMP's
    ``is_device_ptr``): its device ``address``, numpy ``dtype`` and ``shape``; ``owner``
    keeps the memory alive.  Each is equal only to itself."""
    __slots__ = _fields = ("address", "dtype", "shape", "owner")
    _defaults = {"owner": None}
    __eq__, __hash__ = object.__eq__, object.__hash__

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Event:
    """A finished operation: what `run_async` returns where a plugin has no queue."""
    __slots__ = ()

    def wait(self) -> None:
        return None


DONE = Event()


class Kernel:
    """A kernel loaded on a device: what every plugin does with it is here (after LLVM's
    GenericKernelTy); a plugin's subclass launches one entry.

    `run` takes the launch's plan (`_plan_impl`, made once per launch sizes) and the
    global scratch for its gangs, then launches the entries in the order of the
    kernel's program.  Runs take turns (``lock``) when they share something: scratch,
    or the entries' arguments where those are kept between runs
    (``shares_arguments``)."""

    shares_arguments = False    # runs share the entries' arguments: they take turns
    max_group = 1 << 30         # work-items per group the kernel allows (`group`)
    max_gangs = 1 << 62         # gangs per launch the device allows

    def __init__(self, info: KernelInfo, address: int):
        self.info = info
        self.address = address            # the device address `run` is given
        self.plans = {}                   # launch sizes -> (gangs, what _plan_impl made)
        self.lock = _thread.allocate_lock()
        self.exclusive = self.shares_arguments or info.has_scratch or bool(info.private)
        self.buffers = {}                 # "scratch" or "private" -> (buffer, bytes)

    def plan(self, launch):
        """What a run with these launch sizes needs (`_plan_impl`, made once)."""
        plan = self.plans.get(launch)
        if plan is None:
            plan = self.plans[tuple(launch)] = self._plan_impl(tuple(launch))
        return plan

    def run(self, args, launch, wait_for):
        """Launch every entry as the kernel's program says; returns an event (or `DONE`
        when it ran to completion)."""
        plan = self.plan(launch)
        if not self.exclusive:
            return self._run(args, plan, wait_for)
        with self.lock:
            return self._run(args, plan, wait_for)

    def _run(self, args, plan, wait_for):
        info = self.info
        scratch = self.grow("scratch", info.scratch_size(plan[0])) if info.has_scratch \
            else None
        run = self._start_impl(args, plan, scratch, wait_for)
        order = (program(info.program, lambda word: self._read(run, word))
                 if info.program else range(len(info.entries)))
        for entry in order:
            self._launch_impl(run, entry)
        return self._end_impl(run)

    def _read(self, run, word):
        if not self.info.has_scratch:
            raise ValueError("a kernel's program reads a scratch word, but its KernelInfo "
                             "asks for no global scratch")
        return self._word_impl(run, word)

    def grow(self, which, size):
        """The kernel's global (``which`` "scratch") or private scratch of at least
        ``size`` bytes: zero when made, its contents kept when it grows (to twice what
        it had, at least)."""
        buf, have = self.buffers.get(which, (None, 0))
        if have < size or buf is None:
            size = max(size, 2 * have, 8)
            buf = self._scratch_impl(size, buf, have)
            self.buffers[which] = (buf, size)
        return buf

    def geometry(self, launch):
        """Launch sizes of a work-group device: the launch's gangs, and per entry its
        gangs and its group ``(vector, workers)``.  An entry that partitions no level
        runs on one work-item; a level it does not partition gets the launch's size, or
        1; levels left 0 get the plugin's defaults (`_group_impl`, `_gangs_impl` of
        the first entry that partitions gangs); a group larger than ``max_group`` is
        halved, workers first.  The entries of the program only (not ``one_group``)."""
        levels = self.info.levels[:self.info.one_group or None]
        groups = [self.group(launch, lv) for lv in levels]
        gangs = launch[0] or next((self._gangs_impl(i, groups[i])
                                   for i, lv in enumerate(levels) if "g" in lv), 1)
        gangs = min(gangs, self.max_gangs)
        return gangs, [((gangs if "g" in lv else launch[0] or 1) if lv else 1, group)
                       for lv, group in zip(levels, groups)]

    def group(self, launch, levels="gwv"):
        """``(vector, workers)`` of an entry that partitions ``levels`` (see `geometry`)."""
        if not levels:
            return 1, 1
        vector, workers = self._group_impl(levels, launch[2], launch[1])
        while workers * vector > self.max_group and workers > 1:
            workers = (workers + 1) // 2
        while workers * vector > self.max_group:
            vector = (vector + 1) // 2
        return vector, workers

    # -- hooks a plugin's kernel implements ------------------------------------
    def _plan_impl(self, launch):
        """``(gangs, anything)``: what a run with these launch sizes needs, made once
        (``gangs`` sizes the global scratch); by default `geometry`."""
        return self.geometry(launch)

    def _group_impl(self, levels, vector, workers):
        """``(vector, workers)`` with the plugin's defaults for sizes left 0."""
        return vector or 1, workers or 1

    def _gangs_impl(self, entry, group):
        """The gangs of a launch that leaves them 0."""
        return 1

    def _scratch_impl(self, size, old, have):
        """New device memory of ``size`` bytes, zero but for the first ``have`` bytes,
        copied from ``old`` (None when ``have`` is 0)."""
        raise NotImplementedError

    def _start_impl(self, args, plan, scratch, wait_for):
        """Set up one run (after the events ``wait_for``); returns what the other hooks
        of this run are given.  By default: the events waited for, then the words
        (the global scratch added) and the plan.  A kernel with private scratch needs
        its plugin's own (`private_part` per work-item, `grow`)."""
        if self.info.private:
            raise NotImplementedError(f"kernel {self.info.name} has private scratch, "
                                      f"which the plugin does not provide")
        for event in wait_for:
            event.wait()
        return (args if scratch is None else [*args, scratch]), plan

    def _launch_impl(self, run, entry):
        """Launch entry number ``entry``."""
        raise NotImplementedError

    def _word_impl(self, run, word) -> int:
        """The int64 at word ``word`` of the global scratch, once the launches so far
        are done."""
        raise NotImplementedError

    def _end_impl(self, run):
        """The run's event, once every launch is started."""
        return DONE


def program(ops, read):
    """The entries a kernel's program launches, in order (see `KernelInfo.program`);
    ``read(word)`` gives a word of its global scratch when it is reached."""
    for op in ops:
        if isinstance(op, int):
            yield op
        elif op[0] == "repeat":
            for _ in range(read(op[1])):
                yield from program(op[2], read)
        else:
            while read(op[1]):
                yield from program(op[2], read)


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

    def __init__(self):
        self._devices = None  # what _devices_impl found, once
        self._kernels = {}    # device address -> Kernel, of every image loaded
        self._loads = {}      # (device, id(image)) -> [kernel addresses], per load
        self._state = {}      # device -> what _start_device_impl made of it
        self._lock = _thread.RLock()
        self._numbers = {}    # device -> (device number, how messages name it)
        self._identities = {}

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
        k = self._kernels.get(fn)
        info = k and k.info
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

    def launcher(self, dev: int, fn: int, launch, nwords: int):
        """``(prepare, start)`` for calls that repeat (`calls.Call`): ``start(prepare(
        words))`` is `run` of the kernel at ``fn`` with these launch sizes and ``nwords``
        argument words, and what ``prepare`` returns may be started again and again, also
        by several threads at once.  A plugin may give faster ones."""
        return list, lambda args: self.run(dev, fn, args, launch)

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
        k = self._kernels.get(fn)
        return k and k.info

    def _check_run(self, dev, fn, args):
        if not 0 <= dev < len(self.devices()):
            raise PluginError(f"{self.name}: run: no device {dev} "
                              f"(the plugin has {self.num_devices()})")
        info = self.kernel_info(fn)
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

    def _run_impl(self, dev, fn, info, args, launch, wait_for):
        """Run the kernel at ``fn`` (see `Kernel.run`)."""
        return self._kernels[fn].run(args, launch, wait_for)


def _check_size(size):
    if not isinstance(size, int) or size < 0:
        raise PluginError(f"invalid size {size!r}: a byte count must be an int >= 0")
