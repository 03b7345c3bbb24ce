"""numpy reductions and ``np.where`` in kernels (on the slices and array expressions
of `arrays`).

A reduction (``np.sum``, ``np.prod``, ``np.min``, ``np.max``, ``np.dot`` of two 1-d
arrays, ``np.argmin``, ``np.argmax``, and the methods ``.sum() .prod() .min() .max()
.argmin() .argmax()``) of an array expression is a temporary scalar, computed by a loop
nest put before the statement (`Frontend.pre`): a parallel loop with a reduction at a
kernel's top level, a vector loop with a reduction inside a gang or worker loop, a
sequential loop inside a vector loop or in a helper.  Its type is numpy 2's (``np.sum``
of int32 is int64).  ``np.where(c, a, b)`` is the elementwise select.
"""
from __future__ import annotations

import ast
import copy

import numpy as np

from . import complexes, ir
from . import types as T
from .arrays import length
from .callables import METHODS, REDUCE
from .computed import Made
from .expressions import _UNSET, _i, _result_type
from .reductions import OPS, combine, local_name



class NumpyCalls:
    """Mixin of `frontend.Frontend` (with `arrays.Arrays`): reductions, np.where."""

    def reduction_parts(self, node):
        """(operator, array arguments, name, axis or None) of a numpy reduction call
        (np.dot and np.matmul: "dot"), or None for other calls."""
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in METHODS and self.arrayish(f.value):
            op, args, name = METHODS[f.attr], [f.value], ast.unparse(f)
            rest = node.args
        else:
            obj = self.callee(f)
            try:
                op = REDUCE.get(obj)
            except TypeError:
                op = None
            if op is None:
                return None
            name = ast.unparse(f)
            want = 2 if op == "dot" else 1
            if len(node.args) < want:
                raise self.error(node, f"{name}() takes {want} array"
                                       f"{'s' if want > 1 else ''}")
            args, rest = node.args[:want], node.args[want:]
        kw = {k.arg: k.value for k in node.keywords}
        extra = [k for k in kw if k != "axis"] + ["axis"] * (op == "dot" and "axis" in kw)
        if extra or len(rest) > (op != "dot") or ("axis" in kw and rest):
            what = f"{extra[0]}=" if extra else "more arguments"
            raise self.error(node, f"{name}(): {what} is not supported in kernels (the "
                                   f"array{'s' if op == 'dot' else ''} and axis= are)")
        axis = kw.get("axis", rest[0] if rest else None)
        if axis is not None:            # a constant (else its text, refused as one)
            v = _UNSET if self.is_local_expr(axis) else self.static(axis)
            axis = ast.unparse(axis) if v is _UNSET else v
        return op, args, name, axis

    def array_call(self, node):
        """A reduction, np.clip or ``np.where`` call in IR, or None for other calls."""
        obj = self.callee(node.func)
        if obj is np.where:
            return self.where(node)
        if obj is np.clip:
            return self.clip(node)
        if obj in (np.cumsum, np.cumprod):
            raise self.error(node, f"{ast.unparse(node.func)}() makes an array: a kernel "
                                   f"takes it only as the whole right side of an assignment "
                                   f"to a sub-array (y[:] = {ast.unparse(node)})")
        if obj is len and len(node.args) == 1 and self.rank(node.args[0]) and (
                isinstance(node.args[0], ast.Subscript) or self.viewish(node.args[0])):
            return length(self.slab(node.args[0]).axes[0])      # len(x[1:]), len(view)
        parts = self.reduction_parts(node)
        if parts is None:
            return None
        if self.computed(node) is not None:
            raise self.error(node, f"{ast.unparse(node)} is an array: a kernel stores it "
                                   f"into a sub-array (out[:] = {ast.unparse(node)}) or "
                                   f"reduces it (np.sum(...)); it makes no array of its own")
        op, args, name, _ = parts
        return self.reduce(op, args, node, name)

    def clip(self, node):
        """``np.clip(a, lo, hi)`` of scalars: numpy's minimum(maximum(a, lo), hi)."""
        if len(node.args) != 3 or node.keywords:
            raise self.error(node, "np.clip(a, lo, hi) takes three arguments")
        a, lo, hi = (self.expr(x) for x in node.args)
        for x, n in zip((a, lo, hi), node.args):
            if not isinstance(x.type, T.Scalar):
                raise self.error(n, f"{ast.unparse(n)} is an array: np.clip of arrays is "
                                    f"elementwise, assign it to an array (out[:] = ...)")
            if x.type.is_complex:
                raise self.error(n, "np.clip of complex numbers is not supported in kernels")
        t = _result_type(ir.Var("", type=_result_type(a, lo), weak=a.weak and lo.weak), hi)
        c = [self.convert(x, t, node) for x in (a, lo, hi)]
        weak = a.weak and lo.weak and hi.weak
        up = ir.Call("maximum", c[:2], type=t, weak=weak)
        return ir.Call("minimum", [up, c[2]], type=t, weak=weak)

    def where(self, node):
        """``np.where(c, a, b)`` of scalars (or of elements, in an array expression)."""
        if len(node.args) != 3 or node.keywords:
            raise self.error(node, "np.where(cond, a, b) takes three arguments")
        c, a, b = (self.expr(x) for x in node.args)
        for x, n in zip((c, a, b), node.args):
            if not isinstance(x.type, T.Scalar):
                raise self.error(n, f"{ast.unparse(n)} is an array: np.where of arrays is "
                                    f"elementwise, assign it to an array (out[:] = ...)")
        t = _result_type(a, b)
        return ir.Select(self.convert(c, T.BOOL, node), self.convert(a, t, node),
                         self.convert(b, t, node), type=t, weak=a.weak and b.weak)

    def reduce(self, op, args, node, name):
        """A temporary holding the reduction ``op`` of ``args``' elements, computed by a
        loop nest that goes before the statement."""
        leaves = self.leaves(args[0], [])
        if op == "dot":
            more = self.leaves(args[1], [])
            ra, rb = (max([len(s.axes) for _, s in lv], default=0) for lv in (leaves, more))
            if (ra, rb) != (1, 1):
                raise self.error(node, f"{name}() of arrays with {ra} and {rb} dimensions: "
                                       f"kernels take the dot product of two 1-d arrays")
            leaves += more
        shape = self.shape_of(leaves)
        self.check_shapes(leaves, [(n, None) for n, _ in shape], node, name)
        if not shape:                       # the reduction of a scalar is that scalar
            if op in ("argmin", "argmax"):
                self.expr(args[0])
                return _i(0)
            return self.expr(args[0])
        levels = self.reduce_levels()
        ks = self.loop_vars(node, "k", len(shape), bool(levels))
        if op in ("argmin", "argmax") and any(isinstance(s, Made) for _, s in leaves):
            raise self.error(node, f"{name}() of a matrix product or axis reduction is not "
                                   f"supported in kernels: store that into an array first")
        v = self.element(args[0], leaves, ks)
        et = [v.type]
        if op == "dot":
            w = self.element(args[1], leaves, ks)
            et.append(w.type)
            v = self.binop("*", v, w, node)
        extents = [ln for ln, _ in shape]
        if op in ("argmin", "argmax"):
            return self.arg_reduce(op, v, ks, extents, node, levels)
        return self.reduce_value(op, et, v, ks, extents, node, levels, name)

    def reduce_value(self, op, et, v, ks, extents, node, levels, name=""):
        """A temporary holding the reduction ``op`` of the element ``v`` (of ``et``
        elements: two for np.dot) over the loops of ``ks``."""
        if op == "norm":            # sqrt of the sum of squares, in numpy's float type
            t = T.scalar(np.linalg.norm(np.zeros(1, et[0].dtype)).dtype)
            if v.type.is_complex:
                re, im = complexes.part(v, "real"), complexes.part(copy.deepcopy(v), "imag")
                sq = self.binop("+", self.binop("*", re, copy.deepcopy(re), node),
                                self.binop("*", im, copy.deepcopy(im), node), node)
            else:
                x = self.convert(v, t, node)
                sq = self.binop("*", x, copy.deepcopy(x), node)
            s = self.reduce_value("+", [t], self.convert(sq, t, node), ks, extents, node,
                                  levels, name)
            return ir.Call("sqrt", [s], type=t)
        acc = T.scalar(_numpy_result(op, *et))
        et = " and ".join(map(str, et))
        red = "+" if op == "dot" else op
        if levels:
            OPS[red].check(acc, lambda m: self.error(
                node, f"{name}() of {et} elements in a parallel loop: {m}"))
        return self.reduce_into(red, acc, self.convert(v, acc, node), ks, extents, node,
                                levels, "r")

    def reduce_into(self, op, t, v, ks, extents, node, levels, tag):
        """A temporary of type ``t``: the identity of ``op``, then ``op`` of element
        ``v`` over the loops of ``ks`` (a reduction loop of ``levels``)."""
        identity = {"+": 0, "*": 1, "max": -np.inf, "min": np.inf}[op]
        if t.is_int and op in ("max", "min"):
            info = np.iinfo(t.dtype)
            identity = info.min if op == "max" else info.max
        elif t.is_bool and op in ("max", "min"):
            identity = op == "min"
        acc = self.temp(node, tag, t, ir.Const(identity, type=t))
        into, reductions = acc, []
        if levels:
            self.rid += 1
            into = ir.Var(local_name(acc.name, self.rid, levels[-1]), type=t)
            reductions = [ir.Reduction(op, acc.name, into.name, t, self.rid)]
        nan = {"max": "maximum", "min": "minimum"}.get(op) if t.is_float else None
        new = ir.Call(nan, [copy.deepcopy(into), v], type=t) if nan else \
            combine(op, t, copy.deepcopy(into), v)
        body = [ir.Assign(copy.deepcopy(into), new, line=self.line(node))]
        self.pre += self.nest(ks, extents, body, node, levels, reductions)
        return acc

    def arg_reduce(self, op, v, ks, extents, node, levels):
        """np.argmin/np.argmax: the extreme value, then the first flat index that holds
        it (or holds a NaN, which numpy's extreme is then)."""
        ext = "min" if op == "argmin" else "max"
        et = v.type
        if levels:
            OPS[ext].check(et, lambda m: self.error(node, f"np.{op} of {et} elements in a "
                                                          f"parallel loop: {m}"))
        best = self.reduce_into(ext, et, copy.deepcopy(v), ks, extents, node, levels, "m")
        ks2 = self.loop_vars(node, "j", len(ks), bool(levels))
        swap = {k.name: k2 for k, k2 in zip(ks, ks2)}
        v = _rename(v, swap)
        flat = ks2[0]
        for d in range(1, len(ks2)):
            flat = ir.BinOp("+", ir.BinOp("*", flat, copy.deepcopy(extents[d]),
                                          type=T.INT64), ks2[d], type=T.INT64)
        hit = ir.Compare("==", v, copy.deepcopy(best), type=T.BOOL)
        if et.is_float:
            hit = ir.Logical("||", hit, ir.Call("isnan", [copy.deepcopy(v)], type=T.BOOL),
                             type=T.BOOL)
        first = ir.Select(hit, flat, _i(np.iinfo(np.int64).max), type=T.INT64)
        return self.reduce_into("min", T.INT64, first, ks2, extents, node, levels, "i")

    def reduce_levels(self):
        """The levels of a reduction loop here: () for a sequential one."""
        if not self.is_kernel or "vector" in self.levels or self.nesting:
            return ()
        return ("vector",) if self.levels else ("gang", "worker", "vector")


def _numpy_result(op, t, u=None):
    """The dtype numpy 2 gives the reduction ``op`` of ``t`` elements (np.dot: of ``t``
    and ``u`` elements)."""
    z = np.zeros(1, t.dtype)
    if op == "dot":
        return np.dot(z, np.zeros(1, u.dtype)).dtype
    if op == "+":
        return np.sum(z).dtype
    if op == "*":
        return np.prod(z).dtype
    return t.dtype


def _rename(e, names):
    """A copy of ``e`` with the variables of ``names`` replaced."""
    e = copy.deepcopy(e)
    for n in ir.walk(e):
        if isinstance(n, ir.Var) and n.name in names:
            n.name = names[n.name].name
    return e
