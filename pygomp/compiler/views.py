"""Slices and views: numpy's bounds of a slice (its step a constant or known at run
time), views bound to names (``a = x[1:]``, ``b = A[:, ::2]``, ``t = A.T``: ``A.T`` is
also taken wherever a slice is), and views passed to helpers.

The name stands for the `arrays.Slab` of the view, its bounds and fixed indices held in
int64 temporaries assigned at the binding, so that a later change of the variables in
them does not move the view (as with numpy's).  It is indexed (``a[i]``, an element on
every axis), sliced, read and written in array expressions and reductions, and its
``.shape``, ``.size``, ``.ndim`` and ``len`` are the view's; reads and writes go to the
array it views, so numpy's aliasing rules hold (an array assignment that reads its
target elsewhere through a view is refused as `arrays` refuses an overlap).  A row
``row = A[i]`` stays a `ir.View`.  A helper given a strided view takes the array and,
as int64 arguments, the view's fixed indices and each axis' start, step and length
(its parameter's type is a `Strided`, which keys the helper's specialization).
"""
from __future__ import annotations

import ast
import copy

from ..frozen import Frozen
from . import ir
from . import types as T
from .arrays import Slab, _add, _call, _sub
from .expressions import _UNSET, _i, _indices, dims, is_transpose


class Strided(Frozen):
    """The type of a helper parameter given a strided view: the viewed array's type, its
    axes given an index (``fixed``) and the view's axes (``axes``: the array's axis, or
    None for a new one).  The call passes the array, then an int64 for each fixed index,
    then the start, step and length of each axis."""
    __slots__ = _fields = ("array", "fixed", "axes")

    def __str__(self):
        return f"a {len(self.axes)}-d strided view of {self.array}"


class Views:
    """Mixin of `frontend.Frontend`: views bound to names, and ``.T``."""

    def viewish(self, node):
        """Whether ``node`` denotes a view only a Slab describes: a bound view, ``.T``,
        or an index or slice of those."""
        if isinstance(node, ast.Name):
            return node.id in self.views
        if is_transpose(node):
            return self.rank(node.value) > 0
        if isinstance(node, ast.Subscript) and not isinstance(node.value, ast.Attribute):
            return self.viewish(node.value)
        return False

    def binds_view(self, value):
        """Whether ``name = value`` binds a view (a slice, ``.T``, a view)."""
        if self.viewish(value):
            return self.rank(value) > 0          # not an element of a view
        return isinstance(value, ast.Subscript) and self.rank(value) > 0 and any(
            isinstance(i, ast.Slice) or (isinstance(i, ast.Constant) and i.value is None)
            for i in _indices(value))

    def bind_view(self, name, value, s):
        """``name = value``: the view's bounds go to temporaries before the statement."""
        if name in self.params or name in self.arrays or self.resolve(name):
            raise self.error(s, f"{name!r} is a parameter, an array or a scalar; a view "
                                f"needs a new name")
        old = self.view_stmts.setdefault(name, id(s))
        if old != id(s):
            raise self.error(s, f"{name!r} is bound to a view by another statement: bind "
                                f"a view to a name once (a new name for another view)")
        slab = self.slab(value)
        tag = f"{name}__w"
        fixed = {ax: self.pinned(e, s, f"{tag}f{ax}_") for ax, e in slab.fixed.items()}
        axes = [(ax, self.pinned(st, s, f"{tag}s{d}_"), step, self.pinned(n, s, f"{tag}n{d}_"),
                 sym) for d, (ax, st, step, n, sym) in enumerate(slab.axes)]
        if name not in self.views:
            self.scopes[-1].bound.add(name)
        self.views[name] = Slab(slab.root, fixed, axes)
        return []

    def pinned(self, e, s, tag):
        """``e``, or a temporary holding it when a variable in it may change later."""
        if all(not isinstance(n, ir.Var) or n.name.startswith("__") for n in ir.walk(e)):
            return e
        return self.temp(s, tag, T.INT64, e)

    def slice_bounds(self, sl, n, sym, node, d):
        """(start, step, length, sym) of slice ``sl`` on an axis of length ``n``, with
        numpy's rules: negative bounds count from the end, bounds out of range clip (to
        [0, n] for a positive step, [-1, n-1] for a negative one).  The length is
        negative where numpy's is 0 (`length` clips it)."""
        step = 1 if sl.step is None else \
            _UNSET if self.is_local_expr(sl.step) else self.static(sl.step)
        if step is _UNSET:
            return self.variable_step(sl, n, sym, node, d)
        if not isinstance(step, int) or isinstance(step, bool) or step == 0:
            raise self.error(node, f"{ast.unparse(node)}: the step of a slice must be a "
                                   f"non-zero integer")
        lo, hi = (0, n) if step > 0 else (-1, _add(n, -1))

        def bound(b, default, default_sym):
            # with a positive step, no lower clip of the stop is needed, nor an upper
            # one of the start: they give a span of no elements as they are
            stop = step > 0 and b is sl.upper
            if b is None:
                return default, default_sym
            lit = self.static(b) if isinstance(b, (ast.Constant, ast.UnaryOp)) else _UNSET
            if isinstance(lit, int) and not isinstance(lit, bool):
                if lit >= 0:
                    v = _i(lit) if step > 0 and not stop else \
                        _call("min", _i(lit), copy.deepcopy(hi))
                    return v, ("", lit)
                v = _add(copy.deepcopy(n), lit)
                return (v if stop else _call("max", v, _i(lo)),
                        (sym[0], sym[1] + lit) if sym else None)
            e = self.index(b, copy.deepcopy(n))
            return _call("min", e if stop else _call("max", e, _i(lo)),
                         copy.deepcopy(hi)), None
        last = (sym[0], sym[1] - 1) if sym else None
        start, s_sym = bound(sl.lower, _i(0), ("", 0)) if step > 0 else \
            bound(sl.lower, _add(copy.deepcopy(n), -1), last)
        stop, e_sym = bound(sl.upper, copy.deepcopy(n), sym) if step > 0 else \
            bound(sl.upper, _i(-1), ("", -1))
        start = self.hoist(start, sl, f"a{d}_")
        a, b = (stop, copy.deepcopy(start)) if step > 0 else (copy.deepcopy(start), stop)
        span = _sub(a, b)           # may be negative: a loop over it does nothing
        k = abs(step)
        length = span if k == 1 else ir.Call("floordiv", [_add(span, k - 1), _i(k)],
                                             type=T.INT64)
        ln_sym = None
        if k == 1 and s_sym and e_sym:
            top, low = (e_sym, s_sym) if step > 0 else (s_sym, e_sym)
            if low[0] == "" or low[0] == top[0]:
                ln_sym = (top[0] if low[0] == "" else "", top[1] - low[1])
        return start, step, length, ln_sym

    def variable_step(self, sl, n, sym, node, d):
        """`slice_bounds` of a slice whose step is known at run time: numpy's bounds
        for a positive and for a negative step, chosen by its sign (a step of 0 gives
        no elements, where numpy raises)."""
        step = self.temp(sl, f"st{d}_", T.INT64, self.int_expr(sl.step))
        out = []
        for sign in (1, -1):
            one = ast.copy_location(ast.Slice(lower=sl.lower, upper=sl.upper,
                                              step=ast.Constant(sign)), sl)
            start, _, span, _ = self.slice_bounds(one, n, sym, node, f"{d}{'pm'[sign < 0]}")
            k = step if sign > 0 else ir.Unary("-", step, type=T.INT64)    # |step|
            up = ir.BinOp("+", span, _add(copy.deepcopy(k), -1), type=T.INT64)
            out.append((start, ir.Call("floordiv", [up, copy.deepcopy(k)], type=T.INT64)))
        up = ir.Compare(">", step, _i(0), type=T.BOOL)
        start = ir.Select(up, out[0][0], out[1][0], type=T.INT64)
        length = ir.Select(copy.deepcopy(up), out[0][1], out[1][1], type=T.INT64)
        return start, step, length, None

    def view_argument(self, node):
        """(the `Strided` type, the IR arguments) of a view passed to a helper."""
        slab = self.slab(node)
        fixed = sorted(slab.fixed)
        parts = [copy.deepcopy(slab.root)] + [slab.fixed[ax] for ax in fixed]
        for ax, start, step, n, _ in slab.axes:
            parts += [start, step if isinstance(step, ir.Expr) else _i(step), n]
        t = Strided(slab.root.type, tuple(fixed), tuple(ax for ax, *_ in slab.axes))
        return t, [copy.deepcopy(p) for p in parts]

    def view_parameter(self, name, c, t):
        """The parameters a helper's `Strided` parameter ``name`` (C name ``c``) takes;
        ``name`` then denotes the view."""
        root = ir.ArrayRef(c, type=t.array)
        params = [(c, t.array)]

        def word(tag):
            params.append((f"{c}__{tag}", T.INT64))
            return ir.Var(f"{c}__{tag}", type=T.INT64)
        fixed = {ax: word(f"vf{ax}") for ax in t.fixed}
        axes = [(ax, word(f"vs{d}"), word(f"vt{d}"), word(f"vn{d}"), None)
                for d, ax in enumerate(t.axes)]
        self.views[name] = Slab(root, fixed, axes)
        return params

    def view_element(self, arr_node, idx_nodes, node):
        """An element of a view, indexed on every axis."""
        slab = self.slab(arr_node)
        if any(isinstance(i, ast.Slice) for i in idx_nodes):
            raise self.error(node, f"{ast.unparse(node)} is an array: slice a view in "
                                   f"array assignments, reductions, or bind it to a name")
        if len(idx_nodes) != len(slab.axes):
            raise self.error(node, f"{ast.unparse(arr_node)} is a view with "
                                   f"{dims(len(slab.axes))}: index every one of them "
                                   f"(a row of a view is a slice: v[i, :])")
        ks = [self.index(i, _length(ax)) for i, ax in zip(idx_nodes, slab.axes)]
        return slab.element(ks)

    def view_attribute(self, node):
        """``v.shape[k]``, ``v.size`` or ``v.ndim`` of a view."""
        if isinstance(node, ast.Subscript):         # v.shape[k]
            axes = self.slab(node.value.value).axes
            k = self.static(node.slice)
            if not isinstance(k, int) or not -len(axes) <= k < len(axes):
                raise self.error(node, f"{ast.unparse(node)}: the view has "
                                       f"{dims(len(axes))}; the index of .shape must be a "
                                       f"constant in range")
            return _length(axes[k])
        axes = self.slab(node.value).axes
        if node.attr == "ndim":
            return _i(len(axes))
        out = _i(1)
        for ax in axes:
            out = ir.BinOp("*", out, _length(ax), type=T.INT64)
        return out


def _length(ax):
    n = copy.deepcopy(ax[3])
    if isinstance(n, ir.Const):
        return _i(max(n.value, 0))
    return ir.Call("max", [n, _i(0)], type=T.INT64)
