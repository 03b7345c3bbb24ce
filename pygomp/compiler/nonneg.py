"""A lower bound of an integer index expression from what the loops and single
assignments around it say, when constant bounds are not enough (``w - 2*i`` with
``i <= (w - 1) // 2``).  The front end then drops the test that counts a negative
index from the end.

An expression becomes a linear form over atoms (variables, ``x // d``, min, max, ...);
the prover replaces its atoms one at a time by a bound of theirs, a lower bound where
the coefficient is positive and an upper bound where it is negative, until a constant
is left.  Facts (`Facts`) hold only while they cannot change: a loop variable inside
its loop, a variable assigned by one statement until the end of that statement's block,
and parameters never assigned; an expression may use them only if all its variables
are such names and it reads no memory.  Overflow is not considered, as elsewhere in
the front end.
"""
from __future__ import annotations

import math
from fractions import Fraction

from . import ir

_PURE = (ir.Const, ir.Var, ir.BinOp, ir.Unary, ir.Shape, ir.ArrayRef, ir.Cast, ir.Call)
_ARITH = ("min", "max", "floordiv", "mod")
_ONE = "1"          # the key of a form's constant
_STEPS = 12         # replacements tried on one path before giving up


def stable(e, facts) -> bool:
    """Whether ``e`` reads no memory and only names whose values hold (``facts``)."""
    for n in ir.walk(e):
        if isinstance(n, list):         # a call's arguments
            continue
        if not isinstance(n, _PURE) or isinstance(n, ir.Call) and n.fn not in _ARITH:
            return False
        if isinstance(n, ir.Var) and n.name not in facts:
            return False
    return True


def lower(e, facts, const_lower, const_upper=None):
    """An integer lower bound of ``e``, or None.  ``facts``: C name -> ("loop", start,
    stop, step), ("value", expr) or None (a name that keeps its value);
    ``const_lower(atom)``: the front end's constant bound of an atom;
    ``const_upper(atom)``: a constant upper bound of an atom (or None)."""
    atoms = {}
    r = _search(_form(e, facts, atoms), facts, atoms, (const_lower, const_upper), 0)
    return None if r is None else math.ceil(r)


def upper(e, facts, const_lower, const_upper):
    """An integer upper bound of the signed ``e``, or None (`lower` of ``-e``)."""
    r = lower(ir.Unary("-", e, type=e.type), facts, const_lower, const_upper)
    return None if r is None else -r


def _form(e, facts, atoms, scale=Fraction(1)):
    """``e * scale`` as {key: coefficient}; atoms[key] is the atom's expression."""
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {_ONE: scale * e.value}
    if _signed(e):                  # unsigned arithmetic wraps: an atom
        if isinstance(e, ir.BinOp) and e.op in "+-":
            return _add(_form(e.left, facts, atoms, scale),
                        _form(e.right, facts, atoms, scale if e.op == "+" else -scale))
        if isinstance(e, ir.BinOp) and e.op == "*":
            for a, b in ((e.left, e.right), (e.right, e.left)):
                if isinstance(a, ir.Const) and isinstance(a.value, int):
                    return _form(b, facts, atoms, scale * a.value)
        if isinstance(e, ir.Unary) and e.op == "-":
            return _form(e.operand, facts, atoms, -scale)
    key = repr(e) if stable(e, facts) else ("at", id(e))   # reads never cancel
    atoms[key] = e
    return {key: scale}


def _bounds(e, facts):
    """(lower bounds, upper bounds) of an atom, each a list of expressions."""
    i64 = e.type
    if isinstance(e, ir.Var) and _signed(e):
        f = facts.get(e.name)
        if f and f[0] == "value":
            return [f[1]], [f[1]]
        if f and f[0] == "loop":
            _, start, stop, step = f
            one = ir.Const(1, type=i64)
            if step.value > 0:
                return [start], [ir.BinOp("-", stop, one, type=i64)]
            return [ir.BinOp("+", stop, one, type=i64)], [start]
        return [], []
    if isinstance(e, ir.Call) and e.fn == "min":
        return [], list(e.args)
    if isinstance(e, ir.Call) and e.fn == "max":
        return list(e.args), []
    return [], []


def _search(form, facts, atoms, const, steps):
    live = [k for k, c in form.items() if k != _ONE and c]
    if not live:
        return form.get(_ONE, Fraction(0))
    if steps > _STEPS:
        return None
    key = _pick(live, atoms, facts)
    c, e = form[key], atoms[key]
    rest = {k: v for k, v in form.items() if k != key}
    if isinstance(e, ir.Call) and e.fn in ("floordiv", "mod") and _positive(e.args[1]):
        d = e.args[1].value
        if e.fn == "mod":           # 0 <= x % d <= d - 1
            rest[_ONE] = rest.get(_ONE, 0) + (0 if c > 0 else c * (d - 1))
            return _search(rest, facts, atoms, const, steps + 1)
        # (x - d + 1) / d <= x // d <= x / d
        sub = _form(e.args[0], facts, atoms, c / d)
        if c > 0:
            sub[_ONE] = sub.get(_ONE, 0) - c * Fraction(d - 1, d)
        return _search(_add(rest, sub), facts, atoms, const, steps + 1)
    lows, highs = _bounds(e, facts)
    best = None
    for b in (lows if c > 0 else highs):
        r = _search(_add(rest, _form(b, facts, atoms, c)), facts, atoms, const, steps + 1)
        if r is not None and (best is None or r > best):
            best = r
    bound = const[c < 0]
    if best is None and bound is not None:
        lo = bound(e)               # a lower bound (c > 0) or upper bound (c < 0) of e
        if lo is not None:
            rest[_ONE] = rest.get(_ONE, 0) + c * lo
            best = _search(rest, facts, atoms, const, steps + 1)
    return best


def _pick(live, atoms, facts):
    """The atom to replace first: one that is not a variable, else the variable bound
    last (inner loops and later assignments use the outer names)."""
    order = {name: k for k, name in enumerate(facts)}
    return max(live, key=lambda k: (not isinstance(atoms[k], ir.Var),
                                    order.get(getattr(atoms[k], "name", None), -1)))


def _signed(e):
    t = e.type
    return getattr(t, "is_int", False) and not t.is_bool and not t.name.startswith("u")


def _positive(e):
    return isinstance(e, ir.Const) and isinstance(e.value, int) and e.value > 0


def _add(a, b):
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, 0) + c
    return out
