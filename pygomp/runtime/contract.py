"""The plugin contract's records: what the runtime, a dialect and a plugin hand each
other (version 1 of the plugin interface, after libgomp's GOMP_OFFLOAD_* functions).

A plugin drives one kind of device.  It sees device numbers local to itself
(0..num_devices()-1), device addresses as ints and byte counts; it never sees the
interval map.  Host memory is passed as int addresses.  The records here describe its
devices (`DeviceInfo`), how to launch a kernel (`KernelInfo`), code for a device
(`Image`, `ProgramImage`, `Source`), where a loaded image lies (`LoadedImage`), an array
already in device memory (`DeviceArray`), and a finished launch (`Event`, `DONE`); a
failed device operation is a `PluginError`.  The kernel level is `kernel.py`, the
plugin base `plugin.py`.
"""
from __future__ import annotations

import math

from ..frozen import Frozen
from ..errors import PygompError

API_VERSION = 1

SCALAR_KINDS = {"i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
                "f32": 4, "f64": 8}      # argument-word kinds other than "p", and their bytes


class PluginError(PygompError, RuntimeError):
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

