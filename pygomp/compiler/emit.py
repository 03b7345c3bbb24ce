"""One C-family emitter; everything target-specific comes from a `Dialect`.

The emitter writes expressions, statements, helpers and declarations in the C syntax the
three languages share (C, OpenCL C, CUDA C), with ``#line`` directives so that a compiler
error points at the Python line.  A plugin gives its dialect through
``Plugin.target_hooks()``: an instance of a `pygomp.compiler.dialect.Dialect` subclass
(the host one is ``pygomp.plugins.host.target.HOOKS``).

A unit also describes its kernel for the plugin (`Dialect.kernel_info`, one
`pygomp.runtime.plugin.KernelInfo` per kernel, which describes the argument words that
`pygomp.compiler.argwords.arg_words` names); the plugin compiles the source.  Work-group
targets (OpenCL, CUDA) share one lowering on top of this emitter:
`pygomp.compiler.workgroup`.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

from . import boundscheck, complexes, hoist, ir, records
from . import types as T
from .argwords import arg_words, elem_words, written
from .dialect import Dialect
from .reductions import combine

STOP_CHUNK = 4096       # iterations of a sequential loop between two of Ctrl-C's tests


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
        self.kept = set()           # those locals that stores go to as well (hoist.py)
        # bounds checking (boundscheck.py): its access sites, (file, line) -> site number,
        # the line a hoisted load is reported at, id(store target) -> its checked place,
        # pointer type -> its read function, and their definitions
        self.check = getattr(fn, "boundscheck", False)
        self.sites, self.site_ids, self.site_line, self.placed = [], {}, None, {}
        self.readers, self.reader_defs = {}, []
        self.i32 = bool(dialect.index32)    # narrow.py's int32 marks: in dialect.index32

    def is32(self, e) -> bool:
        """Whether an int64 expression is written as a 32-bit int (narrow.py)."""
        if not self.i32 or e.type != T.INT64:
            return False
        return e.name in self.cur.narrow if isinstance(e, ir.Var) else e.i32

    def var_type(self, name: str, t=T.INT64) -> str:
        """The C type of a variable: int for an int64 one narrow.py narrowed."""
        if self.i32 and t == T.INT64 and name in self.cur.narrow:
            return self.d.index32
        return self.type(t)

    def wide(self, e, text: str) -> str:
        """``text`` of ``e`` as a 64-bit value where it is written as 32-bit."""
        return f"(({self.type(T.INT64)}){text})" if self.is32(e) else text

    def operands(self, e, a, b) -> tuple[str, str]:
        """The texts of two operands of ``e``, a 32-bit one widened where C's usual
        conversions would not give int64's result: both 32-bit under a node whose value
        may not fit, or beside a uint32 (int and uint meet as unsigned)."""
        ta, tb = self.expr(a), self.expr(b)
        if not self.i32:
            return ta, tb
        if self.is32(a) and self.is32(b) and e.type == T.INT64 and not self.is32(e) \
                and not isinstance(e, ir.Select):
            ta = self.wide(a, ta)
        if b.type == T.UINT32:
            ta = self.wide(a, ta)
        if a.type == T.UINT32:
            tb = self.wide(b, tb)
        return ta, tb

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
        if self.d.index_decl:
            self.out += [self.d.index_decl, ""]
        if records.used(fn):
            self.out.append(records.typedefs(self.d, fn))
        if complexes.uses(fn):
            self.out.append(complexes.helpers(self.d))
        if self.check:
            head = len(self.out) + 1
            self.out += [boundscheck.functions(self.d, fn.wraparound).rstrip("\n"), ""]
        for h in fn.helpers:
            self.helper(h)
        variants = self.d.variants(self, fn)    # copies made before fn is emitted
        info = self.kernel(fn)
        main = self.state
        for v in variants:
            self.state = self.d.new_state(v, like=main)
            info = self.d.joined(info, self.kernel(v))
        if self.check:
            self.out[head:head] = self.reader_defs
        return Unit("\n".join(self.out) + "\n", fn.name, arg_words(fn), fn.ret, fn, self.d,
                    (info,), written(fn), tuple(self.sites))

    def kernel(self, fn: ir.Function):
        """The entries of a kernel (or of a variant of it); its KernelInfo."""
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
        return self.d.kernel_info(self, fn)

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
                c = self.var_type(name, t)
                zero = self.d.const(0, T.INT32 if c != self.type(t) else t)
                self.line(f"{c} {name} = {zero};")

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
        elif isinstance(s.target, ir.Index) and self.kept and self.expr(s.target) in self.kept:
            self.line(f"{self.expr(s.target)} = {self.expr(s.value)};")    # a local's store
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
            self.stop_check()
            body() if body else self.stmts(s.body)
        self.line("}")

    def s_For(self, s, body=None):
        i64 = self.d.index32 if self.i32 and s.i32 else self.type(T.INT64)
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
            kept, others = ([], []) if self.check or body else hoist.kept_elements(s)
            if kept:            # in locals when its arrays are apart (see hoist.py)
                self.line(f"if ({start} < __stop{u} && {self.apart(kept, others)}) {{")
                with self.indent():
                    self.kept_loop(s, u, kept, start, cmp, inc)
                self.line("} else {")
                self.depth += 1
            levels = self.open_loop(s, u, start, cmp, inc)
            self.line(f"{s.var} = {i};")
            body() if body else self.stmts(s.body)
            self.close_loop(levels)
            if kept:
                self.depth -= 1
                self.line("}")
            for text in hoisted:
                del self.loads[text]
        self.line("}")

    def kept_loop(self, s, u, kept, start, cmp, inc):
        """``s`` with the elements ``kept`` in locals, read before it and stored after."""
        names = {}
        for m, e in enumerate(kept):
            text, name = self.expr(e), f"__k{u}_{m}"
            self.line(f"{self.type(e.type)} {name} = {text};")
            names[text] = name
        self.loads.update(names)
        self.kept.update(names.values())
        levels = self.open_loop(s, u, start, cmp, inc)
        self.line(f"{s.var} = __i{u};")
        self.stmts(s.body)
        self.close_loop(levels)
        for text in names:
            del self.loads[text]
        self.kept.difference_update(names.values())
        for e, name in zip(kept, names.values()):
            self.d.store(self, ir.Assign(e, ir.Var(name, type=e.type), line=0))
        self.last = None        # the plain loop follows: its lines again

    def apart(self, kept, others) -> str:
        """C text: whether each kept element's array shares no byte with any other array
        the loop reaches."""
        arrays = [k.array for k in kept]
        out = []
        for n, a in enumerate(arrays):
            for b in arrays[n + 1:] + others:
                ea = f"(size_t)({a.name} + {self.count(a.name, records.record_type(a))})"
                eb = f"(size_t)({b.name} + {self.count(b.name, records.record_type(b))})"
                out.append(f"({ea} <= (size_t){b.name} || {eb} <= (size_t){a.name})")
        return " && ".join(out) or "1"

    def open_loop(self, s, u, start, cmp, inc) -> int:
        """Open the C loop of ``s`` (its body follows) and return the blocks it opened.
        Ctrl-C's test (`stop_check`) runs once a chunk of STOP_CHUNK iterations where
        the step is a constant and nothing breaks out, so that the loop inside stays
        vectorizable; else at each iteration."""
        i64 = self.d.index32 if self.i32 and s.i32 else self.type(T.INT64)
        i = f"__i{u}"
        if not (self.stop_check(dry=True) and isinstance(s.step, ir.Const)
                and not any(isinstance(n, ir.Break) for n in ir.walk(s.body))):
            self.line(f"for ({i64} {i} = {start}; {cmp}; {inc}) {{")
            self.depth += 1
            self.stop_check()
            return 1
        span = STOP_CHUNK * s.step.value
        left, op = (f"__stop{u} - {i}", "<") if span > 0 else (f"{i} - __stop{u}", ">")
        self.line(f"for ({i64} {i} = {start}; {cmp}; ) {{")
        self.depth += 1
        self.stop_check()
        self.line(f"const {i64} __e{u} = {left} > {abs(span)} ? {i} + {span} : __stop{u};")
        self.line(f"for (; {i} {op} __e{u}; {inc}) {{")
        self.depth += 1
        return 2

    def close_loop(self, levels):
        for _ in range(levels):
            self.depth -= 1
            self.line("}")

    def stop_check(self, dry=False):
        """Leave a sequential loop of a kernel once Ctrl-C has stopped it, where the
        dialect can tell (`Dialect.stop_test`); ``dry``: only whether it can."""
        test = self.cur.is_kernel and self.d.stop_test()
        if test and not dry:
            self.line(f"if ({test}) break;")
        return bool(test)

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
            out += [f"{self.var_type(d.var)} {d.var} = 0;" for d in dims]
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
            return [f"const {self.var_type(dims[0].var)} {dims[0].var} = "
                    f"{self._at(dims[0], k)};"]
        rem = f"__rem{self.uid()}"
        out.append(f"{i64} {rem} = {k};")
        for j in reversed(range(len(dims))):
            d = dims[j]
            idx = f"{rem} % {trips[j]}" if j else rem
            out.append(f"const {self.var_type(d.var)} {d.var} = "
                       f"{self._at(d, '(' + idx + ')')};")
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
                self.line(f"const {self.var_type(d.var)} {d.var} = {self._at(d, t)};")
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
                self.line(f"const {self.var_type(last.var)} {last.var} = {self._at(last, t)};")
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
        return self.d.const(e.value, T.INT32 if self.is32(e) else e.type)

    def e_Var(self, e):
        return e.name

    def e_ArrayRef(self, e):
        return e.name

    def e_Shape(self, e):
        if self.is32(e):
            return f"(({self.d.index32}){e.array.name}__s{e.dim})"
        return f"{e.array.name}__s{e.dim}"

    def e_Index(self, e):
        if self.check:
            return boundscheck.load(self, e)
        a = e.array
        t = a.type
        n = a.nrec if isinstance(a, ir.FieldRef) else t.ndim
        flat = sub = None
        small = self.i32 and a.name in self.cur.small     # its offsets fit in int32
        for k, i in enumerate(e.indices):
            x = self.expr(i)
            if k == n:                  # a field's sub-array axes (records.py)
                sub = x
            elif k > n:
                sub = f"({sub}) * {a.sub[k - n]} + {x}"
            elif flat is None:
                flat = x
            else:
                ext = str(t.shape[k]) if t.shape else f"{a.name}__s{k}" if not small \
                    else f"(({self.d.index32}){a.name}__s{k})"
                flat = f"({flat}) * {ext} + {x}"
        text = f"{a.name}[{flat}]"
        if isinstance(a, ir.FieldRef):
            text += f".{a.member}" + (f"[{sub}]" if a.sub else "")
        return self.loads.get(text, text)

    def e_BinOp(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        a, b = self.operands(e, e.left, e.right)
        return f"({a} {e.op} {b})"

    def e_Unary(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        x = self.expr(e.operand)
        if self.is32(e.operand) and e.type == T.INT64 and not self.is32(e):
            x = self.wide(e.operand, x)
        return f"({e.op}{x})"

    def e_Compare(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        a, b = self.operands(e, e.left, e.right)
        return f"({a} {e.op} {b})"

    def e_Logical(self, e):
        return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"

    def e_Select(self, e):
        a, b = self.operands(e, e.a, e.b)
        return f"({self.expr(e.cond)} ? {a} : {b})"

    def e_Cast(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        if e.type.is_bool:
            return f"({self.expr(e.operand)} != 0)"
        c = self.d.index32 if self.is32(e) else self.type(e.type)
        return f"(({c}){self.expr(e.operand)})"

    def e_Call(self, e):
        if complexes.involved(e):
            return complexes.expr(self, e)
        argt = e.args[0].type if e.args else e.type
        return self.d.call(e.fn, argt, [self.wide(a, self.expr(a)) for a in e.args])

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
