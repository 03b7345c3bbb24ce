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

An element a loop accumulates into (``for j in range(n): tmp[i] += A[i, j] * x[j]``) is
kept in a local while the loop runs (`kept_elements`), for every dialect: read before
the first iteration and stored after the last, under the same plain body, when its
indices change in no iteration, the body reaches its array only at that place, and at
run time its array is apart from every other global array the body reaches (`apart`:
the call's arrays may be one memory; C compilers see arguments as pointers that may
alias, and lose ``restrict`` in OpenMP's outlined regions).  Each iteration computes
what it did, in the same order: the results are the same bits.
"""
from __future__ import annotations

from dataclasses import fields

from . import ir

_PURE = (list, ir.Const, ir.Var, ir.ArrayRef, ir.Index, ir.Shape, ir.BinOp, ir.Unary, ir.Compare,
         ir.Logical, ir.Select, ir.Cast, ir.Call)


def _plain(loop: ir.For):
    """``(stores, assigned)`` of a loop with a positive constant step whose body is plain
    assignments, else None."""
    if not (isinstance(loop.step, ir.Const) and loop.step.value > 0):
        return None
    stores, assigned = [], {loop.var}
    for s in loop.body:
        if not isinstance(s, ir.Assign) or not all(isinstance(n, _PURE)
                                                    for n in ir.walk([s.target, s.value])):
            return None
        if isinstance(s.target, ir.Index):
            stores.append(s.target)
        else:
            assigned.add(s.target.name)
    return stores, assigned


def invariant_loads(loop: ir.For) -> list:
    """The loads of ``loop``'s body that can be read once before it, each once."""
    plain = _plain(loop)
    if plain is None:
        return []
    stores, assigned = plain
    out = []
    for s in loop.body:
        for n in ir.walk([s.target.indices if isinstance(s.target, ir.Index) else [],
                          s.value]):
            if isinstance(n, ir.Index) and n.array.type.space == "global" \
                    and _invariant(n, assigned) and not any(same(n, m) for m in out) \
                    and all(_misses(t, n, loop) for t in stores):
                out.append(n)
    return out


def kept_elements(loop: ir.For) -> tuple[list, list]:
    """``(kept, others)``: the global elements ``loop`` stores into that can live in a
    local while it runs, and the other global arrays its body reaches (ArrayRefs), each of
    which must be apart from each kept one's array at run time."""
    plain = _plain(loop)
    if plain is None:
        return [], []
    stores, assigned = plain
    reached = [n for n in ir.walk([[s.target, s.value] for s in loop.body])
               if isinstance(n, ir.Index) and n.array.type.space == "global"]
    kept = []
    for t in stores:
        if t.array.type.space == "global" and _invariant(t, assigned) \
                and all(same(n, t) for n in reached if n.array.name == t.array.name) \
                and not any(k.array.name == t.array.name for k in kept):
            kept.append(t)
    names = {k.array.name for k in kept}
    others = {n.array.name: n.array for n in reached if n.array.name not in names}
    return kept, list(others.values())


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
