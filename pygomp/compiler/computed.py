"""Array operands whose elements are computed, in the array expressions of `arrays`:
a reduction along an axis (``A.sum(axis=1)``, ``np.max(A, axis=0)``), a matrix product
(``A @ x``, ``np.dot(A, B)``, ``np.matmul``) and ``np.outer(a, b)``.

Such an operand is a leaf like a slice (a `Made`, with the extents of its axes); its
element at the loop indices of the statement is a temporary that a sequential loop over
the reduced axis computes, in the body of the statement's loop nest (`Frontend.inner`):
``y[:] = A @ x`` at a kernel's top level is a parallel loop over the rows of ``y``
whose iterations each run the dot product of one row.  A matrix product of two 1-d
arrays is a scalar, the reduction ``np.dot`` of `npcalls`.
"""
from __future__ import annotations

import ast

import numpy as np

from . import types as T
from .expressions import _i
from .loops import Scope


class Made:
    """A computed array operand of extents ``shape`` ([(length, sym)]; its ``axes``
    are a `arrays.Slab`'s), reading the arrays named ``roots``."""

    def __init__(self, fe, shape, make, roots):
        self.fe, self.make, self.roots = fe, make, roots
        self.axes = [(0, _i(0), 1, n, sym) for n, sym in shape]

    def element(self, ks):
        """The element at ``ks`` (None: an axis of length 1); its loops go to
        `Frontend.inner`."""
        return self.fe.made_value(self.make, [_i(0) if k is None else k for k in ks])


class Computed:
    """Mixin of `frontend.Frontend`: the `Made` operands of array expressions."""

    def computed(self, node):
        """The Made that ``node`` computes, or None when it is no such operand."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self.matmul(node, node.left, node.right)
        if not isinstance(node, ast.Call):
            return None
        parts = self.reduction_parts(node)
        if parts is not None:
            op, args, name, axis = parts
            if op == "dot":
                return self.matmul(node, *args)
            return None if axis is None else self.along(node, op, args[0], name, axis)
        if self.callee(node.func) is np.outer:
            return self.outer(node)
        return None

    def made_value(self, make, ks):
        """``make(ks)``, with the statements and variables it makes kept for the body
        of the loop nest being built."""
        pre, inner, self.pre, self.inner = self.pre, self.inner, [], []
        self.scopes.append(Scope())
        self.nesting += 1
        try:
            v = make(ks)
        finally:
            self.nesting -= 1
            decls = self.scopes.pop().decls
            made, self.pre = self.pre + self.inner, pre
            self.inner = inner
        self.inner += made
        self.inner_decls += decls
        return v

    def operand(self, node, what):
        """(leaves, shape) of an array operand."""
        leaves = self.leaves(node, [])
        shape = self.shape_of(leaves)
        if not shape:
            raise self.error(node, f"{ast.unparse(node)} is a scalar: {what} takes arrays")
        return leaves, shape

    def matmul(self, node, a, b):
        """``a @ b`` of 1-d and 2-d arrays (None: both 1-d, a scalar)."""
        what = "@" if isinstance(node, ast.BinOp) else f"{ast.unparse(node.func)}()"
        (la, sa), (lb, sb) = self.operand(a, what), self.operand(b, what)
        if len(sa) > 2 or len(sb) > 2:
            raise self.error(node, f"{what} of arrays with {len(sa)} and {len(sb)} "
                                   f"dimensions: kernels take 1-d and 2-d operands")
        if len(sa) == len(sb) == 1:
            return None
        (_, x), (_, y) = sa[-1], sb[0]
        if x and y and x[0] == y[0] != "" and x[1] != y[1]:
            raise self.error(node, f"{what}: the last axis of {ast.unparse(a)} and the "
                                   f"first of {ast.unparse(b)} differ by "
                                   f"{abs(x[1] - y[1])} elements")
        ra = len(sa)

        def make(ks):
            j = self.loop_vars(node, f"j{node.end_col_offset}_", 1, False)
            v = self.element(a, la, ks[:ra - 1] + j)
            w = self.element(b, lb, j + ks[ra - 1:])
            t = T.scalar(np.dot(np.zeros(1, v.type.dtype), np.zeros(1, w.type.dtype)).dtype)
            prod = self.binop("*", self.convert(v, t, node), self.convert(w, t, node), node)
            return self.reduce_into("+", t, prod, j, [sa[-1][0]], node, (), "m")
        return Made(self, sa[:-1] + sb[1:], make, _roots(la + lb))

    def along(self, node, op, x, name, axis):
        """The reduction ``op`` of array ``x`` along ``axis``."""
        lx, sx = self.operand(x, f"{name}()")
        if not isinstance(axis, int) or isinstance(axis, bool) or not -len(sx) <= axis < len(sx):
            raise self.error(node, f"{name}(): axis {axis!r} is not a constant axis of an "
                                   f"array with {len(sx)} dimension"
                                   f"{'s' if len(sx) != 1 else ''}")
        if len(sx) == 1:
            return None             # a scalar: the reduction of `npcalls`
        if op in ("argmin", "argmax") and any(isinstance(s, Made) for _, s in lx):
            raise self.error(node, f"{name}() of a matrix product or axis reduction is not "
                                   f"supported in kernels: store that into an array first")
        a = axis % len(sx)

        def make(ks):
            j = self.loop_vars(node, f"j{node.end_col_offset}_", 1, False)
            v = self.element(x, lx, ks[:a] + j + ks[a:])
            if op in ("argmin", "argmax"):
                return self.arg_reduce(op, v, j, [sx[a][0]], node, ())
            return self.reduce_value(op, [v.type], v, j, [sx[a][0]], node, ())
        return Made(self, sx[:a] + sx[a + 1:], make, _roots(lx))

    def outer(self, node):
        """``np.outer(a, b)`` of 1-d arrays."""
        if len(node.args) != 2 or node.keywords:
            raise self.error(node, "np.outer(a, b) takes two arrays")
        a, b = node.args
        (la, sa), (lb, sb) = (self.operand(x, "np.outer()") for x in (a, b))
        if len(sa) != 1 or len(sb) != 1:
            raise self.error(node, f"np.outer() of arrays with {len(sa)} and {len(sb)} "
                                   f"dimensions: kernels take two 1-d arrays (numpy "
                                   f"flattens others; write a[:, None] * b[None, :])")

        def make(ks):
            v, w = self.element(a, la, ks[:1]), self.element(b, lb, ks[1:])
            return self.binop("*", v, w, node)
        return Made(self, sa + sb, make, _roots(la + lb))


def _roots(leaves):
    out = set()
    for _, s in leaves:
        out |= s.roots if isinstance(s, Made) else {s.root.name}
    return out
