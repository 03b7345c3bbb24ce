"""One C-family emitter; everything target-specific comes from a `Dialect`.

The emitter writes expressions, statements, helpers and declarations in the C syntax the
three languages share (C, OpenCL C, CUDA C), with ``#line`` directives so that a compiler
error points at the Python line.  A plugin gives its dialect through
``Plugin.target_hooks()``: a `Dialect` subclass instance (the host one is
``pygomp_plugins.host.target.HOOKS``).

A unit also describes its kernel for the plugin (`Dialect.kernel_info`, one
`pygomp.runtime.plugin.KernelInfo` per kernel, which describes the argument words that
`arg_words` names); the plugin compiles the source.  Work-group targets (OpenCL, CUDA)
share one lowering on top of this emitter: `pygomp.compiler.workgroup`.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

from ..errors import CompileError
from ..runtime.plugin import KernelInfo
from . import atomics, boundscheck, complexes, hoist, ir, printing
from . import types as T
from .reductions import combine


class Dialect:
    """Target hooks of the emitter.  Override what differs; the defaults write C.

    Naming: ``em`` is the `Emitter` (``em.line(text)``, ``em.expr(e)``, ``em.stmts(list)``,
    ``em.indent()``, ``em.uid()``, ``em.state`` the dialect's own state: `new_state`).
    """
    target = "?"            # the target of the plugin that compiles it (Image.target)
    hoist_loads = False     # read loads no iteration changes once, before a loop (hoist.py)
    helper_prefix = "static "   # what opens a helper's definition

    def new_state(self, fn: ir.Function):
        """A fresh object for the dialect's bookkeeping while it emits ``fn``."""
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

    # -- bounds checking (see `pygomp.compiler.boundscheck`) -----------------------------
    inline = "static inline"    # how the unit's small functions are declared

    def claim(self, record: str) -> str:
        """A condition true for the one caller that atomically turns the first 32-bit
        word of ``record`` (an int64 pointer) from 0 to 1."""
        return f"__sync_bool_compare_and_swap((int *){record}, 0, 1)"

    def record_pointer(self) -> str:
        """The C type of the error record's pointer, as a parameter."""
        return f"{self.type_name(T.INT64)} *"


@dataclass
class Unit:
    """The generated source of one kernel specialization, and its KernelInfo: what
    `Plugin.compile` takes."""
    source: str
    entry: str                  # the kernel's symbol name
    words: list                 # arg_words(fn)
    ret: object                 # the result type, or T.VOID
    fn: ir.Function = field(repr=False, default=None)
    dialect: Dialect = field(repr=False, default=None)
    kernels: tuple = ()         # (KernelInfo,)
    written: dict = field(default_factory=dict)     # array parameter -> "file:line"
    sites: tuple = ()           # bounds checking: (file, line) of each access site


ARITH = ("min", "max", "minimum", "maximum", "abs", "floordiv", "mod", "shl", "shr", "ipow")


def arith_helpers(qual: str, type_name, f32_suffix: str, guard=None) -> str:
    """The C text of the functions that give kernels Python's and numpy's arithmetic,
    for every scalar type T (``qual`` opens each definition, e.g. "static inline"):

    - pyg_min_T, pyg_max_T: Python's min/max of two (the first wins ties and NaN);
      pyg_minimum_T, pyg_maximum_T: numpy's (a NaN wins);
    - pyg_abs_T (signed integers);
    - pyg_floordiv_T, pyg_mod_T: floor division and the remainder with the divisor's
      sign; integers: x // 0 == x % 0 == 0, MIN // -1 == MIN, nothing traps; floats:
      numpy's floor_divide and remainder (inf and nan where numpy gives them);
    - pyg_shl_T, pyg_shr_T (integers): numpy's shifts, whose count may be out of range;
    - pyg_ipow_T (integers): a ** b by squaring, wrapping; a negative b gives the
      integer part of the real result.

    ``guard(t)`` may return (line before, line after) around a type's functions."""
    out = []
    for t in T.SCALARS.values():
        c, n = type_name(t), t.name
        pre, post = guard(t) if guard else ("", "")
        if pre:
            out.append(pre)

        def fn(name, params, body):
            out.append(f"{qual} {c} pyg_{name}_{n}({params}) {{ {body} }}")

        ab = f"{c} a, {c} b"
        fn("min", ab, "return b < a ? b : a;")
        fn("max", ab, "return b > a ? b : a;")
        if t.is_float:
            fn("minimum", ab, "return (a < b || a != a) ? a : b;")
            fn("maximum", ab, "return (a > b || a != a) ? a : b;")
            f = f32_suffix if t == T.FLOAT32 else ""
            fn("mod", ab, f"{c} r = fmod{f}(a, b); if (b == 0) return r; "
                          f"if (r == 0) return copysign{f}(({c})0, b); "
                          f"return ((r < 0) != (b < 0)) ? r + b : r;")
            fn("floordiv", ab, f"if (b == 0) return a / b; {c} r = fmod{f}(a, b); "
                               f"{c} d = (a - r) / b; if (r != 0 && (r < 0) != (b < 0)) d -= 1; "
                               f"if (d == 0) return copysign{f}(({c})0, a / b); "
                               f"{c} q = floor{f}(d); return d - q > ({c})0.5 ? q + 1 : q;")
        else:
            fn("minimum", ab, "return b < a ? b : a;")
            fn("maximum", ab, "return b > a ? b : a;")
        if t.is_int:
            bits = 8 * t.size
            u = type_name(T.SCALARS["u" + n] if t.is_signed else t)
            if t.is_signed:
                fn("abs", f"{c} a", "return a < 0 ? -a : a;")
                fn("floordiv", ab, f"if (b == 0) return 0; if (b == -1) return ({c})(({u})0 - ({u})a); "
                                   f"{c} q = a / b, r = a % b; "
                                   f"return (r != 0 && (r < 0) != (b < 0)) ? q - 1 : q;")
                fn("mod", ab, f"if (b == 0 || b == -1) return 0; {c} r = a % b; "
                              f"return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;")
                fn("shr", ab, f"return ({u})b < {bits} ? a >> b : (a < 0 ? -1 : 0);")
            else:
                fn("floordiv", ab, "return b == 0 ? 0 : a / b;")
                fn("mod", ab, "return b == 0 ? 0 : a % b;")
                fn("shr", ab, f"return ({u})b < {bits} ? a >> b : 0;")
            fn("shl", ab, f"return ({u})b < {bits} ? ({c})(({u})a << b) : 0;")
            neg = (f"if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0; "
                   if t.is_signed else "")
            w = u if t.size >= 4 else type_name(T.UINT32)     # no promotion to int
            fn("ipow", ab, f"{neg}{w} r = 1, x = ({u})a; "
                           f"while (b) {{ if (b & 1) r *= x; x *= x; b >>= 1; }} return ({c})r;")
        if post:
            out.append(post)
    return "\n".join(out) + "\n"


def written(fn: ir.Function) -> dict:
    """``{C name: "file:line"}`` of the array parameters the kernel stores into."""
    return {p: f"{fn.file}:{line}" for p, line in fn.written.items()}


def arg_words(fn: ir.Function):
    """[(C name, type, role)], one per argument word (in the order of
    `pygomp.runtime.plugin.KernelInfo.args`); role is "array", "shape", "scalar",
    "real" and "imag" (the parts of a complex scalar) or "ret"."""
    out = []
    for name, t in fn.params:
        if isinstance(t, T.Array):
            out.append((name, t, "array"))
            out += [(f"{name}__s{k}", T.INT64, "shape") for k in range(t.ndim)]
        elif t.is_complex:
            out += [(f"{name}__re", t.real, "real"), (f"{name}__im", t.real, "imag")]
        else:
            out.append((name, t, "scalar"))
    if fn.ret is not T.VOID:
        out.append((fn.ret_param, fn.ret, "ret"))
    return out


_WORD_KINDS = {"bool": "u8", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
               "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64",
               "float32": "f32", "float64": "f64"}


def word_kinds(fn: ir.Function) -> tuple:
    """`KernelInfo.args` of a kernel: "p" for an address, else the scalar's kind."""
    return tuple("p" if role in ("array", "ret") else _WORD_KINDS[t.name]
                 for _, t, role in arg_words(fn))


def private_terms(fn: ir.Function) -> tuple:
    """`KernelInfo.private` of a kernel: its private arrays sized at run time and its
    array reduction copies (``fn.sizes``), one 8-byte word per element (two for a
    complex128) and participant; an extent must be a constant, a scalar argument or an
    array extent (the plugin multiplies argument words)."""
    index = {name: k for k, (name, _, _) in enumerate(arg_words(fn))}
    terms = []
    per = elem_words(fn)
    for name, dims in fn.sizes.items():
        size, words = 8 * per.get(name, 1), []
        for e in dims:
            if isinstance(e, ir.Const):
                size *= int(e.value)
            elif isinstance(e, ir.Shape):
                words.append(index[f"{e.array.name}__s{e.dim}"])
            elif isinstance(e, ir.Var) and e.name in index:
                words.append(index[e.name])
            else:
                raise CompileError(f"the extents of the private array {name!r} must be "
                                   f"constants, scalar arguments or array extents (their "
                                   f"product sizes it before the launch)", fn.file,
                                   fn.decl_lines.get(name, fn.line))
        terms.append((size, tuple(words)))
    return tuple(terms)


def elem_words(fn: ir.Function) -> dict:
    """{private array or array reduction copy: the 8-byte words of one element}."""
    arrays = list(fn.decls)
    for n in ir.walk(fn.body):
        if isinstance(n, ir.ParLoop):
            arrays += n.decls + [(r.local, r.type) for r in n.reductions]
    return {name: t.elem.words for name, t in arrays if isinstance(t, T.Array)}


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


class Emitter:
    def __init__(self, dialect: Dialect, fn: ir.Function):
        self.d = dialect
        self.fn = fn
        self.out = []
        self.depth = 0
        self.last = None
        self.state = dialect.new_state(fn)
        self._uid = 0
        self.cur = fn               # the function being emitted
        self.loads = {}             # text of a load -> the local it was read into
        # bounds checking (boundscheck.py): its access sites, (file, line) -> site number,
        # the line a hoisted load is reported at, id(store target) -> its checked place,
        # pointer type -> its read function, and their definitions
        self.check = getattr(fn, "boundscheck", False)
        self.sites, self.site_ids, self.site_line, self.placed = [], {}, None, {}
        self.readers, self.reader_defs = {}, []

    # -- text ---------------------------------------------------------------
    def line(self, text: str) -> None:
        self.out.append("    " * self.depth + text if text and not text.startswith("#") else text)

    @contextlib.contextmanager
    def indent(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def at(self, line: int) -> None:
        if line and line != self.last:
            path = self.cur.file.replace("\\", "\\\\").replace('"', '\\"')
            self.out.append(f'#line {line} "{path}"')
            self.last = line

    def uid(self) -> int:
        self._uid += 1
        return self._uid

    def type(self, t) -> str:
        return self.d.type_name(t)

    # -- functions ------------------------------------------------------------
    def unit(self) -> Unit:
        fn = self.fn
        pre = self.d.preamble(fn)
        if pre:
            self.out.append(pre.rstrip("\n"))
            self.out.append("")
        if complexes.uses(fn):
            self.out.append(complexes.helpers(self.d))
        if self.check:
            head = len(self.out) + 1
            self.out += [boundscheck.functions(self.d, fn.wraparound).rstrip("\n"), ""]
        for h in fn.helpers:
            self.helper(h)
        for self.entry, body in self.d.entries(self, fn):
            self.cur = fn
            self.last = None
            self.at(fn.line)
            self.d.kernel_open(self, fn)
            with self.indent():
                for name, t in fn.params:       # a complex argument comes as two words
                    if isinstance(t, T.Scalar) and t.is_complex:
                        self.line(f"{self.type(t)} {name} = {complexes.fn(t, 'make')}"
                                  f"({name}__re, {name}__im);")
                self.decls(fn.decls)
                self.d.kernel_body(self, fn, body)
            self.d.kernel_close(self, fn)
        if self.check:
            self.out[head:head] = self.reader_defs
        return Unit("\n".join(self.out) + "\n", fn.name, arg_words(fn), fn.ret, fn, self.d,
                    (self.d.kernel_info(self, fn),), written(fn), tuple(self.sites))

    def helper(self, h: ir.Function) -> None:
        self.cur, self.last = h, None
        params = []
        for name, t in h.params:
            if isinstance(t, T.Array):
                params.append(f"{self.d.pointer(t)}{name}")
                if not t.shape:
                    params += [f"{self.type(T.INT64)} {name}__s{k}" for k in range(t.ndim)]
            else:
                params.append(f"{self.type(t)} {name}")
        if self.d.write_flags:
            params += [f"int {name}__w" for name, _ in h.params if name in h.written]
        if self.check:
            params.append(f"{self.d.record_pointer()}{boundscheck.RECORD}")
        self.at(h.line)
        self.d.helper_open(self, h, params)
        with self.indent():
            self.decls(h.decls)
            self.stmts(h.body)
        self.line("}")
        self.line("")

    def decls(self, decls) -> None:
        """Declare variables (zero-initialized) and arrays, each under its Python line."""
        for name, t in decls:
            self.at(self.cur.decl_lines.get(name, 0))
            if isinstance(t, T.Array):
                self.d.array_decl(self, name, t)
            elif t is not None:
                self.line(f"{self.type(t)} {name} = {self.d.const(0, t)};")

    # -- statements ----------------------------------------------------------
    def stmts(self, body) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s) -> None:
        self.at(s.line)
        getattr(self, "s_" + type(s).__name__)(s)

    def s_Assign(self, s):
        if isinstance(s.target, ir.Index) and self.check:
            with boundscheck.guarded(self, s.target):
                self.d.store(self, s)
        elif isinstance(s.target, ir.Index):
            self.d.store(self, s)
        elif isinstance(s.value, ir.Atomic) or isinstance(s.value, ir.Cast) \
                and isinstance(s.value.operand, ir.Atomic):
            self.atomic(getattr(s.value, "operand", s.value), self.expr(s.target))
        else:
            self.line(f"{self.expr(s.target)} = {self.expr(s.value)};")

    def s_ExprStmt(self, s):
        if isinstance(s.expr, ir.Atomic):
            self.atomic(s.expr, None)
            return
        self.line(f"(void){self.expr(s.expr)};")

    def atomic(self, a, result):
        if self.check:
            with boundscheck.guarded(self, a.target):
                self.d.atomic_op(self, a, result)
        else:
            self.d.atomic_op(self, a, result)

    def s_If(self, s):
        self.line(f"if ({bare(self.expr(s.cond))}) {{")
        with self.indent():
            self.stmts(s.body)
        orelse = s.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ir.If):
            self.at(orelse[0].line)
            self.line(f"}} else if ({bare(self.expr(orelse[0].cond))}) {{")
            with self.indent():
                self.stmts(orelse[0].body)
            orelse = orelse[0].orelse
        if orelse:
            self.line("} else {")
            with self.indent():
                self.stmts(orelse)
        self.line("}")

    def s_While(self, s, body=None, cond=None):
        """(``body``: a function that emits the body; ``cond``: text that must hold too)"""
        c = self.expr(s.cond)
        self.line(f"while ({bare(c) if cond is None else f'({cond}) && {c}'}) {{")
        with self.indent():
            body() if body else self.stmts(s.body)
        self.line("}")

    def s_For(self, s, body=None):
        i64 = self.type(T.INT64)
        u = self.uid()
        stop, step = self.expr(s.stop), self.expr(s.step)
        self.line("{")
        with self.indent():
            self.line(f"const {i64} __stop{u} = {stop};")
            i = f"__i{u}"                # the variable keeps the last value, as in Python
            if isinstance(s.step, ir.Const):
                cmp = f"{i} < __stop{u}" if s.step.value > 0 else f"{i} > __stop{u}"
                inc = f"{i} += {step}"
            else:
                self.line(f"const {i64} __step{u} = {step};")
                cmp = f"(__step{u} > 0 ? {i} < __stop{u} : {i} > __stop{u})"
                inc = f"{i} += __step{u}"
            start = self.expr(s.start)
            hoisted = {}
            for m, load in enumerate(hoist.invariant_loads(s) if self.d.hoist_loads else ()):
                if self.check:
                    self.site_line = boundscheck.line_of(load, s.body, s.line)
                text, name = self.expr(load), f"__h{u}_{m}"
                self.site_line = None
                self.line(f"const {self.type(load.type)} {name} = {start} < __stop{u} ? "
                          f"{text} : {self.d.const(0, load.type)};")
                hoisted[text] = name
            self.loads.update(hoisted)
            self.line(f"for ({i64} {i} = {start}; {cmp}; {inc}) {{")
            with self.indent():
                self.line(f"{s.var} = {i};")
                body() if body else self.stmts(s.body)
            self.line("}")
            for text in hoisted:
                del self.loads[text]
        self.line("}")

    def s_ParLoop(self, s):
        self.d.loop(self, s)

    def s_RedCall(self, s):
        self.d.reduction(self, s)

    def s_Break(self, s):
        self.line("break;")

    def s_Continue(self, s):
        self.line("continue;")

    def s_Return(self, s):
        v = None if s.value is None else self.expr(s.value)
        if self.cur.is_kernel:
            self.d.kernel_return(self, self.cur, v)
        else:
            self.line("return;" if v is None else f"return {v};")

    def s_Print(self, s):
        self.d.print(self, s)

    def s_Barrier(self, s):
        self.d.barrier(self)

    def s_AtomicAdd(self, s):
        if self.check:
            with boundscheck.guarded(self, s.target):
                self.d.atomic_add(self, s)
        else:
            self.d.atomic_add(self, s)

    def s_ArrayInit(self, s):
        if s.zero:
            u = self.uid()
            i64 = self.type(T.INT64)
            zero = self.d.const(0, s.type.elem)
            self.line(f"for ({i64} __z{u} = 0; __z{u} < {self.count(s.name, s.type)}; ++__z{u}) "
                      f"{s.name}[__z{u}] = {zero};")

    def count(self, name: str, t: T.Array) -> str:
        """The number of elements of an array, as text."""
        if t.shape:
            return str(math.prod(t.shape))
        return " * ".join(f"{name}__s{k}" for k in range(t.ndim))

    def extents(self, name: str) -> list[str]:
        """The run-time extents of a private array or reduction copy, as text."""
        return [self.expr(e) for e in self.cur.sizes[name]]

    def private_layout(self) -> tuple[dict, str]:
        """({array: the word where it starts in a participant's private scratch}, the
        words per participant), as text, in the order of `private_terms`."""
        offsets, off = {}, "0"
        words = elem_words(self.fn)
        for name in self.fn.sizes:
            offsets[name] = off
            n = " * ".join([f"({e})" for e in self.extents(name)]
                           + ["2"] * (words.get(name, 1) == 2))
            off = n if off == "0" else f"{off} + {n}"
        return offsets, off

    # -- loops: helpers for dialects --------------------------------------------
    def trip(self, d: ir.Dim) -> str:
        """The iteration count of a dimension, as text (>= 0)."""
        start, stop, step = self.expr(d.start), self.expr(d.stop), self.expr(d.step)
        if isinstance(d.start, ir.Const) and d.start.value == 0 and \
                isinstance(d.step, ir.Const) and d.step.value == 1:
            return f"({stop} > 0 ? {stop} : 0)"
        if isinstance(d.step, ir.Const) and d.step.value == 1:
            return f"({stop} > {start} ? {stop} - {start} : 0)"
        if isinstance(d.step, ir.Const) and d.step.value > 0:
            return f"({stop} > {start} ? ({stop} - {start} + {step} - 1) / {step} : 0)"
        return (f"({step} > 0 ? ({stop} > {start} ? ({stop} - {start} + {step} - 1) / {step} : 0)"
                f" : ({stop} < {start} ? ({start} - {stop} - {step} - 1) / (-{step}) : 0))")

    def counts(self, loop: ir.ParLoop, names: list[str], guard: str | None = None):
        """(C statements, total): the statements set ``names[k]`` to the trip count of
        dimension k (only ``names[0]``, to the whole count, for a non-rectangular loop:
        one whose inner bounds use outer loop variables); ``total`` is the number of
        iterations.  With ``guard``, the counts are 0 where the guard is false."""
        i64 = self.type(T.INT64)
        if rectangular(loop):
            g = f"{guard} ? " if guard else ""
            return ([f"const {i64} {n} = {g}{self.trip(d)}{' : 0' if guard else ''};"
                     for n, d in zip(names, loop.dims)], " * ".join(names))
        u = self.uid()
        out = [f"{i64} {names[0]} = 0;", f"if ({guard or 1}) {{"]
        for k, d in enumerate(loop.dims[:-1]):
            t = f"__t{u}_{k}"
            out.append(f"for ({i64} {t} = 0; {t} < {self.trip(d)}; ++{t}) {{")
            out.append(f"const {i64} {d.var} = {self._at(d, t)};")
        out.append(f"{names[0]} += {self.trip(loop.dims[-1])};")
        out += ["}"] * len(loop.dims)
        return out, names[0]

    def dim_values(self, loop: ir.ParLoop, k: str, trips: list[str]) -> list[str]:
        """C statements that set each loop variable from the flat iteration number ``k``
        (``trips`` are the names `counts` set).  A non-rectangular loop walks its rows
        from the start: dialects iterate contiguous blocks with `rows` instead."""
        i64 = self.type(T.INT64)
        out = []
        dims = loop.dims
        if not rectangular(loop):
            u = self.uid()
            r, f = f"__r{u}", f"__f{u}"
            out += [f"{i64} {d.var} = 0;" for d in dims]
            out.append(f"{{ {i64} {r} = {k}; int {f} = 0;")
            for j, d in enumerate(dims[:-1]):
                t = f"__t{u}_{j}"
                out.append(f"for ({i64} {t} = 0; {t} < {self.trip(d)} && !{f}; ++{t}) {{")
                out.append(f"{d.var} = {self._at(d, t)};")
            last = dims[-1]
            out.append(f"if ({r} < {self.trip(last)}) {{ {last.var} = {self._at(last, r)}; "
                       f"{f} = 1; }} else {r} -= {self.trip(last)};")
            out += ["}"] * len(dims)
            return out
        if len(dims) == 1:
            return [f"const {i64} {dims[0].var} = {self._at(dims[0], k)};"]
        rem = f"__rem{self.uid()}"
        out.append(f"{i64} {rem} = {k};")
        for j in reversed(range(len(dims))):
            d = dims[j]
            idx = f"{rem} % {trips[j]}" if j else rem
            out.append(f"const {i64} {d.var} = {self._at(d, '(' + idx + ')')};")
            if j:
                out.append(f"{rem} /= {trips[j]};")
        return out

    def rows(self, loop: ir.ParLoop, lo: str, hi: str, body, pragma: str = "") -> None:
        """Iterate the flat iterations [lo, hi) of a non-rectangular loop row by row: the
        outer dimensions as loops that skip the rows before ``lo``, the innermost as a
        plain counted loop (after ``pragma``, e.g. a simd one) around ``body()``, which
        emits the iteration with every loop variable defined."""
        i64 = self.type(T.INT64)
        u = self.uid()
        skip, left = f"__s{u}", f"__n{u}"
        dims = loop.dims
        self.line("{")
        with self.indent():
            self.line(f"{i64} {skip} = {lo}, {left} = {hi} - {lo};")
            for j, d in enumerate(dims[:-1]):
                t = f"__t{u}_{j}"
                self.line(f"for ({i64} {t} = 0; {t} < {self.trip(d)} && {left} > 0; ++{t}) {{")
                self.depth += 1
                self.line(f"const {i64} {d.var} = {self._at(d, t)};")
            last = dims[-1]
            m, b, e = f"__m{u}", f"__b{u}", f"__e{u}"
            self.line(f"const {i64} {m} = {self.trip(last)};")
            self.line(f"if ({skip} >= {m}) {{ {skip} -= {m}; continue; }}")
            self.line(f"const {i64} {b} = {skip}, {e} = {m} - {b} < {left} ? {m} : {b} + {left};")
            self.line(f"{skip} = 0; {left} -= {e} - {b};")
            if pragma:
                self.line(pragma)
            t = f"__t{u}_{len(dims) - 1}"
            self.line(f"for ({i64} {t} = {b}; {t} < {e}; ++{t}) {{")
            with self.indent():
                self.line(f"const {i64} {last.var} = {self._at(last, t)};")
                body()
            self.line("}")
            for _ in dims[:-1]:
                self.depth -= 1
                self.line("}")
        self.line("}")

    def _at(self, d, k):
        start, step = d.start, d.step
        s = "" if isinstance(start, ir.Const) and start.value == 0 else f"{self.expr(start)} + "
        if isinstance(step, ir.Const) and step.value == 1:
            return f"{s}{k}"
        return f"{s}{k} * {self.expr(step)}"

    def combine(self, op: str, t: T.Scalar, a: str, b: str) -> str:
        """``a OP b`` for a reduction operator, as text."""
        return self.expr(combine(op, t, ir.Var(a, type=t), ir.Var(b, type=t)))

    # -- expressions -----------------------------------------------------------
    def expr(self, e) -> str:
        return getattr(self, "e_" + type(e).__name__)(e)

    def e_Const(self, e):
        return self.d.const(e.value, e.type)

    def e_Var(self, e):
        return e.name

    def e_ArrayRef(self, e):
        return e.name

    def e_Shape(self, e):
        return f"{e.array.name}__s{e.dim}"

    def e_Index(self, e):
        if self.check:
            return boundscheck.load(self, e)
        a = e.array
        t = a.type
        flat = None
        for k, i in enumerate(e.indices):
            x = self.expr(i)
            if flat is None:
                flat = x
            else:
                ext = str(t.shape[k]) if t.shape else f"{a.name}__s{k}"
                flat = f"({flat}) * {ext} + {x}"
        text = f"{a.name}[{flat}]"
        return self.loads.get(text, text)

    def e_BinOp(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def e_Unary(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        return f"({e.op}{self.expr(e.operand)})"

    def e_Compare(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def e_Logical(self, e):
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def e_Select(self, e):
        return f"({self.expr(e.cond)} ? {self.expr(e.a)} : {self.expr(e.b)})"

    def e_Cast(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        if e.type.is_bool:
            return f"({self.expr(e.operand)} != 0)"
        return f"(({self.type(e.type)}){self.expr(e.operand)})"

    def e_Call(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        argt = e.args[0].type if e.args else e.type
        return self.d.call(e.fn, argt, [self.expr(a) for a in e.args])

    def e_Builtin(self, e):
        return self.d.builtin(self, e.name)

    def e_HelperCall(self, e):
        args = []
        for a in e.args:
            if isinstance(a, ir.ArrayRef):
                args.append(a.name)
                if not a.type.shape:
                    args += [f"{a.name}__s{k}" for k in range(a.type.ndim)]
            elif isinstance(a, ir.View):           # the address of its first element
                root, p = a.array, len(a.prefix)
                zeros = [ir.Const(0, type=T.INT64)] * (root.type.ndim - p)
                args.append(boundscheck.view_address(self, a) if self.check else
                            f"&{self.e_Index(ir.Index(root, a.prefix + zeros))}")
                if not root.type.shape:
                    args += [f"{root.name}__s{k}" for k in range(p, root.type.ndim)]
            else:
                args.append(self.expr(a))
        if self.d.write_flags:
            args += [self.d.writer(self, a.array if isinstance(a, ir.View) else a)
                     for a, (name, _) in zip(e.args, e.fn.params) if name in e.fn.written]
        if self.check:
            args.append(boundscheck.RECORD)
        return f"{e.fn.name}({', '.join(args)})"


def bare(text: str) -> str:
    """``text`` without one pair of parentheses around all of it (``if ((a == b))``
    makes clang warn)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and k < len(text) - 1:
            return text                 # "(a) + (b)": not one pair
    return text[1:-1]


def rectangular(loop: ir.ParLoop) -> bool:
    """Whether no bound of a (collapsed) loop's dimension uses an outer loop variable."""
    outer = {d.var for d in loop.dims[:-1]}
    return not any(isinstance(n, ir.Var) and n.name in outer
                   for d in loop.dims[1:] for e in (d.start, d.stop, d.step) for n in ir.walk(e))


def emit(fn: ir.Function, dialect: Dialect) -> Unit:
    """The source of a kernel (with its helpers) in ``dialect``."""
    return Emitter(dialect, fn).unit()
