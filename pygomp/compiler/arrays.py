"""Array expressions in kernels, lowered to loops in the typed front end.

- A slice or sub-array (``u[1:-1]``, ``A[i, :]``, ``A[:, j]``, ``x[::-2]``,
  ``x[:, None]``) is a `Slab`: a strided view of an array, with numpy's normalized
  bounds (computed once, before the loop, into int64 temporaries).
- An assignment to a slab, ``v[1:-1] = 0.5 * (u[:-2] + u[2:])`` or ``row[:] = 0`` (and
  ``x[a:b] += ...``), is a loop nest over the target's extents whose body assigns one
  element: each array operand (a *leaf*) on the right stands for its element there,
  broadcast as numpy broadcasts (fewer dimensions, or an extent of 1 from ``None``).
  At a kernel's top level the outermost loop is parallel (as ``omp.parallel_range``),
  inside a parallel loop or in a helper it is the thread's sequential loop.
- Reductions and ``np.where``: `npcalls`.
"""
from __future__ import annotations

import ast
import copy
import dataclasses

import numpy as np

from . import ir
from . import types as T
from .callables import ABS, COMPLEX, MATH
from .computed import Made
from .expressions import _i, _indices, _is_shape, dims, is_transpose

# elementwise functions whose array arguments are leaves
_ELEMENTWISE = set(MATH) | {np.minimum, np.maximum, np.where, np.clip} | set(ABS) \
    | set(COMPLEX)


class Slab:
    """A strided view of ``root``: ``fixed`` {root axis: index}, and the view's axes
    ``axes``: [(root axis or None for a new axis, start, step, length, sym)], where
    ``sym`` is the length as (key, offset) when it is some expression plus a constant
    (for the checks at compile time), else None."""

    def __init__(self, root, fixed, axes):
        self.root, self.fixed, self.axes = root, fixed, axes

    def element(self, ks):
        """The element at the view's index ``ks`` (int64 IR, one per axis; None: a
        broadcast axis of length 1)."""
        idx = dict(self.fixed)
        for (ax, start, step, _, _), k in zip(self.axes, ks):
            if ax is None:
                continue
            if k is None:
                idx[ax] = copy.deepcopy(start)
                continue
            k = copy.deepcopy(k)
            off = _times(k, step)
            idx[ax] = off if _zero(start) else ir.BinOp("+", copy.deepcopy(start), off,
                                                        type=T.INT64)
        t = self.root.type
        return ir.Index(copy.deepcopy(self.root), [idx[a] for a in range(t.ndim)],
                        type=t.elem)


class Arrays:
    """Mixin of `frontend.Frontend`: slices, elementwise expressions, assignments to
    sub-arrays."""

    # -- names of temporaries (the same in every pass over the kernel) -------------------
    def temp(self, node, tag, t, value=None):
        """A variable of type ``t`` for ``node`` (a C name no Python name has); when a
        value is given, its assignment goes before the statement."""
        name = f"__{tag}{node.lineno}_{node.col_offset}_{node.end_col_offset}"
        self.vtypes[name] = t
        c = self.define(name, node)
        v = ir.Var(c, type=t)
        if value is not None and not any(isinstance(p, ir.Assign) and p.target == v
                                         for p in self.pre):   # x[1:] += ...: once
            self.pre.append(ir.Assign(v, value, line=self.line(node)))
        return ir.Var(c, type=t)

    def hoist(self, e, node, tag):
        """``e``, or a temporary holding it when it is more than a constant or name (one
        temporary for equal values: the C compiler then sees equal offsets)."""
        if isinstance(e, (ir.Const, ir.Var, ir.Shape)):
            return e
        for p in self.pre:
            if isinstance(p, ir.Assign) and p.value == e and p.target.name.startswith("__"):
                return copy.deepcopy(p.target)
        return self.temp(node, tag, T.INT64, e)

    # -- slabs -----------------------------------------------------------------------
    def rank(self, node):
        """The number of dimensions of the array ``node`` denotes (0: not an array)."""
        if isinstance(node, ast.Name):
            if node.id in self.views:
                return len(self.views[node.id].axes)
            a = self.arrays.get(node.id)
            return 0 if a is None else a.type.ndim
        if is_transpose(node):
            return self.rank(node.value)
        if isinstance(node, ast.Subscript) and not _is_shape(node.value):
            r = self.rank(node.value)
            if r:
                idx = _indices(node)
                return r - sum(not (isinstance(i, ast.Slice) or _is_none(i)) for i in idx) \
                    + sum(_is_none(i) for i in idx)
        return 0

    def slab(self, node):
        """The Slab of an array-denoting Name, Subscript or ``.T``."""
        if isinstance(node, ast.Name) and node.id in self.views:
            return copy.deepcopy(self.views[node.id])
        if is_transpose(node):
            base = self.slab(node.value)
            return Slab(base.root, base.fixed, base.axes[::-1])
        if isinstance(node, ast.Name):
            a = self.arrays[node.id]
            root, prefix = (a.array, a.prefix) if isinstance(a, ir.View) else (a, [])
            if isinstance(root.type.elem, T.Record):
                raise self.whole_record(node, root)             # records.py
            fixed = dict(enumerate(copy.deepcopy(prefix)))
            axes = []
            for ax in range(len(prefix), root.type.ndim):
                n = self.shape(root, ax)
                axes.append((ax, _i(0), 1, n, _sym(n)))
            return Slab(root, fixed, axes)
        base = self.slab(node.value)
        idx = _indices(node)
        used = sum(not _is_none(i) for i in idx)
        if any(isinstance(i, ast.Starred) or (isinstance(i, ast.Constant)
                                              and i.value is Ellipsis) for i in idx):
            raise self.error(node, f"{ast.unparse(node)}: ... and * are not supported in "
                                   f"kernel indices")
        if used > len(base.axes):
            raise self.error(node, f"{ast.unparse(node.value)} has {dims(len(base.axes))} "
                                   f"and the kernel indexes it with {used}")
        axes, rest, fixed = [], list(base.axes), dict(base.fixed)
        for d, i in enumerate(idx):
            if _is_none(i):
                axes.append((None, _i(0), 0, _i(1), ("", 1)))
                continue
            ax, start, step, n, sym = rest.pop(0)
            if ax is None:
                raise self.error(node, f"{ast.unparse(node)}: index a new axis (None) "
                                       f"only with :")
            if isinstance(i, ast.Slice):
                s0, st, ln, sy = self.slice_bounds(i, n, sym, node, d)
                s0 = s0 if _zero(s0) else _times(s0, step)
                start = _add(s0, start.value) if isinstance(start, ir.Const) else \
                    start if _zero(s0) else ir.BinOp("+", start, s0, type=T.INT64)
                axes.append((ax, self.hoist(start, i, f"s{d}_"), _times(step, st),
                             self.hoist(ln, i, f"n{d}_"), sy))
            else:
                k = self.index(i, copy.deepcopy(n))
                k = _times(k, step)
                fixed[ax] = k if _zero(start) else ir.BinOp("+", start, k, type=T.INT64)
        return Slab(base.root, fixed, axes + rest)

    # -- leaves of an elementwise expression ------------------------------------------
    def arrayish(self, node):
        """Whether ``node`` is an array expression (no side effects)."""
        if isinstance(node, (ast.Name, ast.Subscript)) or is_transpose(node):
            return self.rank(node) > 0
        if _part(node):
            return self.arrayish(node.value)
        if _conjugate(node):
            return self.arrayish(node.func.value)
        if isinstance(node, ast.Call):
            if self.elementwise(node):
                return any(self.arrayish(a) for a in node.args)
            return self.computed(node) is not None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self.computed(node) is not None
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            return any(self.arrayish(c) for c in ast.iter_child_nodes(node))
        return False

    def elementwise(self, call):
        if isinstance(call.func, ast.Attribute) and self.arrayish(call.func.value):
            return False                                        # x.sum()
        try:
            return self.callee(call.func) in _ELEMENTWISE
        except TypeError:
            return False

    def leaves(self, node, out):
        """The array operands of the elementwise expression ``node``: [(node, Slab)]."""
        if isinstance(node, (ast.Name, ast.Subscript)) or is_transpose(node):
            if self.rank(node):
                out.append((node, self.slab(node)))
        elif _part(node):                                       # z.real
            self.leaves(node.value, out)
        elif _conjugate(node):                                  # z.conjugate()
            self.leaves(node.func.value, out)
        elif isinstance(node, (ast.Call, ast.BinOp)) and self.computed(node) is not None:
            out.append((node, self.computed(node)))                 # A @ x, A.sum(axis=1)
        elif isinstance(node, ast.Call):
            if self.elementwise(node):
                for a in node.args:
                    self.leaves(a, out)
        elif isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            for c in ast.iter_child_nodes(node):
                self.leaves(c, out)
        return out

    def shape_of(self, leaves):
        """The broadcast extents [(length, sym)] of ``leaves``."""
        r = max([len(s.axes) for _, s in leaves], default=0)
        out, ones = [None] * r, [None] * r
        for _, s in leaves:
            for j, ax in enumerate(s.axes, r - len(s.axes)):
                if _bcast(ax):          # its run-time length, 0 or 1, if no other
                    ones[j] = ones[j] or (ax[3], ax[4])
                elif out[j] is None:
                    out[j] = (ax[3], ax[4])
        return [o or one for o, one in zip(out, ones)]

    def check_shapes(self, leaves, shape, node, what):
        """A compile-time error where numpy's broadcasting would fail whatever the
        run-time extents: two lengths on an axis that differ by a constant (the other
        mismatches are not checked: see the README)."""
        seen = [{} if b is None or (b[0] == "" and not _const(n)) else {b[0]: (b[1], what)}
                for n, b in shape]
        for n, s in leaves:
            if len(s.axes) > len(shape):
                raise self.error(node, f"{ast.unparse(n)} has {dims(len(s.axes))} and "
                                       f"{what} has {len(shape)}: it does not broadcast")
            for j, ax in enumerate(s.axes, len(shape) - len(s.axes)):
                a = ax[4]
                if _bcast(ax) or a is None or (a[0] == "" and not _const(ax[3])):
                    continue           # literal slices of run-time extents may clip
                off, other = seen[j].setdefault(a[0], (a[1], ast.unparse(n)))
                if off != a[1]:
                    d = a[1] - off
                    raise self.error(node, f"{ast.unparse(n)} does not broadcast to "
                                           f"{other}: its axis {j - len(shape) + len(s.axes)} "
                                           f"has {abs(d)} element{'s' if abs(d) != 1 else ''} "
                                           f"{'more' if d > 0 else 'fewer'}")

    def element(self, node, leaves, ks):
        """The IR of ``node`` at the loop indices ``ks`` (its leaves are elements)."""
        saved = self.elems
        self.elems = dict(saved)
        for n, s in leaves:
            self.elems[id(n)] = _at(s, ks)
        try:
            v = self.expr(node)
        finally:
            self.elems = saved
        if not isinstance(v.type, T.Scalar):
            raise self.error(node, f"{ast.unparse(node)} is not an elementwise expression "
                                   f"of arrays and scalars")
        return v

    def check_overlap(self, leaves, tslab, target, s):
        """Refuse a right side that reads the target ``tslab`` at other places."""
        probe = [ir.Var(f"k{j}", type=T.INT64) for j in range(len(tslab.axes))]
        for n, sl in leaves:        # numpy reads the whole right side before it writes
            if isinstance(sl, Made):
                if tslab.root.name in sl.roots:
                    raise self.error(s, f"{ast.unparse(n)} reads {ast.unparse(target)}, "
                                        f"which this statement writes: numpy computes it "
                                        f"first, a kernel does not; write into another "
                                        f"array")
            elif sl.root.name == tslab.root.name and \
                    getattr(sl.root, "member", None) == getattr(tslab.root, "member", None) \
                    and not self.disjoint(_at(sl, probe), tslab.element(probe), probe):
                raise self.error(s, f"{ast.unparse(n)} overlaps {ast.unparse(target)}, "
                                    f"which this statement writes: numpy copies the right "
                                    f"side first, a kernel does not (it needs an index "
                                    f"that the loop bounds prove differs, as in "
                                    f"A[i, k:] -= A[k, k:] under i > k); write into "
                                    f"another array")

    def pin_reads(self, e, root, ks, s):
        """``e`` with each element of the array ``root`` that it reads at the same place
        for every index of ``ks`` (``x[0]`` in ``x[:] = x[0] + x``) read once, into a
        temporary before the loop, as numpy reads it before it writes."""
        moving = {k.name for k in ks}
        pinned = []

        def pin(n):
            if isinstance(n, ir.Index) and n.array.name == root and not any(
                    isinstance(m, ir.Var) and m.name in moving for m in ir.walk(n)):
                pinned.append(n)
                return self.temp(s, f"p{len(pinned)}_", n.type, n)
            for f in dataclasses.fields(n):
                x = getattr(n, f.name)
                if isinstance(x, ir.Expr):
                    setattr(n, f.name, pin(x))
                elif isinstance(x, list):
                    setattr(n, f.name, [pin(y) if isinstance(y, ir.Expr) else y for y in x])
            return n
        return pin(e)

    def disjoint(self, a, b, probe):
        """Whether two elements of one array, at the statement's loop indices
        ``probe``, are the same place for every index (nothing to copy first), or
        never meet: on some axis whose indices do not move with ``probe``, one exceeds
        the other wherever the loops around run (``A[k, j]`` and ``A[i, j]`` in a
        loop of ``i`` from ``k + 1``)."""
        if ir.dump(a) == ir.dump(b):
            return True
        moving = {k.name for k in probe}
        for x, y in zip(a.indices, b.indices):
            if any(isinstance(n, ir.Var) and n.name in moving for e in (x, y)
                   for n in ir.walk(e)):
                continue
            for lo, hi in ((x, y), (y, x)):
                gap = ir.BinOp("-", ir.BinOp("-", copy.deepcopy(hi), copy.deepcopy(lo),
                                             type=T.INT64), _i(1), type=T.INT64)
                if self.nonnegative(gap):
                    return True
        return False

    # -- loops ------------------------------------------------------------------------
    def loop_vars(self, node, tag, rank, par):
        """The int64 variables of a loop nest for ``node`` (the outermost one a parallel
        loop's when ``par``)."""
        out = []
        for d in range(rank):
            n = f"__{tag}{node.lineno}_{node.col_offset}_{d}"
            self.vtypes[n] = T.INT64          # a parallel loop's are its own (`nest`)
            out.append(ir.Var(self.cname(n) if par else self.define(n, node), type=T.INT64))
        return out

    def nest(self, ks, extents, stmts, node, levels, reductions=()):
        """Loops of ``ks`` over ``extents`` around ``stmts``; the outermost one is a
        ParLoop of ``levels`` (with ``reductions``) unless that is empty."""
        line = self.line(node)
        par = bool(levels)
        stmts = self.inner + stmts          # what computes the elements (`computed`)
        decls, self.inner, self.inner_decls = self.inner_decls, [], []
        for d in reversed(range(1 if par else 0, len(ks))):
            stmts = [ir.For(ks[d].name, _i(0), extents[d], _i(1), stmts, line=line)]
        if not par:
            self.scopes[-1].decls += decls
            return stmts
        loop = ir.ParLoop(levels, [ir.Dim(ks[0].name, _i(0), extents[0], _i(1))], stmts,
                          reductions=list(reductions), line=line)
        loop.decls = [(k.name, T.INT64) for k in ks[1:]] + decls
        return [loop]

    # -- array assignment ---------------------------------------------------------------
    def is_array_target(self, target):
        """Whether an assignment to ``target`` stores into a sub-array (or an array)."""
        return self.rank(target) > 0

    def array_assign(self, target, value, s, aug=False):
        """``target = value`` (``target += value`` when ``aug``) with ``target`` a
        sub-array: a loop nest over its extents."""
        if self.is_scan(value) and not aug:
            return self.scan_assign(target, value, s)          # np.cumsum (scans.py)
        tslab = self.slab(target)
        shape = [(ax[3], ax[4]) for ax in tslab.axes]
        leaves = self.leaves(value, [])
        self.check_shapes(leaves, shape, s, ast.unparse(target))
        self.check_overlap(leaves, tslab, target, s)
        levels = () if self.levels or not self.is_kernel else ("gang", "worker", "vector")
        ks = self.loop_vars(s, "k", len(shape), bool(levels))
        v = self.pin_reads(self.element(value, leaves, ks), tslab.root.name, ks, s)
        t = tslab.root.type.elem
        if aug and not T.can_assign(t, v.type):
            raise self.error(s, f"cannot store {v.type} into the {t} array "
                                f"{ast.unparse(target)} in place (numpy refuses the cast): "
                                f"convert it explicitly")
        body = [ir.Assign(tslab.element(ks), self.convert(v, t, s), line=self.line(s))]
        return self.nest(ks, [ln for ln, _ in shape], body, s, levels)


def _at(slab, ks):
    """The element of a leaf at the loop indices ``ks`` (its axes are the last ones);
    an axis of length 1 broadcasts."""
    mine = ks[len(ks) - len(slab.axes):]
    return slab.element([None if _bcast(ax) else k for ax, k in zip(slab.axes, mine)])


def _part(node):
    return isinstance(node, ast.Attribute) and node.attr in ("real", "imag")


def _conjugate(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "conjugate" and not node.args


def _times(a, b):
    """``a * b`` of int64 IR or Python ints (an int when both are)."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(b, int) and b == 1 or isinstance(a, int) and a == 1:
        return b if isinstance(a, int) else a
    a, b = (_i(x) if isinstance(x, int) else copy.deepcopy(x) for x in (a, b))
    return ir.BinOp("*", a, b, type=T.INT64)


def _bcast(ax):
    """Whether an axis broadcasts: its length is 1 (a new axis, ``x[:1]``, ``x[-1:]``)."""
    return _one(ax[3]) or ax[4] == ("", 1)


def _is_none(node):
    return isinstance(node, ast.Constant) and node.value is None


def _zero(e):
    return isinstance(e, ir.Const) and e.value == 0


def _one(e):
    return isinstance(e, ir.Const) and e.value == 1


def _const(e):
    return isinstance(e, ir.Const)


def _add(e, c):
    if c == 0:
        return e
    if isinstance(e, ir.Const):
        return _i(e.value + c)
    if isinstance(e, ir.BinOp) and e.op == "+" and isinstance(e.right, ir.Const):
        return _add(e.left, e.right.value + c)
    return ir.BinOp("+", e, _i(c), type=T.INT64)


def _sub(a, b):
    if isinstance(b, ir.Const):
        return _add(a, -b.value)
    return ir.BinOp("-", a, b, type=T.INT64)


def _call(fn, a, b):
    if fn == "max" and isinstance(a, ir.Shape) and _zero(b):
        return a
    if isinstance(a, ir.Const) and isinstance(b, ir.Const):
        return _i(min(a.value, b.value) if fn == "min" else max(a.value, b.value))
    return ir.Call(fn, [a, b], type=T.INT64)


def length(ax):
    """The length of a Slab's axis, as numpy gives it (0, not less)."""
    return _call("max", copy.deepcopy(ax[3]), _i(0))


def _sym(n):
    """A length as (key, offset): ("", c) for a constant, (its IR text, 0) otherwise."""
    return ("", n.value) if isinstance(n, ir.Const) else (ir.dump(n), 0)
