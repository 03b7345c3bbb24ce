"""Array loads a sequential loop may read once, before it (for dialects whose compilers
do not: PoCL leaves ``A[i, k]`` inside ``for j in range(k + 1, n): A[i, j] -= A[i, k] *
A[k, j]``, where it cannot tell that the stores miss it).

A load qualifies when the loop's body is plain assignments (no calls of helpers, no
other control flow), its indices use no variable the body assigns and no other load,
and every store of the body misses it: a store into another array only when that one
is private or team-shared (an array argument may be the same memory as another one),
into the same array only with the loop variable itself at a place where the load's
index is outside the loop's range (``start`` is that index plus a positive constant,
or ``stop`` is that index).  Python reads the element on every iteration; with no store
that can reach it, reading it once gives the same value.
"""
from __future__ import annotations

from dataclasses import fields

from . import ir

_PURE = (list, ir.Const, ir.Var, ir.ArrayRef, ir.Index, ir.Shape, ir.BinOp, ir.Unary, ir.Compare,
         ir.Logical, ir.Select, ir.Cast, ir.Call)


def invariant_loads(loop: ir.For) -> list:
    """The loads of ``loop``'s body that can be read once before it, each once."""
    if not (isinstance(loop.step, ir.Const) and loop.step.value > 0):
        return []
    stores, assigned = [], {loop.var}
    for s in loop.body:
        if not isinstance(s, ir.Assign) or not all(isinstance(n, _PURE)
                                                    for n in ir.walk([s.target, s.value])):
            return []
        if isinstance(s.target, ir.Index):
            stores.append(s.target)
        else:
            assigned.add(s.target.name)
    out = []
    for s in loop.body:
        for n in ir.walk([s.target.indices if isinstance(s.target, ir.Index) else [],
                          s.value]):
            if isinstance(n, ir.Index) and n.array.type.space == "global" \
                    and _invariant(n, assigned) and not any(same(n, m) for m in out) \
                    and all(_misses(t, n, loop) for t in stores):
                out.append(n)
    return out


def _invariant(load, assigned) -> bool:
    for n in ir.walk(load.indices):
        if isinstance(n, ir.Index) or (isinstance(n, ir.Var) and n.name in assigned):
            return False
    return True


def _misses(store, load, loop) -> bool:
    if store.array.name != load.array.name:
        return store.array.type.space in ("private", "local")
    for f, e in zip(store.indices, load.indices):
        if isinstance(f, ir.Var) and f.name == loop.var:
            start, stop = loop.start, loop.stop
            if same(stop, e) or (isinstance(start, ir.BinOp) and start.op == "+"
                                 and same(start.left, e) and isinstance(start.right, ir.Const)
                                 and start.right.value >= 1):
                return True
    return False


def same(a, b) -> bool:
    """Whether two IR expressions are the same computation (literal-ness aside)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if not hasattr(a, "__dataclass_fields__"):
        return a == b
    return all(same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a)
               if f.name not in ("weak", "fixed"))
