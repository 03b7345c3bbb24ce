"""Views bound to names: ``a = x[1:]``, ``b = A[:, ::2]``, ``t = A.T`` (a transposed
view: ``A.T`` is also taken wherever a slice is).

The name stands for the `arrays.Slab` of the view, its bounds and fixed indices held in
int64 temporaries assigned at the binding, so that a later change of the variables in
them does not move the view (as with numpy's).  It is indexed (``a[i]``, an element on
every axis), sliced, read and written in array expressions and reductions, and its
``.shape``, ``.size``, ``.ndim`` and ``len`` are the view's; reads and writes go to the
array it views, so numpy's aliasing rules hold (an array assignment that reads its
target elsewhere through a view is refused as `arrays` refuses an overlap).  A row
``row = A[i]`` stays a `ir.View`, which helpers also take.
"""
from __future__ import annotations

import ast
import copy

from . import ir
from . import types as T
from .expressions import _i, _indices, dims


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
            return True
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
        self.views[name] = type(slab)(slab.root, fixed, axes)
        return []

    def pinned(self, e, s, tag):
        """``e``, or a temporary holding it when a variable in it may change later."""
        if all(not isinstance(n, ir.Var) or n.name.startswith("__") for n in ir.walk(e)):
            return e
        return self.temp(s, tag, T.INT64, e)

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


def is_transpose(node):
    return isinstance(node, ast.Attribute) and node.attr == "T"


def _length(ax):
    n = copy.deepcopy(ax[3])
    if isinstance(n, ir.Const):
        return _i(max(n.value, 0))
    return ir.Call("max", [n, _i(0)], type=T.INT64)
