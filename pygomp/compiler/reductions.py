"""Reductions: the operators, and their lowering to the four internal calls.

As GCC lowers OpenACC reductions (IFN_GOACC_REDUCTION), a reduction on a loop that is
partitioned over levels L1..Ln becomes, for each level it crosses:

    SETUP(level)     before the level forks            (e.g. allocate partials)
    INIT(level)      in each participant: local = identity
    ... the loop, the body updating the innermost local ...
    FINI(level)      in each participant: combine local into the enclosing copy
    TEARDOWN(level)  after the level joins              (e.g. free partials)

The enclosing copy of the outermost level is the variable itself; that of level k+1 is the
local of level k.  An array reduction has one copy per participant (thread, work-item):
its four calls are at the loop's outermost level only, with the Array type.  `lower` fills ``ParLoop.setup/init/fini/teardown`` with `ir.RedCall`s
(outer levels first for SETUP/INIT, inner first for FINI/TEARDOWN); a dialect's
``reduction`` hook turns each call into target code.
"""
from __future__ import annotations

from . import ir, precheck
from . import types as T


class Op:
    def __init__(self, name, kinds):
        self.name = name
        self.kinds = kinds          # "i" ints, "f" floats, "c" complexes, "b" bools

    def check(self, t, error):
        ok = ((t in T.REDUCIBLE and (("i" in self.kinds and t.is_int)
                                     or ("f" in self.kinds and t.is_float)
                                     or ("c" in self.kinds and t.is_complex)))
              or (t.is_bool and "b" in self.kinds))
        if not ok:
            raise error(f"operator {self.name} does not apply to {t} (reductions take "
                        f"int32, int64, float32, float64, and complex64 and complex128 "
                        f"for + and *; bitwise ones only integers)")


OPS = {op.name: op for op in (
    Op("+", "ifc"), Op("*", "ifc"), Op("max", "if"), Op("min", "if"),
    Op("&", "ib"), Op("|", "ib"), Op("^", "ib"), Op("and", "ifb"), Op("or", "ifb"))}
assert tuple(OPS) == precheck.REDUCTION_OPS      # what @omp.target checks at once


def local_name(var: str, rid: int, level: str) -> str:
    return f"{var}__r{rid}{level[0]}"


def combine(op: str, t, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """The IR of ``a OP b`` for a reduction operator."""
    if op in ("max", "min"):
        return ir.Call(op, [a, b], type=t)
    if op in ("and", "or"):
        c = ir.Logical("&&" if op == "and" else "||", a, b, type=T.BOOL)
        return c if t.is_bool else ir.Cast(c, type=t)
    return ir.BinOp(op, a, b, type=t)


def lower(fn: ir.Function) -> ir.Function:
    """Fill the four phase lists of every reduction loop in ``fn`` (in place)."""
    for node in ir.walk(fn.body):
        if isinstance(node, ir.ParLoop):
            node.setup, node.init, node.fini, node.teardown = [], [], [], []
            for r in node.reductions:
                outer = r.var
                calls = []
                for level in node.levels:
                    local = local_name(r.var, r.rid, level)
                    calls.append((level, outer, local))
                    outer = local
                assert outer == r.local, (outer, r.local)
                if isinstance(r.type, T.Array):      # one copy per participant
                    calls = [(node.levels[0], r.var, r.local)]
                mk = lambda phase, lv, o, lo: ir.RedCall(phase, lv, r.op, r.type, o, lo, r.rid,
                                                         line=node.line)
                node.setup += [mk("SETUP", *c) for c in calls]
                node.init += [mk("INIT", *c) for c in calls]
                node.fini += [mk("FINI", *c) for c in reversed(calls)]
                node.teardown += [mk("TEARDOWN", *c) for c in reversed(calls)]
    return fn


def array_copies(fn: ir.Function) -> set:
    """The names of the array reductions' copies (one per participant) in ``fn``."""
    return {c.local for n in ir.walk(fn.body) if isinstance(n, ir.ParLoop)
            for c in n.init if isinstance(c.type, T.Array)}
