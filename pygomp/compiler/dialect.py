"""`Dialect`: the hooks through which a target's dialect tells the emitter what differs.

A plugin gives its dialect through ``Plugin.target_hooks()``: an instance of a `Dialect`
subclass (the host one is ``pygomp.plugins.host.target.HOOKS``; OpenCL and CUDA build
on `pygomp.compiler.workgroup.WorkGroupDialect`).  The defaults write C; `c_const` is
the C text of a scalar constant.  The emitter that calls the hooks is
`pygomp.compiler.emit.Emitter`.
"""
from __future__ import annotations

import math

from ..runtime.plugin import KernelInfo
from . import atomics, complexes, ir, printing
from . import types as T
from .argwords import private_terms, word_kinds
from .arith import ARITH

class Dialect:
    """Target hooks of the emitter.  Override what differs; the defaults write C.

    Naming: ``em`` is the `Emitter` (``em.line(text)``, ``em.expr(e)``, ``em.stmts(list)``,
    ``em.indent()``, ``em.uid()``, ``em.state`` the dialect's own state: `new_state`).
    """
    target = "?"            # the target of the plugin that compiles it (Image.target)
    hoist_loads = False     # read loads no iteration changes once, before a loop (hoist.py)
    index32 = ""            # the C type of int64 values proven to fit in int32 (narrow.py)
    index_decl = ""         # what defines that type, after the preamble
    helper_prefix = "static "   # what opens a helper's definition

    def new_state(self, fn: ir.Function, like=None):
        """A fresh object for the dialect's bookkeeping while it emits ``fn`` (``like``:
        the state of the kernel whose variant ``fn`` is)."""
        return None

    # -- text pieces -------------------------------------------------------------
    def preamble(self, fn: ir.Function) -> str:
        """Text before everything (includes, typedefs, helper macros)."""
        return ""

    def type_name(self, t: T.Scalar) -> str:
        return t.c

    def pointer(self, t: T.Array) -> str:
        """The C type of a pointer to an array's elements, with its address space."""
        return f"{self.type_name(t.elem)} *"

    def const(self, value, t: T.Scalar) -> str:
        if t.is_complex:
            return complexes.const(self, value, t)
        return c_const(value, t, self.type_name(t))

    def identity(self, op: str, t: T.Scalar) -> str:
        """The identity of a reduction operator, as text."""
        if t.is_complex:
            return self.const(int(op == "*"), t)
        return T.IDENTITY[op](t)

    # -- complex numbers (see `pygomp.compiler.complexes`) -----------------------------
    fp64_guard = ("", "")       # lines around the complex128 functions
    complex_struct = False      # the unit defines each complex type: a struct {x, y}

    def complex_make(self, t: T.Scalar, re: str, im: str) -> str:
        """A complex ``t`` from its parts (text of ``t.real`` values)."""
        return f"({self.type_name(t)}){{{re}, {im}}}"

    def complex_part(self, z: str, part: str) -> str:
        """The real or imaginary part of a complex value (an lvalue where ``z`` is)."""
        return f"({z}).{'x' if part == 'real' else 'y'}"

    float32_suffix = "f"    # C and CUDA name float32 math with an f; OpenCL C overloads

    def call(self, name: str, t: T.Scalar, args: list[str]) -> str:
        """A math call by generic name (sqrt, pow, min, floordiv, isnan, ...); ``t`` is the
        type of the arguments (the result type, except for isnan/isinf/isfinite).  The
        preamble defines the functions of `arith_helpers` (names in ARITH)."""
        f = self.float32_suffix if t == T.FLOAT32 else ""
        if name == "abs":
            if t.is_float:
                return f"fabs{f}({args[0]})"
            return f"pyg_abs_{t.name}({args[0]})" if t.is_signed else args[0]
        if name in ARITH:
            return f"pyg_{name}_{t.name}({', '.join(args)})"
        if name in ("isnan", "isinf", "isfinite"):
            return f"({name}({args[0]}) != 0)"
        if name == "gamma":
            name = "tgamma"
        return f"{name}{f}({', '.join(args)})"

    def builtin(self, em, name: str) -> str:
        """gang_id, worker_id, vector_id, num_gangs, num_workers, vector_length."""
        raise NotImplementedError(name)

    # -- functions ---------------------------------------------------------------
    def helper_open(self, em, fn: ir.Function, params: list[str]) -> None:
        """Open a declare_target helper (``params`` are C parameter declarations)."""
        ret = "void" if fn.ret is T.VOID else self.type_name(fn.ret)
        em.line(f"{self.helper_prefix}{ret} {fn.name}({', '.join(params) or 'void'})")
        em.line("{")

    def entries(self, em, fn: ir.Function) -> list:
        """[(entry name, statements)]: the launches of one run of the kernel, in order
        (several where a grid-wide order is needed: see `pygomp.compiler.steps`)."""
        return [(fn.name, fn.body)]

    def kernel_open(self, em, fn: ir.Function) -> None:
        """Open the entry point ``em.entry`` (a name of `entries`) and define every name
        of `arg_words` from the arguments (and the result pointer ``fn.ret_param``)."""
        raise NotImplementedError

    def kernel_body(self, em, fn: ir.Function, body: list) -> None:
        """The statements of an entry (after the declarations of the kernel's variables)."""
        em.stmts(body)

    def stop_test(self) -> str | None:
        """A C condition that holds once Ctrl-C has stopped the kernel, tested in its
        sequential loops (not a helper's), or None where a launch cannot stop."""
        return None

    def kernel_close(self, em, fn: ir.Function) -> None:
        em.line("}")

    def kernel_return(self, em, fn: ir.Function, value: str | None) -> None:
        """``return value`` at the top level of a kernel."""
        if value is not None:
            em.line(f"*{fn.ret_param} = {value};")
        em.line("return;")

    # -- declarations, statements -------------------------------------------------
    write_flags = False     # a helper takes ``P__w`` after its parameters, for each array
                            # P it stores into: whether the caller's thread stores (`writer`)

    def writer(self, em, arr: ir.ArrayRef) -> str:
        """With write_flags: whether this thread does the stores into ``arr``, as text."""
        return "1"

    def store(self, em, s: ir.Assign) -> None:
        """An assignment to an array element (a dialect may guard it, or look at the
        address space of ``s.target.array.type``)."""
        em.line(f"{em.expr(s.target)} = {em.expr(s.value)};")

    def array_decl(self, em, name: str, t: T.Array) -> None:
        """Declare a private (one per thread) or local (one per gang) array of t.shape."""
        em.line(f"{self.type_name(t.elem)} {name}[{math.prod(t.shape)}];")

    def loop(self, em, loop: ir.ParLoop) -> None:
        """Lower a partitioned loop: its reductions' SETUP/INIT/FINI/TEARDOWN calls
        (``loop.setup`` ...), the iteration over ``loop.dims`` (use `Emitter.trip` and
        `Emitter.dim_values`), the private declarations ``loop.decls`` (`Emitter.decls`)
        and the body (``em.stmts(loop.body)``)."""
        raise NotImplementedError

    def reduction(self, em, call: ir.RedCall) -> None:
        """One of the four reduction calls (see `pygomp.compiler.reductions`)."""
        raise NotImplementedError

    def atomic_add(self, em, s: ir.AtomicAdd) -> None:
        """``s.target += s.value`` atomically (``s.target`` is an ir.Index)."""
        raise NotImplementedError

    def barrier(self, em) -> None:
        raise NotImplementedError

    def print(self, em, s: ir.Print) -> None:
        em.line(f"printf({', '.join(printing.printf_args(em, s))});")

    def print_item(self, t: T.Scalar, value: str) -> tuple:
        """The printf conversion of a ``t`` and its argument."""
        if t.is_bool:
            return "%s", f'({value}) ? "True" : "False"'
        if t.is_float:
            return "%g", value
        if t.size < 8:
            return ("%d", f"(int)({value})") if t.is_signed else ("%u", f"(unsigned)({value})")
        return ("%lld", f"(long long)({value})") if t.is_signed \
            else ("%llu", f"(unsigned long long)({value})")

    # -- atomics with their old value (see `pygomp.compiler.atomics`) ------------------
    cas_sizes = (4, 8)          # the element sizes the device compares and swaps

    def atomic_op(self, em, a: ir.Atomic, result) -> None:
        """``a``, its old value stored into ``result`` (C text, or None)."""
        atomics.emit(em, a, result)

    def atomic_native(self, em, a: ir.Atomic, ptr: str):
        """The device's instruction for ``a`` on ``ptr``, valued the old element (reading
        ``pyg_v`` and ``pyg_e``), or None: a CAS loop."""
        return None

    def atomic_pointer(self, space: str, c: str) -> str:
        """The type of a pointer to a ``c`` the device's atomics take, in ``space``."""
        return f"{c} *"

    def atomic_swap(self, space: str, size: int, ptr, old, new) -> str:
        """Compare-and-swap of a ``size``-byte unsigned word; its value the old word."""
        raise NotImplementedError

    # -- the kernel contract ----------------------------------------------------------
    def kernel_info(self, em, fn: ir.Function) -> KernelInfo:
        """How the plugin launches the kernel (called once the kernel is emitted): by
        default one entry, its argument words, all levels, its private scratch."""
        return KernelInfo(fn.pyname, (fn.name,), word_kinds(fn), private=private_terms(fn))

    def variants(self, em, fn: ir.Function) -> list:
        """Other ways to run the kernel, emitted after it into the same source, each a
        function with the kernel's parameters (none by default); ``em.state`` is the
        kernel's."""
        return []

    def joined(self, info: KernelInfo, other: KernelInfo) -> KernelInfo:
        """The KernelInfo of a kernel and of a variant of it, together."""
        raise NotImplementedError

    # -- bounds checking (see `pygomp.compiler.boundscheck`) -----------------------------
    inline = "static inline"    # how the unit's small functions are declared

    def claim(self, record: str) -> str:
        """A condition true for the one caller that atomically turns the first 32-bit
        word of ``record`` (an int64 pointer) from 0 to 1."""
        return f"__sync_bool_compare_and_swap((int *){record}, 0, 1)"

    def record_pointer(self) -> str:
        """The C type of the error record's pointer, as a parameter."""
        return f"{self.type_name(T.INT64)} *"


def c_const(value, t: T.Scalar, tname: str) -> str:
    if t.is_bool:
        return "1" if value else "0"
    if t.is_float:
        v = float(value)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        text = repr(v)
        if "e" not in text and "." not in text:
            text += ".0"
        text += "f" if t == T.FLOAT32 else ""
        return f"({text})" if v < 0 else text
    v = int(value)
    if t == T.INT64:
        if v == -2**63:
            return "(-9223372036854775807L - 1)"
        return f"{v}L" if v >= 0 else f"({v}L)"
    if t == T.UINT64:
        return f"{v % 2**64}UL"
    if t == T.UINT32:
        return f"{v % 2**32}U"
    if t == T.INT32:
        return str(v) if v >= 0 else f"({v})"
    return f"(({tname}){v})"
