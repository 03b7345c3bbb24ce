"""Expressions of the kernel front end: constants, names, static values, attributes,
subscripts, operators and conversions (calls are in `calls`)."""
from __future__ import annotations

import ast
import builtins

import numpy as np

from . import ir
from . import types as T

_UNSET = object()
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
           ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_STATIC_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
               ast.Pow: lambda a, b: a ** b if 0 <= b < 128 else None,
               ast.LShift: lambda a, b: a << b if 0 <= b < 128 else None}
_CMPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class Expressions:
    """Mixin of `frontend.Frontend`: the ``expr_*`` methods but ``expr_Call``."""

    # -- static values (globals, modules, constants) ------------------------------------
    def static(self, node):
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            return getattr(builtins, node.id, _UNSET)
        if isinstance(node, ast.Attribute):
            base = self.static(node.value)
            return _UNSET if base is _UNSET else getattr(base, node.attr, _UNSET)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            vals = [self.static(e) for e in node.elts]
            return _UNSET if _UNSET in vals else tuple(vals)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.static(node.operand)
            return -v if isinstance(v, (int, float)) else _UNSET
        if isinstance(node, ast.BinOp) and type(node.op) in _STATIC_OPS:
            a, b = self.static(node.left), self.static(node.right)
            if isinstance(a, int) and isinstance(b, int) and not self.is_local_expr(node):
                try:
                    return _STATIC_OPS[type(node.op)](a, b)
                except ArithmeticError:
                    return _UNSET
        return _UNSET

    def is_local_expr(self, node):
        return any(isinstance(n, ast.Name) and self.is_local(n.id) for n in ast.walk(node))

    def is_local(self, name):
        return (name in self.arrays or name in self.gone
                or any(name in s.names or name in s.reductions for s in self.scopes))

    def callee(self, node):
        """The Python object a call's function names, when it is not a local."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and self.is_local(root.id):
            return _UNSET
        return self.static(node)

    # -- expressions ---------------------------------------------------------------
    def cond(self, node):
        v = self.expr(node)
        if not isinstance(v.type, T.Scalar):
            raise self.error(node, "a condition must be a scalar")
        return v

    def int_expr(self, node):
        v = self.expr(node)
        if not (isinstance(v.type, T.Scalar) and (v.type.is_int or v.type.is_bool)):
            raise self.error(node, f"{ast.unparse(node)} must be an integer, not {v.type}")
        return self.convert(v, T.INT64, node)

    def expr_Constant(self, node):
        return self.const(node.value, node)

    def const(self, v, node):
        if isinstance(v, (bool, np.bool_)):
            return ir.Const(bool(v), type=T.BOOL, weak=True)
        if isinstance(v, (int, np.integer)) and not isinstance(v, np.integer):
            if not -2**63 <= v < 2**63:
                raise self.error(node, f"integer constant {v} does not fit in int64")
            return ir.Const(int(v), type=T.INT64, weak=True)
        if isinstance(v, float):
            return ir.Const(v, type=T.FLOAT64, weak=True)
        if isinstance(v, np.generic):
            t = T.scalar(v.dtype)
            return ir.Const(v.item(), type=t)
        raise self.error(node, f"constant {v!r} of type {type(v).__name__} is not supported "
                               f"in kernels")

    def expr_Name(self, node):
        name = node.id
        if name in self.arrays:
            c, t = self.arrays[name]
            return ir.ArrayRef(c, type=t)
        found = self.resolve(name)
        if found is not None:
            return ir.Var(found[0], type=self.vtypes[name])
        if name in self.gone:
            raise self.error(node, f"{name!r} is private to the parallel loop at line "
                                   f"{self.gone[name]} and undefined after it")
        v = self.static(node)
        if v is _UNSET:
            raise self.error(node, f"name {name!r} is not defined")
        return self.global_value(v, name, node)

    def global_value(self, v, name, node):
        if isinstance(v, (bool, int, float, np.generic)):
            return self.const(v, node)
        if isinstance(v, np.ndarray):
            raise self.error(node, f"global array {name!r}: pass arrays to a kernel as "
                                   f"arguments")
        raise self.error(node, f"{name!r} ({type(v).__name__}) cannot be used as a value in "
                               f"a kernel")

    def expr_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.arrays:
            c, t = self.arrays[node.value.id]
            if node.attr == "ndim":
                return _i(t.ndim)
            if node.attr == "size":
                out = None
                for k in range(t.ndim):
                    d = self.shape(ir.ArrayRef(c, type=t), k)
                    out = d if out is None else ir.BinOp("*", out, d, type=T.INT64)
                return out
            raise self.error(node, f"array attribute .{node.attr}: use .shape[k], .size or "
                                   f".ndim")
        v = self.static(node)
        if v is _UNSET:
            raise self.error(node, f"{ast.unparse(node)} is not supported in kernels")
        return self.global_value(v, ast.unparse(node), node)

    def shape(self, ref, k):
        if ref.type.shape:
            return _i(ref.type.shape[k])
        return ir.Shape(ref, k, type=T.INT64)

    def expr_Subscript(self, node):
        v = node.value
        if (isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name)
                and v.value.id in self.arrays):
            c, t = self.arrays[v.value.id]
            k = self.static(node.slice)
            if not isinstance(k, int) or not -t.ndim <= k < t.ndim:
                raise self.error(node, f"{ast.unparse(node)}: the index of .shape must be a "
                                       f"constant in range for a {t.ndim}-d array")
            return self.shape(ir.ArrayRef(c, type=t), k % t.ndim)
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return self.subscript(v, idx, node)

    def subscript(self, arr_node, idx_nodes, node):
        if not (isinstance(arr_node, ast.Name) and arr_node.id in self.arrays):
            if isinstance(arr_node, ast.Name) and not self.is_local(arr_node.id) \
                    and isinstance(self.static(arr_node), np.ndarray):
                raise self.error(node, f"global array {arr_node.id!r}: pass arrays to a "
                                       f"kernel as arguments")
            raise self.error(node, f"{ast.unparse(arr_node)} is not an array")
        c, t = self.arrays[arr_node.id]
        ref = ir.ArrayRef(c, type=t)
        if any(isinstance(i, ast.Slice) for i in idx_nodes):
            raise self.error(node, "slices are not supported in kernels; index every "
                                   "dimension and loop")
        if len(idx_nodes) != t.ndim:
            raise self.error(node, f"{arr_node.id} is {t.ndim}-d and gets {len(idx_nodes)} "
                                   f"indices: index every dimension")
        out = []
        for k, i in enumerate(idx_nodes):
            lit = self.static(i) if isinstance(i, (ast.Constant, ast.UnaryOp)) else _UNSET
            if isinstance(lit, int) and not isinstance(lit, bool) and lit < 0:
                out.append(ir.BinOp("+", self.shape(ref, k), _i(lit), type=T.INT64))
            else:
                out.append(self.int_expr(i))
        return ir.Index(ref, out, type=t.elem)

    def expr_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported")
        a, b = self.expr(node.left), self.expr(node.right)
        for x, n in ((a, node.left), (b, node.right)):
            if not isinstance(x.type, T.Scalar):
                raise self.error(n, f"{ast.unparse(n)} is not a scalar (array arithmetic is "
                                    f"not supported in kernels; loop over elements)")
        return self.binop(op, a, b, node)

    def binop(self, op, a, b, node):
        t = _result_type(a, b)
        weak = a.weak and b.weak
        if op in ("<<", ">>", "&", "|", "^"):
            if t.is_float:
                raise self.error(node, f"operator {op} needs integers, not {t}")
            if t.is_bool and op in ("<<", ">>"):
                t = T.INT64
        elif t.is_bool:
            t = T.INT64
        if op == "/":
            if not t.is_float:
                t = T.FLOAT64
            return ir.BinOp("/", self.convert(a, t, node), self.convert(b, t, node),
                            type=t, weak=weak)
        if op == "**":
            if isinstance(b, ir.Const) and isinstance(b.value, int) and 0 <= b.value <= 4 \
                    and not isinstance(b.value, bool):
                ta = a.type if not a.weak else t
                if ta.is_bool:
                    ta = T.INT64
                out = _i(1) if b.value == 0 else None
                for _ in range(b.value):
                    out = self.convert(a, ta, node) if out is None else \
                        ir.BinOp("*", out, self.convert(a, ta, node), type=ta)
                return self.convert(out, ta, node) if b.value == 0 else out
            if not t.is_float:
                t = T.FLOAT64
            return ir.Call("pow", [self.convert(a, t, node), self.convert(b, t, node)], type=t)
        if op == "//" and t.is_float:
            q = ir.BinOp("/", self.convert(a, t, node), self.convert(b, t, node), type=t)
            return ir.Call("floor", [q], type=t)
        if op == "%" and t.is_float:
            return ir.Call("fmod", [self.convert(a, t, node), self.convert(b, t, node)], type=t)
        cop = "/" if op == "//" else op
        return ir.BinOp(cop, self.convert(a, t, node), self.convert(b, t, node), type=t,
                        weak=weak)

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if not isinstance(v.type, T.Scalar):
            raise self.error(node, "unary operators need a scalar")
        if isinstance(node.op, ast.Not):
            return ir.Unary("!", v, type=T.BOOL)
        if isinstance(node.op, ast.Invert):
            if v.type.is_float:
                raise self.error(node, "~ needs an integer")
            return ir.Unary("!" if v.type.is_bool else "~", v, type=v.type, weak=v.weak)
        op = "-" if isinstance(node.op, ast.USub) else "+"
        t = T.INT64 if v.type.is_bool else v.type
        if isinstance(v, ir.Const) and op == "-":
            return ir.Const(-v.value, type=t, weak=v.weak)
        return ir.Unary(op, self.convert(v, t, node), type=t, weak=v.weak)

    def expr_Compare(self, node):
        out, left = None, self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            cop = _CMPS.get(type(op))
            if cop is None:
                raise self.error(node, f"comparison {type(op).__name__} is not supported")
            right = self.expr(right_node)
            t = _result_type(left, right)
            c = ir.Compare(cop, self.convert(left, t, node), self.convert(right, t, node),
                           type=T.BOOL)
            out = c if out is None else ir.Logical("&&", out, c, type=T.BOOL)
            left = right
        return out

    def expr_BoolOp(self, node):
        op = "&&" if isinstance(node.op, ast.And) else "||"
        vals = [self.cond(v) for v in node.values]
        out = vals[0]
        for v in vals[1:]:
            out = ir.Logical(op, out, v, type=T.BOOL)
        return out

    def expr_IfExp(self, node):
        c = self.cond(node.test)
        a, b = self.expr(node.body), self.expr(node.orelse)
        if not (isinstance(a.type, T.Scalar) and isinstance(b.type, T.Scalar)):
            raise self.error(node, "both branches of a conditional expression must be scalars")
        t = _result_type(a, b)
        return ir.Select(c, self.convert(a, t, node), self.convert(b, t, node), type=t,
                         weak=a.weak and b.weak)

    def convert(self, v, t, node):
        if v.type == t:
            return v
        if isinstance(v.type, T.Array) or isinstance(t, T.Array):
            raise self.error(node, f"cannot use {v.type} as {t}")
        if isinstance(v, ir.Const) and v.weak:
            if t.is_bool:
                return ir.Const(bool(v.value), type=t)
            if t.is_int and isinstance(v.value, float):
                return ir.Cast(v, type=t)
            return ir.Const(float(v.value) if t.is_float else int(v.value), type=t)
        return ir.Cast(v, type=t)


def _result_type(a, b):
    if a.weak and not b.weak:
        return T.promote_weak(b.type, a.type)
    if b.weak and not a.weak:
        return T.promote_weak(a.type, b.type)
    return T.promote(a.type, b.type)


def _i(n):
    return ir.Const(int(n), type=T.INT64)
