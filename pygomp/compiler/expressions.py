"""Expressions of the kernel front end: constants, names, static values, attributes,
subscripts, operators and conversions (calls are in `calls`)."""
from __future__ import annotations

import ast
import builtins
import copy

import numpy as np

from . import complexes, ir, nonneg
from . import types as T

_UNSET = object()
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
           ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_STATIC_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
               ast.Pow: lambda a, b: a ** b if 0 <= b < 128 else None,
               ast.LShift: lambda a, b: a << b if 0 <= b < 128 else None}
_CALLED = {"//": "floordiv", "%": "mod", "<<": "shl", ">>": "shr"}   # see arith.arith_helpers
_CMPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class Expressions:
    """Mixin of `frontend.Frontend`: the expressions of `frontend.SUPPORTED` but calls."""

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
        return (name in self.arrays or name in self.views or name in self.gone
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
        if v.type.is_complex:
            raise self.error(node, f"{ast.unparse(node)} is complex: compare it (z != 0) to "
                                   f"make a condition")
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
        if isinstance(v, np.generic):       # np.float64 and np.complex128 too: strong
            return ir.Const(v.item(), type=T.scalar(v.dtype))
        if isinstance(v, int):
            if not -2**63 <= v < 2**63:
                raise self.error(node, f"integer constant {v} does not fit in int64")
            return ir.Const(int(v), type=T.INT64, weak=True)
        if isinstance(v, float):
            return ir.Const(v, type=T.FLOAT64, weak=True)
        if isinstance(v, complex):
            return ir.Const(v, type=T.COMPLEX128, weak=True)
        raise self.error(node, f"constant {v!r} of type {type(v).__name__} is not supported "
                               f"in kernels")

    def expr_Name(self, node):
        name = node.id
        if name in self.arrays:
            return copy.deepcopy(self.arrays[name])
        if name in self.views:
            raise self.error(node, f"{name!r} is a strided view: kernels index it, slice "
                                   f"it, compute with it, pass it to helpers and loop "
                                   f"over a 1-d one, not use it as a value of its own")
        found = self.resolve(name)
        if found is not None:
            return ir.Var(found[0], type=self.vtypes[name], weak=name in self.weakvars)
        if name in self.gone:
            raise self.error(node, f"{name!r} is private to the parallel loop at line "
                                   f"{self.gone[name]} and undefined after it")
        v = self.static(node)
        if v is _UNSET:
            raise self.error(node, f"name {name!r} is not defined")
        return self.global_value(v, name, node)

    def global_value(self, v, name, node):
        if isinstance(v, (bool, int, float, complex, np.generic)):
            return self.const(v, node)
        if isinstance(v, np.ndarray):
            raise self.error(node, f"global array {name!r}: pass arrays to a kernel as "
                                   f"arguments")
        raise self.error(node, f"{name!r} ({type(v).__name__}) cannot be used as a value in "
                               f"a kernel")

    def expr_Attribute(self, node):
        if id(node.value) in self.elems and node.attr in ("real", "imag"):
            return complexes.part(self.expr(node.value), node.attr)   # an element's
        if self.viewish(node.value) and node.attr in ("ndim", "size"):
            return self.view_attribute(node)
        arr = self.array_of(node.value)
        if arr is not None:
            if node.attr == "ndim":
                return _i(arr.type.ndim)
            if node.attr == "size":
                out = None
                for k in range(arr.type.ndim):
                    d = self.shape(arr, k)
                    out = d if out is None else ir.BinOp("*", out, d, type=T.INT64)
                return out
            raise self.error(node, f"array attribute .{node.attr}: use .shape[k], .size or "
                                   f".ndim")
        v = self.static(node)
        if v is _UNSET and node.attr in ("real", "imag"):
            x = self.expr(node.value)
            if isinstance(x.type, T.Scalar):
                return complexes.part(x, node.attr)
        if v is _UNSET:
            raise self.error(node, f"{ast.unparse(node)} is not supported in kernels")
        return self.global_value(v, ast.unparse(node), node)

    def shape(self, arr, k):
        """Extent k of an array or view, as an int64 expression."""
        root, p = (arr.array, len(arr.prefix)) if isinstance(arr, ir.View) else (arr, 0)
        if root.type.shape:
            return _i(root.type.shape[k + p])
        if isinstance(root, ir.FieldRef) and k + p >= root.nrec:    # a sub-array's
            return _i(root.sub[k + p - root.nrec])
        return ir.Shape(copy.deepcopy(root), k + p, type=T.INT64)

    def array_of(self, node):
        """The array (an ArrayRef, or a View for a partial index) ``node`` denotes, or
        None when it is not an array."""
        if isinstance(node, ast.Name):
            a = self.arrays.get(node.id)
            return None if a is None else copy.deepcopy(a)
        if isinstance(node, ast.Subscript) and not _is_shape(node.value):
            base = self.array_of(node.value)
            if base is not None:
                r = self.subscript(node.value, _indices(node), node)
                return r if isinstance(r, ir.View) else None
        return None

    def rank_of(self, v, n):
        """For an array value ``v`` written ``n``: its array's rank and the indices
        given, when ``n`` indexes it (``x[i]`` of a 2-d ``x``)."""
        if not (isinstance(v, ir.View) and isinstance(n, ast.Subscript)):
            return ""
        root = n
        while isinstance(root, ast.Subscript):
            root = root.value
        k = len(v.prefix)
        return (f": {ast.unparse(root)} has {dims(v.array.type.ndim)} and "
                f"{ast.unparse(n)} gives {k} ind{'ex' if k == 1 else 'ices'}")

    def expr_Subscript(self, node):
        v = node.value
        if isinstance(v, ast.Call):
            self.expr(v)                # its own error, when it is refused
        if _is_shape(v) and self.viewish(v.value):
            return self.view_attribute(node)
        if _is_shape(v):
            arr = self.array_of(v.value)
            if arr is not None:
                nd = arr.type.ndim
                k = self.static(node.slice)
                if not isinstance(k, int) or not -nd <= k < nd:
                    raise self.error(node, f"{ast.unparse(node)}: {ast.unparse(v.value)} "
                                           f"has {dims(nd)}; the index of .shape must be "
                                           f"a constant in range")
                return self.shape(arr, k % nd)
        return self.subscript(v, _indices(node), node)

    def subscript(self, arr_node, idx_nodes, node):
        """``arr_node[idx...]``: an element (Index), or a View when indices are left."""
        if self.viewish(arr_node):
            return self.view_element(arr_node, idx_nodes, node)
        arr = self.array_of(arr_node)
        if arr is None:
            if isinstance(arr_node, ast.Name) and not self.is_local(arr_node.id) \
                    and isinstance(self.static(arr_node), np.ndarray):
                raise self.error(node, f"global array {arr_node.id!r}: pass arrays to a "
                                       f"kernel as arguments")
            raise self.error(node, f"{ast.unparse(arr_node)} is not an array")
        root, prefix = (arr.array, arr.prefix) if isinstance(arr, ir.View) else (arr, [])
        t = root.type
        if any(isinstance(i, ast.Slice) for i in idx_nodes):
            raise self.error(node, f"{ast.unparse(node)} is an array: kernels take slices "
                                   f"in array assignments (v[1:] = ...), numpy reductions "
                                   f"(np.sum(x[1:])) and bound to a name (y = x[1:]), "
                                   f"not as values of their own")
        if len(prefix) + len(idx_nodes) > t.ndim:
            raise self.error(node, f"{ast.unparse(arr_node)} has "
                                   f"{dims(t.ndim - len(prefix))} and the kernel indexes "
                                   f"it with {len(idx_nodes)}")
        out = list(prefix)
        for i in idx_nodes:
            out.append(self.index(i, self.shape(root, len(out))))
        if isinstance(t.elem, T.Record):
            raise self.whole_record(node, root)                 # records.py
        if len(out) == t.ndim:
            return ir.Index(root, out, type=t.elem, fixed=len(prefix))
        rest = T.Array(t.elem, t.ndim - len(out), t.space, t.shape[len(out):])
        return ir.View(root, out, type=rest)

    def index(self, i, n):
        """Index ``i`` of an axis of extent ``n`` (int64 IR): numpy counts a negative
        one from the end (unless ``wraparound=False``)."""
        lit = self.static(i) if isinstance(i, (ast.Constant, ast.UnaryOp)) else _UNSET
        wrap = self.registry.wraparound
        if wrap and isinstance(lit, int) and not isinstance(lit, bool) and lit < 0:
            return ir.BinOp("+", n, _i(lit), type=T.INT64)
        e = self.int_expr(i)
        lo = self.lower_bound(e)
        if wrap and (lo is None or lo < 0) and not self.nonnegative(e):
            e = ir.Select(ir.Compare("<", e, _i(0), type=T.BOOL),
                          ir.BinOp("+", copy.deepcopy(e), n, type=T.INT64),
                          copy.deepcopy(e), type=T.INT64)
        return e

    def nonnegative(self, e):
        """Whether `nonneg` proves ``e >= 0`` from the loops and assignments around it."""
        lo = nonneg.lower(e, self.facts, self.lower_bound)
        return lo is not None and lo >= 0

    def lower_bound(self, e):
        """A lower bound of an int64 index expression, or None when unknown."""
        if isinstance(e, ir.Const):
            return int(e.value)
        if isinstance(e, (ir.Shape, ir.Builtin)):
            return 0
        if isinstance(e.type, T.Scalar) and (e.type.is_bool or e.type.name.startswith("u")):
            return 0
        if isinstance(e, ir.Var):
            return self.bounds.get(e.name)
        if isinstance(e, ir.Cast) and e.operand.type.is_int:
            lo = self.lower_bound(e.operand)
            return lo if lo is not None and lo >= 0 else None
        if isinstance(e, ir.BinOp) and e.op in "+-*":
            a = self.lower_bound(e.left)
            if e.op == "-":
                return a - e.right.value if a is not None and isinstance(e.right, ir.Const) \
                    else None
            b = self.lower_bound(e.right)
            if a is None or b is None:
                return None
            return a + b if e.op == "+" else (a * b if a >= 0 and b >= 0 else None)
        if isinstance(e, ir.Call) and e.fn in ("floordiv", "mod") \
                and isinstance(e.args[1], ir.Const) and e.args[1].value > 0:
            a = self.lower_bound(e.args[0])
            return 0 if e.fn == "mod" else (a // e.args[1].value if a is not None else None)
        if isinstance(e, ir.Call) and e.fn in ("floordiv", "mod") and e.type.is_int:
            # x % d has the sign of d (0 when d is 0); x // d >= 0 when both are
            a, d = (self.lower_bound(x) for x in e.args)
            if d is not None and d >= 0 and (e.fn == "mod" or a is not None and a >= 0):
                return 0
        if isinstance(e, ir.Call) and e.fn in ("min", "max", "minimum", "maximum"):
            a, b = self.lower_bound(e.args[0]), self.lower_bound(e.args[1])
            if "min" in e.fn:
                return None if a is None or b is None else min(a, b)
            return max(x for x in (a, b, -1) if x is not None) if (a, b) != (None, None) \
                else None
        return None

    def expr_BinOp(self, node):
        if isinstance(node.op, ast.MatMult):
            if self.computed(node) is not None:         # 2-d: an array (computed.py)
                raise self.error(node, f"{ast.unparse(node)} is an array: a kernel stores "
                                       f"it into a sub-array (y[:] = {ast.unparse(node)}); "
                                       f"it makes no array of its own")
            return self.reduce("dot", [node.left, node.right], node, "@")
        op = _BINOPS[type(node.op)]
        a, b = self.expr(node.left), self.expr(node.right)
        for x, n in ((a, node.left), (b, node.right)):
            if not isinstance(x.type, T.Scalar):
                raise self.error(n, f"{ast.unparse(n)} is an array{self.rank_of(x, n)}: a "
                                    f"kernel computes array arithmetic only into a "
                                    f"sub-array (out[:] = ...); it makes no array of its "
                                    f"own")
        return self.binop(op, a, b, node)

    def binop(self, op, a, b, node):
        t = _result_type(a, b)
        if t.is_complex:
            return complexes.binop(self, op, a, b, t, node)
        weak = a.weak and b.weak
        if op in ("<<", ">>", "&", "|", "^"):
            if t.is_float:
                raise self.error(node, f"operator {op} needs integers, not {t}")
            if t.is_bool and op in ("<<", ">>"):
                t = T.INT64
        elif t.is_bool:
            t = T.INT64
        ca, cb = self.convert(a, t, node), self.convert(b, t, node)
        if op == "/":
            if not t.is_float:
                t = T.FLOAT64
            return ir.BinOp("/", self.convert(a, t, node), self.convert(b, t, node),
                            type=t, weak=weak)
        if op == "**":          # small literal powers multiply (exactly pow's for floats)
            if isinstance(b, ir.Const) and isinstance(b.value, int) and not isinstance(
                    b.value, bool) and 0 <= b.value <= (2 if t.is_float else 4):
                ta = a.type if not a.weak else t
                if ta.is_bool:
                    ta = T.INT64
                out = _i(1) if b.value == 0 else None
                for _ in range(b.value):
                    out = self.convert(a, ta, node) if out is None else \
                        ir.BinOp("*", out, self.convert(a, ta, node), type=ta)
                return self.convert(out, ta, node) if b.value == 0 else out
            if t.is_int:
                return ir.Call("ipow", [ca, cb], type=t, weak=weak)
            return ir.Call("pow", [ca, cb], type=t)
        if op in _CALLED:
            return ir.Call(_CALLED[op], [ca, cb], type=t, weak=weak)
        return ir.BinOp(op, ca, cb, type=t, weak=weak)

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if not isinstance(v.type, T.Scalar):
            raise self.error(node, "unary operators need a scalar")
        if isinstance(node.op, ast.Not):
            if v.type.is_complex:
                return complexes.compare(self, "==", v, self.const(0j, node), v.type, node)
            return ir.Unary("!", v, type=T.BOOL)
        if isinstance(node.op, ast.Invert):
            if v.type.is_float or v.type.is_complex:
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
            if t.is_complex:
                c = complexes.compare(self, cop, left, right, t, node)
                out = c if out is None else ir.Logical("&&", out, c, type=T.BOOL)
                left = right
                continue
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
        if v.type.is_complex and not t.is_complex:
            raise self.error(node, f"a {v.type} value cannot become {t}: take its .real, "
                                   f".imag or abs()")
        if isinstance(v, ir.Const) and v.weak:
            if t.is_complex:
                return ir.Const(complex(v.value), type=t)
            if t.is_bool:
                return ir.Const(bool(v.value), type=t)
            if t.is_int and isinstance(v.value, float):
                return ir.Cast(v, type=t)
            return ir.Const(float(v.value) if t.is_float else int(v.value), type=t)
        return ir.Cast(v, type=t)


def _indices(node):
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def is_transpose(node):
    """Whether ``node`` is ``a.T``."""
    return isinstance(node, ast.Attribute) and node.attr == "T"


def _is_shape(node):
    return isinstance(node, ast.Attribute) and node.attr == "shape"


def _result_type(a, b):
    if a.weak and not b.weak:
        return T.promote_weak(b.type, a.type)
    if b.weak and not a.weak:
        return T.promote_weak(a.type, b.type)
    return T.promote(a.type, b.type)


def _i(n):
    return ir.Const(int(n), type=T.INT64)


def dims(n):
    return f"{n} dimension{'s' if n != 1 else ''}"
