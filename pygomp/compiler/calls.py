"""Calls in kernels: omp builtins, conversions, min/max/abs, the math table, and
declare_target helpers (compiled once per signature of argument types)."""
from __future__ import annotations

import ast
import builtins

import numpy as np

from . import complexes, ir, lang, precheck
from . import types as T
from .callables import (ABS, ATOMICS, BUILTINS, COMPLEX, COMPLEX_METHODS, MATH,
                        MINMAX)
from .expressions import _UNSET, _i, _result_type

class Calls:
    """Mixin of `frontend.Frontend`: the calls of `frontend.SUPPORTED`."""

    def no_args(self, call, n):
        if len(call.args) != n or call.keywords:
            raise self.error(call, f"{ast.unparse(call.func)}() takes {n} positional arguments")

    def expr_Call(self, node):
        f = node.func
        if isinstance(f, ast.Lambda):
            raise self.error(node, precheck.LAMBDA)
        if isinstance(f, ast.Attribute) and f.attr in COMPLEX_METHODS and not node.args \
                and self.callee(f) is _UNSET:       # z.conjugate()
            z = self.expr(f.value)
            if isinstance(z.type, T.Scalar):
                return complexes.call(self, COMPLEX_METHODS[f.attr], [z], node)
        made = self.array_call(node)        # numpy reductions, np.where (arrays.py)
        if made is not None:
            return made
        obj = self.callee(node.func)
        if obj is _UNSET:
            raise self.error(node, f"{ast.unparse(node.func)} is not a function a kernel can "
                                   f"call")
        if node.keywords:
            raise self.error(node, f"{ast.unparse(node.func)}(): keyword arguments are not "
                                   f"supported here")
        if obj in BUILTINS:
            self.no_args(node, 0)
            return ir.Builtin(BUILTINS[obj], type=T.INT64)
        if isinstance(obj, lang.DeclareTarget):
            return self.helper_call(obj, node)
        if obj in ATOMICS:
            if node is not getattr(self, "atomic_call", None):
                raise self.error(node, f"{ast.unparse(node.func)}(): call it as a statement or "
                                       f"assign its value (the old element) to a variable: "
                                       f"old = {ast.unparse(node.func)}(...)")
            return self.atomic(node, capture=True)
        if obj is lang.barrier:
            raise self.error(node, f"{ast.unparse(node.func)}() is a statement, not a value")
        if obj is builtins.len:
            self.no_args(node, 1)
            a = self.expr(node.args[0])
            if not isinstance(a, (ir.ArrayRef, ir.View)):
                raise self.error(node, "len() takes an array")
            return self.shape(a, 0)
        if not _known(obj):             # what the decoration refuses in it comes first
            inner = next(filter(None, map(precheck.refused_in, node.args)), None)
            if inner is not None:
                raise self.error(inner, precheck.refusal(inner))
            raise self.error(node, _refused(ast.unparse(node.func), obj))
        if _is_type(obj, np.number) and not _is_type(obj, np.complexfloating):
            folded = self.fold(obj, node)       # np.uint64(0x9E3779B97F4A7C15)
            if folded is not None:
                return folded
        args = [self.expr(a) for a in node.args]
        for a, n in zip(args, node.args):
            if not isinstance(a.type, T.Scalar):
                raise self.error(n, _array_argument(ast.unparse(n), node, obj))
        if obj is complex or (isinstance(obj, type) and issubclass(obj, np.complexfloating)):
            return complexes.make(self, args, None if obj is complex else T.scalar(obj), node)
        if any(a.type.is_complex for a in args):
            return self.complex_call(obj, args, node)
        if obj in (int, float, bool) or (isinstance(obj, type) and issubclass(obj, np.generic)):
            if len(args) != 1:
                raise self.error(node, f"{ast.unparse(node.func)}() takes one argument")
            try:
                t = T.scalar(obj)
            except TypeError as e:
                raise self.error(node, str(e)) from None
            if t.is_bool:
                return ir.Compare("!=", args[0], self.convert(_i(0), args[0].type, node),
                                  type=T.BOOL)
            return ir.Cast(args[0], type=t, weak=obj in (int, float))    # Python's: weak
        if obj in MINMAX:
            if len(args) < 2 or (len(args) > 2 and obj not in (builtins.min, builtins.max)):
                raise self.error(node, f"{ast.unparse(node.func)}() takes two scalars "
                                       f"(min and max: two or more) in a kernel")
            out = args[0]
            for b in args[1:]:
                t = _result_type(out, b)
                out = ir.Call(MINMAX[obj], [self.convert(out, t, node),
                                            self.convert(b, t, node)], type=t,
                              weak=out.weak and b.weak)
            return out
        if any(obj is f for f in ABS):
            self.no_args(node, 1)
            t = T.INT64 if args[0].type.is_bool else args[0].type
            return ir.Call("abs", [self.convert(args[0], t, node)], type=t, weak=args[0].weak)
        try:
            entry = MATH.get(obj)
        except TypeError:
            entry = None
        if entry is not None:
            name, kind = entry
            if not args:
                raise self.error(node, f"{ast.unparse(node.func)}() needs arguments")
            typed = [a.type for a in args if not a.weak]
            t = typed[0] if typed else T.FLOAT64
            for x in typed[1:]:
                t = T.promote(t, x)
            if not t.is_float:
                t = T.FLOAT64
            call = ir.Call(name, [self.convert(a, t, node) for a in args], type=t)
            if kind == "i":
                return ir.Cast(call, type=T.INT64)
            if kind == "b":
                call.type = T.BOOL
            return call
        return complexes.call(self, COMPLEX[obj], args, node)

    def fold(self, obj, node):
        """A numpy scalar type called on a constant: that constant, of that type (numpy's
        error when it does not fit); None when the argument is not a constant."""
        if len(node.args) != 1 or self.is_local_expr(node.args[0]):
            return None
        v = self.static(node.args[0])
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return None
        try:
            return self.const(obj(v), node)
        except (OverflowError, ValueError) as e:
            raise self.error(node, f"{ast.unparse(node)}: {e}") from None

    def complex_call(self, obj, args, node):
        """A call with a complex argument: abs, np.conj, np.exp, np.sqrt, ..."""
        name = ast.unparse(node.func)
        if any(obj is f for f in ABS):
            return complexes.call(self, "abs", args, node)
        if _hashable(obj) and obj in COMPLEX:
            return complexes.call(self, COMPLEX[obj], args, node)
        if obj in (int, float, bool) or obj in MINMAX or (
                isinstance(obj, type) and issubclass(obj, np.generic)):
            raise self.error(node, f"{name}() of a complex number: take its .real, .imag or "
                                   f"abs() first")
        entry = MATH.get(obj) if _hashable(obj) else None
        if entry is not None and str(getattr(obj, "__module__", "")) != "math" \
                and len(args) == 1:             # np.exp, np.sqrt (math's take reals)
            return complexes.call(self, entry[0], args, node)
        raise self.error(node, f"{name}() of a complex number is not supported in kernels "
                               f"(complex: abs, np.conj, np.exp, np.sqrt, .real, .imag)")

    def helper_call(self, helper, node):
        fn, args = self.helper(helper, node)
        if fn.rets is not None:
            raise self.error(node, f"{ast.unparse(node.func)} returns a tuple: unpack it "
                                   f"(a, b = {ast.unparse(node)})")
        return ir.HelperCall(fn, args, type=fn.ret)

    def helper(self, helper, node):
        """(the helper's specialization for the arguments of call ``node``, the
        arguments in IR)."""
        nodes = list(node.args) + [ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
                                   for name in getattr(helper, "free", ())]  # a nested
        args, types_, weak = [], [], []         # function's reads follow its arguments
        for n in nodes:
            if self.binds_view(n):              # a strided view: its array and bounds
                t, parts = self.view_argument(n)
                args += parts
                types_.append(t)
                weak.append(False)
                continue
            a = self.expr(n)
            if isinstance(getattr(a, "array", a), ir.FieldRef):
                raise self.error(n, f"{ast.unparse(n)} is a field of a record array: "
                                    f"passing a field to a helper is not supported yet "
                                    f"(pass the record array)")
            args.append(a)
            types_.append(a.type)
            weak.append(a.weak)                 # a Python scalar stays one in the helper
        weak = tuple(weak)
        key = (helper, tuple(types_), weak)
        fn = self.registry.done.get(key)
        if fn is None:
            if key in self.registry.busy:
                raise self.error(node, f"recursive call of {helper.__name__}: recursion is "
                                       f"not supported in kernels")
            self.registry.busy.add(key)
            try:
                name = f"{helper.__name__}__{len(self.registry.order)}"
                fe = type(self)(helper.py_func, types_, is_kernel=False,
                                registry=self.registry, name=name,
                                local=getattr(helper, "node", None) and helper)
                for p, w in zip(fe.node.args.args, weak):
                    fe.mark_weak(p.arg, w)
                fn = fe.build()
            finally:
                self.registry.busy.discard(key)
            self.registry.done[key] = fn
            self.registry.order.append(fn)
        return fn, args


def _hashable(obj):
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _is_type(obj, base):
    return isinstance(obj, type) and issubclass(obj, base)


def _known(obj):
    """Whether ``obj`` is a conversion or a math function kernels compute."""
    if obj in (int, float, bool, complex) or _is_type(obj, np.generic):
        return True
    return _hashable(obj) and (obj in MINMAX or obj in MATH or obj in COMPLEX
                               or any(obj is f for f in ABS))


def _array_argument(arg, call, obj):
    """Why an array argument ``arg`` of a scalar function is refused."""
    name = ast.unparse(call.func)
    if _numpy(obj):
        return (f"{arg} is an array: kernels compute {name}() of arrays elementwise only "
                f"into a sub-array (out[:] = {ast.unparse(call)}); a kernel makes no "
                f"array of its own from an expression")
    return f"{arg} is an array; {name}() takes scalars (as it does in Python)"


def _numpy(obj):
    return str(getattr(obj, "__module__", "")).split(".")[0] == "numpy" \
        or isinstance(obj, np.ufunc)


def _refused(name, obj):
    """Why a call of ``obj`` (written ``name``) is refused."""
    if _numpy(obj):
        return f"{name} is not supported in kernels (yet)"
    if isinstance(obj, type):
        return f"{name} is a class: kernels cannot create objects"
    return (f"{name} ({type(obj).__name__}) cannot be called in a kernel; decorate "
            f"helpers with @omp.declare_target")
