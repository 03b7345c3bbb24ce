"""32-bit indices: which int64 variables and index expressions of a kernel provably hold
only values that fit in an int32, for dialects that compute them faster so
(`Dialect.index32`: GPUs' 64-bit integer arithmetic takes several instructions).

`mark` runs on a kernel's IR once.  A variable is narrowed when every value any of its
assignments gives it (and the 0 it starts with) lies in int32's range; an int64
expression node gets ``i32`` when its operands are 32-bit and its own values fit.  The
bounds come from `nonneg`'s prover, extended to upper bounds, with the loops and single
assignments around each statement as facts, and as constant bounds: a variable's range
from its assignments, an int type's range, and an array's extents.  A kernel's array
parameters have extents below 2**31 only when the call says so (``extents32``: the
specialization of arrays that small); a local array's are its compile-time shape.

The emitter writes an ``i32`` node as 32-bit C, widens a 32-bit operand where C's
conversions would otherwise differ (see `Emitter.e_BinOp`), and computes the flat
offset of an element of an array with fewer than 2**31 elements in 32 bits: every
element inside the array has such an offset.
"""
from __future__ import annotations

import numpy as np

from . import ir, nonneg
from . import types as T

LOW, HIGH = -2**31, 2**31 - 1


def fits(lo, hi) -> bool:
    return lo is not None and hi is not None and LOW <= lo and hi <= HIGH


def mark(fn: ir.Function, extents32: bool) -> None:
    """Set ``fn.narrow`` (the variables declared 32-bit), ``i32`` on int64 expression
    nodes and on counted loops whose C counter fits, and ``fn.small`` (the arrays whose
    flat offsets fit)."""
    p = _Pass(fn, extents32)
    p.walk(fn.body, record=True)
    p.narrow = {n for n in p.declared
                if n not in p.bad and n in p.ranges and fits(*p.ranges[n])}
    p.final, p.facts = True, p.initial_facts()
    p.walk(fn.body, record=False)
    fn.narrow = frozenset(p.narrow)
    fn.small = frozenset(p.small)


class _Pass:
    def __init__(self, fn, extents32):
        self.fn = fn
        self.extents32 = extents32
        self.params = {n: t for n, t in fn.params}
        self.defs, self.bad, self.declared = {}, set(), set()
        for n, t in fn.decls:
            if t == T.INT64:
                self.declared.add(n)
        for node in ir.walk(fn.body):
            if isinstance(node, ir.Assign) and isinstance(node.target, ir.Var):
                self._def(node.target.name)
            elif isinstance(node, ir.For):
                self._def(node.var)
            elif isinstance(node, ir.ParLoop):
                for d in node.dims:
                    self._def(d.var)
                    self.declared.add(d.var)
                self.declared.update(n for n, t in node.decls if t == T.INT64)
                for r in node.reductions:
                    self.bad.update((r.var, r.local))
            elif isinstance(node, ir.RedCall):
                self.bad.update((node.outer, node.local))
        self.bad.update(self.params)
        # arrays whose every extent, and element count, is below 2**31
        self.small = {n for n, t in fn.params if isinstance(t, T.Array) and extents32}
        for n, t in list(fn.decls) + [d for s in ir.walk(fn.body)
                                      if isinstance(s, ir.ParLoop) for d in s.decls]:
            if isinstance(t, T.Array) and t.shape and _prod(t.shape) <= HIGH \
                    and n not in fn.sizes:
                self.small.add(n)
        self.ranges = {}            # variable -> (low, high) of all its values
        self.final = False          # every assignment's values are in ranges
        self.cache = {}             # id of an expression -> its bounds at this statement
        self.narrow = set()
        self.facts = self.initial_facts()

    def _def(self, name):
        self.defs[name] = self.defs.get(name, 0) + 1

    def initial_facts(self):
        return {n: None for n, t in self.fn.params
                if isinstance(t, T.Scalar) and n not in self.defs}

    # -- bounds ------------------------------------------------------------------------
    def bounds(self, e):
        """(low, high) of an int expression under the current facts (None: unknown)."""
        got = self.cache.get(id(e))
        if got is None:             # (the node kept with it: its id stays its own)
            got = self.cache[id(e)] = (self._bounds(e), e)
        return got[0]

    def _bounds(self, e):
        t = e.type
        if isinstance(e, ir.Const) and isinstance(e.value, int):
            return int(e.value), int(e.value)
        if not isinstance(t, T.Scalar) or not (t.is_int or t.is_bool):
            return None, None
        if t.is_signed and t.size == 8 and _linear(e):
            lo = nonneg.lower(e, self.facts, self.const_low, self.const_high)
            hi = nonneg.upper(e, self.facts, self.const_low, self.const_high)
            if lo is None or hi is None:
                a, b = self.atom(e)
                lo, hi = a if lo is None else lo, b if hi is None else hi
            return lo, hi
        return self.atom(e)

    def const_low(self, e):
        return self.atom(e)[0]

    def const_high(self, e):
        return self.atom(e)[1]

    def atom(self, e):
        """Constant bounds of an expression the prover does not take apart."""
        t = e.type
        own = _type_range(t)
        if isinstance(e, ir.Const) and isinstance(e.value, int):
            return int(e.value), int(e.value)
        if isinstance(e, ir.Var):
            known = e.name not in self.bad and (self.final or self.defs.get(e.name) == 1)
            r = self.ranges.get(e.name) if known else None
            return _meet(r, own) if r else own
        if isinstance(e, ir.Shape):
            a = e.array
            if a.type.shape:
                n = a.type.shape[e.dim]
                return n, n
            return (0, HIGH) if a.name in self.small else (0, None)
        if isinstance(e, ir.Cast):
            inner = e.operand.type
            if isinstance(inner, T.Scalar) and (inner.is_int or inner.is_bool) \
                    and inner.size <= t.size and inner.is_signed <= t.is_signed:
                return _meet(self.bounds(e.operand), own)
            return own
        if isinstance(e, ir.BinOp) and e.op in "+-*" and t.is_signed:
            (a, b), (c, d) = self.bounds(e.left), self.bounds(e.right)
            if None in (a, b, c, d):
                return own
            if e.op == "+":
                return a + c, b + d
            if e.op == "-":
                return a - d, b - c
            p = (a * c, a * d, b * c, b * d)
            return min(p), max(p)
        if isinstance(e, ir.Select):
            (a, b), (c, d) = self.bounds(e.a), self.bounds(e.b)
            return (None if None in (a, c) else min(a, c), None if None in (b, d) else max(b, d))
        if isinstance(e, ir.Call) and e.fn in ("min", "max", "minimum", "maximum"):
            (a, b), (c, d) = self.bounds(e.args[0]), self.bounds(e.args[1])
            if "min" in e.fn:
                return (None if None in (a, c) else min(a, c),
                        b if d is None else d if b is None else min(b, d))
            return (a if c is None else c if a is None else max(a, c),
                    None if None in (b, d) else max(b, d))
        if isinstance(e, ir.Builtin):
            return 0, own[1]
        return own

    # -- the walk ----------------------------------------------------------------------
    def walk(self, body, record):
        saved = dict(self.facts)
        for s in body:
            self.stmt(s, record)
        self.facts = saved

    def stmt(self, s, record):
        self.cache = {}
        for e in _exprs(s):
            if not record:
                self.mark(e)
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var):
            name = s.target.name
            if record:
                self.widen(name, self.bounds(s.value) if s.target.type == T.INT64
                           else (None, None))
            if self.defs.get(name) == 1 and name not in self.bad \
                    and nonneg.stable(s.value, self.facts):
                self.facts[name] = ("value", s.value)
        elif isinstance(s, ir.For):
            self.loop(s.var, s.start, s.stop, s.step, record)
            self.cache = {}
            if not record:
                s.i32 = s.var in self.narrow and self.counter_fits(s)
            self.walk(s.body, record)
        elif isinstance(s, ir.ParLoop):
            saved = dict(self.facts)
            for d in s.dims:
                self.loop(d.var, d.start, d.stop, d.step, record)
                self.cache = {}
            for part in (s.setup, s.init, s.body, s.fini, s.teardown):
                self.walk(part, record)
            self.facts = saved
        elif isinstance(s, ir.If):
            self.walk(s.body, record)
            self.walk(s.orelse, record)
        elif isinstance(s, ir.While):
            self.walk(s.body, record)

    def loop(self, var, start, stop, step, record):
        """Note a loop variable's values, and its fact for the body."""
        if record:
            if isinstance(step, ir.Const) and step.value:
                (a, _), (_, d) = self.bounds(start), self.bounds(stop)
                (_, b), (c, _) = self.bounds(start), self.bounds(stop)
                lo, hi = (a, None if d is None else d - 1) if step.value > 0 else \
                    (None if c is None else c + 1, b)
                self.widen(var, (lo, hi))
            else:
                self.widen(var, (None, None))
        if self.defs.get(var) == 1 and var not in self.bad and isinstance(step, ir.Const) \
                and step.value and nonneg.stable(start, self.facts) \
                and nonneg.stable(stop, self.facts):
            self.facts[var] = ("loop", start, stop, step)

    def counter_fits(self, s):
        """Whether a counted loop's C counter (from start to the first value past stop)
        and its distance to stop fit in int32."""
        if not isinstance(s.step, ir.Const):
            return False
        step = s.step.value
        (a, b), (c, d) = self.bounds(s.start), self.bounds(s.stop)
        if None in (a, b, c, d):
            return False
        return fits(min(a, c + step), max(b, d + step)) and fits(c - b, d - a)

    def widen(self, name, r):
        lo, hi = r
        old = self.ranges.get(name, (0, 0))
        self.ranges[name] = (None if lo is None or old[0] is None else min(lo, old[0]),
                             None if hi is None or old[1] is None else max(hi, old[1]))

    def mark(self, e):
        """Set ``i32`` on the int64 nodes of ``e`` that the emitter may write as int32;
        whether ``e`` itself is written as 32-bit."""
        if isinstance(e, list):
            for x in e:
                self.mark(x)
            return False
        if not isinstance(e, ir.Expr):
            return False
        kids = [self.mark(getattr(e, f)) for f in _KIDS.get(type(e), ())]
        if isinstance(e, (ir.Call, ir.HelperCall, ir.Index, ir.View, ir.Atomic)):
            for x in (e.args if isinstance(e, (ir.Call, ir.HelperCall)) else
                      e.indices if isinstance(e, ir.Index) else
                      e.prefix if isinstance(e, ir.View) else [e.value, e.expected]):
                self.mark(x)
            if isinstance(e, ir.Atomic):
                self.mark(e.target)
        if isinstance(e, ir.Var):
            return e.name in self.narrow
        if e.type != T.INT64:
            return False
        ok = False
        if isinstance(e, ir.Const):
            ok = isinstance(e.value, int) and LOW <= e.value <= HIGH
        elif isinstance(e, ir.Shape):
            ok = fits(*self.atom(e))
        elif isinstance(e, ir.BinOp) and e.op in "+-*" or isinstance(e, ir.Unary) \
                and e.op == "-":
            ok = all(kids) and fits(*self.bounds(e))
        elif isinstance(e, ir.Cast):
            inner = e.operand.type
            ok = isinstance(inner, T.Scalar) and inner.is_int and fits(*self.bounds(e))
        elif isinstance(e, ir.Select):
            ok = kids[1] and kids[2]
        e.i32 = ok
        return ok


_KIDS = {ir.BinOp: ("left", "right"), ir.Unary: ("operand",), ir.Compare: ("left", "right"),
         ir.Logical: ("left", "right"), ir.Select: ("cond", "a", "b"), ir.Cast: ("operand",)}


def _exprs(s):
    """The expressions a statement itself holds (not those of nested statements)."""
    if isinstance(s, ir.Assign):
        return [s.target, s.value]
    if isinstance(s, ir.ExprStmt):
        return [s.expr]
    if isinstance(s, (ir.If, ir.While)):
        return [s.cond]
    if isinstance(s, ir.For):
        return [s.start, s.stop, s.step]
    if isinstance(s, ir.ParLoop):
        return [x for d in s.dims for x in (d.start, d.stop, d.step)]
    if isinstance(s, ir.Return):
        return [s.value] if s.value is not None else []
    if isinstance(s, ir.AtomicAdd):
        return [s.target, s.value]
    if isinstance(s, ir.Print):
        return [x for x in s.items if isinstance(x, ir.Expr)]
    return []


def _linear(e):
    return isinstance(e, (ir.BinOp, ir.Unary, ir.Var, ir.Const, ir.Call))


def _type_range(t):
    if isinstance(t, T.Scalar) and t.is_bool:
        return 0, 1
    if isinstance(t, T.Scalar) and t.is_int:
        i = np.iinfo(t.dtype)
        return int(i.min), int(i.max)
    return None, None


def _meet(a, b):
    lo = a[0] if b[0] is None else b[0] if a[0] is None else max(a[0], b[0])
    hi = a[1] if b[1] is None else b[1] if a[1] is None else min(a[1], b[1])
    return lo, hi


def _prod(shape):
    out = 1
    for n in shape:
        out *= n
    return out
