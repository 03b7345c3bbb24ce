"""The Python half of libpygomp.so: where the library's embedded Python starts, and what
its modules share.

csrc/shim.c calls the ``pg_py_*`` functions (cffi ``extern "Python"``) of this package's
modules, each of which decodes one family of GCC's calls into runtime-core calls:
`gomp` (OpenMP's constructs), `goacc` (OpenACC's), `omp_routines`, `acc_routines`,
`tables` (offload tables), `plans` (regions that C runs itself); `hostcode` runs the
host code of regions without an image.  The library's init code calls `attach`, which
gives cffi every one of them.  GCC's map items come as shim.c's (address, size, kind)
triples (`items`, `acc_items`): 16-bit kinds, the map kind in the low byte and log2 of
its alignment in the high byte.  A failure ends the process as libgomp's gomp_fatal
does, after its traceback unless it is one of pygomp's own errors for the user
(`_on_error`).
"""
from __future__ import annotations

import re
import sys
import traceback

from .. import openacc as acc
from ..errors import PygompError
from ..runtime import accprof, devices, elf_tables, images, kinds, mapping, trace
from ..runtime.entries import Item

ffi = lib = None                # the library's, from `attach`


def attach(ffi_, lib_) -> None:
    """Called once by the library's init code: define the extern "Python" functions."""
    global ffi, lib
    ffi, lib = ffi_, lib_
    for name, fn in externs().items():
        ffi.def_extern(name=name, onerror=_on_error)(fn)
    from . import plans
    plans.start()
    if not sys.orig_argv:       # this library started Python: a C program's numbering
        devices.native_first()
    for found in elf_tables.loaded():
        if found.variables:
            images.register(elf_tables.offload_table(found))
    accprof.use_c(ffi, lib)


def externs() -> dict:
    """Every ``pg_py_*`` function of the package's modules, by name."""
    from . import acc_routines, goacc, gomp, omp_routines, plans, tables
    return {name: fn for module in (sys.modules[__name__], gomp, goacc, omp_routines,
                                    acc_routines, tables, plans)
            for name, fn in vars(module).items() if name.startswith("pg_py_")}


def _on_error(exc_type, exc, tb):
    """An exception escaped a callback: libgomp's fatal error (shim.c prints
    "libgomp: <words>" and exits with status 1).  An error that pygomp raised on purpose
    for the user shows its words alone; anything else, a bug or a hook that failed,
    shows its whole traceback first."""
    if not _deliberate(exc):
        traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
    sys.stderr.flush()
    lib.pg_fatal(_words(exc).encode(errors="replace"))


def _deliberate(exc) -> bool:
    """Raised on purpose with words for the user, and not caused by another error."""
    while exc is not None:
        if not isinstance(exc, PygompError):
            return False
        exc = exc.__cause__
    return True


def _words(exc) -> str:
    """libgomp's words for an error (a map error without pygomp's "device N: ")."""
    if isinstance(exc, mapping.MappingError):
        return re.sub(r"^device \d+: ", "", str(exc))
    if isinstance(exc, devices.OffloadError):
        return str(exc)
    return f"pygomp: {type(exc).__name__}: {exc}"


_new = tuple.__new__            # an Item without namedtuple's slower constructor
_DEFAULTS = tuple(Item._field_defaults.values())      # the fields after addr, size, kind
_NULL = Item(0, 0, kinds.FIRSTPRIVATE_INT)


def items(n, packed):
    """The map items of a construct from shim.c's (address, size, kind) triples, in
    order (a NULL address is passed as NULL)."""
    w = ffi.unpack(packed, 3 * n)
    return [_new(Item, (a, s, k) + _DEFAULTS) if a else _NULL
            for a, s, k in zip(w[0::3], w[1::3], w[2::3])]


def acc_items(n, packed):
    """`items` of an OpenACC construct, whose kinds keep libgomp's alignment byte (log2
    of the alignment, above the kind's low byte): the items carry the alignment."""
    w = ffi.unpack(packed, 3 * n)
    return [_new(Item, (a, s, k & 0xff, None, None, 1 << (k >> 8))) if a else _NULL
            for a, s, k in zip(w[0::3], w[1::3], w[2::3])]


def has_image(dev, fn) -> bool:
    """Whether ``fn`` has an image loaded on ``dev``."""
    return bool(dev.loaded) and mapping.find_function(dev, fn) is not None


def pg_py_at_exit():
    """The program's end (the embedded interpreter is never finalized, so Python's
    atexit does not run): release the devices, write the PYGOMP_PROFILE trace."""
    lib.pg_plans_off()
    devices.finalize_all()
    if accprof.mask:
        rec = accprof.start(accprof.construct_runtime_api, acc.device_none, -1)
        accprof.fire(rec or accprof.current(), accprof.ev_runtime_shutdown)
        accprof.finish(rec)
    if trace.on:
        trace.write()


def pg_py_prof_mask():
    accprof.mask_changed()
    if accprof.mask:            # callbacks see every region: Python runs them all
        lib.pg_plans_off()
