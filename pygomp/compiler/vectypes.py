"""Elementwise loops in vector types on CPUs (where the dialect spells them): PoCL
calls its vector math (exp, log, sqrt of a float16 ...) only for values of vector
types, and vectorizing the loop over work-items leaves the math calls scalar.

A parallel loop qualifies when its one dimension steps by 1 and its body is
assignments of float values to its own variables and to ``a[i]`` (``i`` the loop
variable), from loads ``a[i]``, values the same in every iteration, arithmetic,
comparisons, selections and the math functions OpenCL overloads on vectors.  Its
contiguous block of iterations (a CPU's, where the plugin defines the dialect's
``vector_blocks``) then runs LANES at a time (``vector_load``/``vector_store``), and
the rest one at a time as before.  The iterations of a parallel loop are independent, so running LANES of them side by side, statement by statement, computes
what they compute one by one; each lane calls the same function of the same argument
type, so results are those of the scalar loop within the math functions' bounds.
"""
from __future__ import annotations

from . import ir
from . import types as T

BYTES = 64          # a vector's bytes: float16, double8 (AVX-512; two AVX2 registers)
MATH = {"sqrt", "exp", "log", "exp2", "log2", "log10", "expm1", "log1p", "sin", "cos",
        "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
        "atanh", "abs", "pow", "atan2", "hypot", "floor", "ceil", "trunc", "cbrt"}
FLOATS = (T.FLOAT32, T.FLOAT64)


def lanes(em, loop) -> int:
    """The lanes ``loop`` runs with in vector types, 0 when it does not qualify."""
    if em.check or not em.d.vector_types or len(loop.dims) != 1 or loop.reductions \
            or loop.has_sync:
        return 0
    d = loop.dims[0]
    if not (isinstance(d.step, ir.Const) and d.step.value == 1):
        return 0
    v = _Vec(em, loop, 0)
    if any(t not in FLOATS for _, t in loop.decls):
        return 0
    try:
        for s in loop.body:
            v.stmt(s, emit=False)
    except _No:
        return 0
    size = max((t.size for t in v.types), default=0)
    return BYTES // size if size else 0


def block(em, loop, n, k, lo, hi, body):
    """The iterations [lo, hi) of ``loop`` (ids in ``k``): ``n`` at a time in vector
    types, then ``body()`` (the scalar iteration) for the rest."""
    v = _Vec(em, loop, n)
    em.line("{")
    em.line(f"{em.type(T.INT64)} {k} = {lo};")
    em.line(f"for (; {k} + {n} <= {hi}; {k} += {n}) {{")
    with em.indent():
        for s in em.dim_values(loop, k, [k]):
            em.line(s)
        for name, t in loop.decls:
            em.line(f"{v.vt(t)} {name} = ({v.vt(t)})({em.d.const(0, t)});")
        for s in loop.body:
            em.at(s.line)
            v.stmt(s, emit=True)
    em.line("}")
    em.line(f"for (; {k} < {hi}; ++{k}) {{")
    with em.indent():
        body()
    em.line("}")
    em.line("}")


class _No(Exception):
    """The loop does not qualify."""


class _Vec:
    def __init__(self, em, loop, n):
        self.em, self.n = em, n
        self.var = loop.dims[0].var
        self.locals = {name for name, _ in loop.decls}
        self.types = set()

    def vt(self, t):
        return self.em.d.vector_type(t, self.n)

    def stmt(self, s, emit):
        if not isinstance(s, ir.Assign):
            raise _No
        t, target = s.value.type, s.target
        if t not in FLOATS:
            raise _No
        self.types.add(t)
        value = self.expr(s.value)
        text = value[1] if value[0] else f"(({self.vt(t)}){value[1]})"
        if isinstance(target, ir.Var) and target.name in self.locals and target.type == t:
            if emit:
                self.em.line(f"{target.name} = {text};")
        elif self.element(target) and target.type == t:
            if emit:
                self.em.line(self.em.d.vector_store(self.n, text,
                                                    f"{target.array.name} + {self.var}") + ";")
        else:
            raise _No

    def element(self, e):
        """Whether ``e`` is ``a[i]`` of a float array, ``i`` the loop variable."""
        return (isinstance(e, ir.Index) and type(e.array) is ir.ArrayRef
                and e.array.type.space == "global" and e.array.type.elem in FLOATS
                and len(e.indices) == 1 and e.array.type.ndim == 1
                and isinstance(e.indices[0], ir.Var) and e.indices[0].name == self.var)

    def uniform(self, e):
        """Whether ``e`` has the same value in every iteration (reads no memory the loop
        may write, no variable of the loop)."""
        for x in ir.walk(e):
            if isinstance(x, ir.Var) and (x.name in self.locals or x.name == self.var):
                return False
            if isinstance(x, (ir.Index, ir.View, ir.Atomic, ir.HelperCall, ir.Builtin)):
                return False
        return True

    def expr(self, e):
        """(whether a vector, its text)."""
        em = self.em
        if self.uniform(e):
            return False, em.expr(e)
        if isinstance(e, ir.Var) and e.name in self.locals:
            return True, e.name
        if self.element(e):
            self.types.add(e.type)
            return True, em.d.vector_load(self.n, f"{e.array.name} + {self.var}")
        if isinstance(e, ir.BinOp) and e.type in FLOATS and e.op in "+-*/" \
                and e.left.type == e.type == e.right.type:
            (_, a), (_, b) = self.expr(e.left), self.expr(e.right)
            return True, f"({a} {e.op} {b})"
        if isinstance(e, ir.Unary) and e.op == "-" and e.type in FLOATS:
            return True, f"(-{self.expr(e.operand)[1]})"
        if isinstance(e, ir.Select) and e.type in FLOATS and e.a.type == e.b.type == e.type \
                and isinstance(e.cond, ir.Compare) and e.cond.left.type == e.type \
                and e.cond.right.type == e.type:
            (_, l), (_, r) = self.expr(e.cond.left), self.expr(e.cond.right)
            a, b = (self.wide(x, e.type) for x in (e.a, e.b))
            return True, f"(({l} {e.cond.op} {r}) ? {a} : {b})"
        if isinstance(e, ir.Call) and e.fn in MATH and e.type in FLOATS \
                and all(a.type == e.type for a in e.args):
            text = em.d.call(e.fn, e.type, [self.wide(a, e.type) for a in e.args])
            if text.startswith("pyg_"):
                raise _No
            return True, text
        if isinstance(e, ir.Cast) and e.type in FLOATS and e.operand.type in FLOATS:
            self.types.add(e.operand.type)
            return True, em.d.vector_convert(e.type, self.n, self.expr(e.operand)[1])
        raise _No

    def wide(self, e, t):
        """``e`` as a vector of ``t``."""
        vec, text = self.expr(e)
        return text if vec else f"(({self.vt(t)}){text})"
