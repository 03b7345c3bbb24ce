"""Python forms the front end rewrites into the ones it compiles: ``for`` over an array,
``enumerate`` and ``zip`` (a counted loop that assigns the targets first); tuples
returned (`Tuples`); functions defined in a kernel (`Nested`).

``for v in x``, ``for i, v in enumerate(x, start)`` and ``for a, b in zip(x, range(...))``
take 1-d arrays (elements), n-d arrays (rows, as ``row = A[k]`` binds them) and
``range(...)``, nested (``enumerate(zip(x, y))``); they become ``for k in range(n)`` whose
body first assigns each target, so the targets are plain variables that keep their last
values after the loop, as in Python.  What the iterables use (a range's bounds, a
sub-array) is read once, before the loop.  The parallel loops (`lang`) stay index-based.
"""
from __future__ import annotations

import ast
import builtins
import copy

from . import ir, lang, precheck, records, scoping
from . import types as T
from .callables import ITERATORS, LOOPS
from .expressions import _i



def _load(name, at):
    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), at)


def _call(fn, args, at):
    return ast.copy_location(ast.Call(func=_load(fn, at), args=args, keywords=[]), at)


def _bin(a, op, b, at):
    return ast.copy_location(ast.BinOp(left=a, op=op, right=b), at)


def _const(v, at):
    return ast.copy_location(ast.Constant(v), at)


class Forms:
    """Mixin of `frontend.Frontend`: the loops of this module's docstring."""

    def iterates(self, s):
        """Whether ``for`` statement ``s`` is one of this module's loops."""
        it = s.iter
        if isinstance(it, ast.Call):
            return self.callee(it.func) in ITERATORS
        return self.binds_view(it) or self.array_of(it) is not None

    def iter_for(self, s):
        """The counted loop that runs ``s`` (statements before it, then the loop)."""
        pre = []
        self.tmp = 0
        n, element = self.iterable(s.iter, s, pre)
        k = f"__it{self.line(s)}_{len(self.seqvars)}"
        assigns = self.targets(s.target, element(_load(k, s)), s)
        loop = ast.copy_location(ast.For(
            target=ast.copy_location(ast.Name(id=k, ctx=ast.Store()), s),
            iter=_call("range", [n], s), body=assigns + s.body, orelse=s.orelse,
            type_comment=None), s)
        return self.block(pre) + [self.seq_for(loop)]

    def ast_temp(self, value, s, pre):
        """A name for ``value``, assigned before the loop (a constant stays itself)."""
        if isinstance(value, ast.Constant):
            return value
        self.tmp += 1
        name = f"__itv{self.line(s)}_{len(self.seqvars)}_{self.tmp}"
        pre.append(ast.copy_location(ast.Assign(
            targets=[ast.copy_location(ast.Name(id=name, ctx=ast.Store()), s)],
            value=value), s))
        return _load(name, s)

    def iterable(self, node, s, pre):
        """(length, element(k)) of what a loop iterates over: ASTs, an element being a
        list for enumerate and zip."""
        what = ast.unparse(node)
        if isinstance(node, ast.Call):
            obj = self.callee(node.func)
            if obj is builtins.range:
                return self.range_form(node, s, pre)
            if obj in ITERATORS:
                kw = {k.arg: k.value for k in node.keywords}
                if obj is builtins.enumerate:
                    if not 1 <= len(node.args) + len(kw) <= 2 or set(kw) - {"start"} \
                            or len(node.args) == 2 and kw:
                        raise self.error(s, "enumerate() takes an iterable and a start")
                    n, elem = self.iterable(node.args[0], s, pre)
                    start = self.ast_temp(node.args[1] if len(node.args) == 2 else
                                      kw.get("start", _const(0, s)), s, pre)
                    return n, lambda k: [_bin(k, ast.Add(), start, s), elem(k)]
                if kw or not node.args:
                    raise self.error(s, "zip() takes iterables (no strict=) in kernels")
                parts = [self.iterable(a, s, pre) for a in node.args]
                n = parts[0][0] if len(parts) == 1 else _call("min", [p[0] for p in parts], s)
                return n, lambda k: [e(k) for _, e in parts]
            if obj in LOOPS:
                raise self.error(s, f"{what}: omp loops are index-based; loop over the "
                                    f"index (for i in {what}) and read the elements")
        view = self.binds_view(node)
        if view and self.rank(node) != 1:
            raise self.error(s, f"cannot loop over {what}: kernels loop over the rows of "
                                f"arrays and over 1-d views, not over the rows of a "
                                f"{self.rank(node)}-d view (loop over its indices)")
        if not view and self.array_of(node) is None:
            raise self.error(s, f"cannot loop over {what}: a kernel loop iterates over "
                                f"range(...), an array, enumerate(...), zip(...) or an omp "
                                f"loop (omp.gang, omp.worker, omp.vector, "
                                f"omp.parallel_range)")
        if not isinstance(node, ast.Name):
            node = self.ast_temp(node, s, pre)      # a sub-array: bound once
        return _call("len", [node], s), lambda k: ast.copy_location(
            ast.Subscript(value=node, slice=k, ctx=ast.Load()), s)

    def range_form(self, node, s, pre):
        if node.keywords or not 1 <= len(node.args) <= 3:
            raise self.error(s, "range takes 1 to 3 arguments")
        args = [self.ast_temp(a, s, pre) for a in node.args]
        a, b, c = ([_const(0, s)] + args + [_const(1, s)])[:3] if len(args) == 1 else \
            (args + [_const(1, s)])[:3]
        step = self.static(c)
        if step == 0:
            raise self.error(s, "range() step must not be zero")

        def length(up):
            diff = _bin(_bin(b, ast.Sub(), a, s), ast.Add(), _bin(c, ast.Sub(), _const(
                1 if up else -1, s), s), s)
            return _call("max", [_const(0, s), _bin(diff, ast.FloorDiv(), c, s)], s)
        if isinstance(step, int):
            n = length(step > 0)
        else:
            n = ast.copy_location(ast.IfExp(test=ast.copy_location(ast.Compare(
                left=c, ops=[ast.Gt()], comparators=[_const(0, s)]), s),
                body=length(True), orelse=length(False)), s)
        return n, lambda k: _bin(a, ast.Add(), _bin(k, ast.Mult(), c, s), s)

    def targets(self, target, value, s):
        """The assignments of a loop's target from one element."""
        if isinstance(target, ast.Tuple):
            if not isinstance(value, list) or len(value) != len(target.elts):
                got = len(value) if isinstance(value, list) else "an element, not a tuple"
                raise self.error(s, f"the loop unpacks {len(target.elts)} values and "
                                    f"{ast.unparse(s.iter)} gives {got}")
            return [x for t, v in zip(target.elts, value) for x in self.targets(t, v, s)]
        if isinstance(value, list):
            raise self.error(s, f"{ast.unparse(s.iter)} gives tuples: unpack them "
                                f"(for {', '.join('v%d' % k for k in range(len(value)))} "
                                f"in ...)")
        if not isinstance(target, ast.Name):
            raise self.error(s, "a loop target must be a name or a tuple of names")
        return [ast.copy_location(ast.Assign(targets=[target], value=value), s)]


class Tuples:
    """Mixin of `frontend.Frontend`: ``return a, b`` and ``a, b = helper(...)``.

    A function that returns a tuple stores its values into arrays of one element, one
    per value, that it takes after its parameters (``pyg_ret0``, ...; see `out_params`):
    a kernel's are mapped by the call, which returns their values as a tuple; a
    helper's are private arrays of the caller, which assigns the targets from them."""

    def tuple_return(self, s):
        vals = [self.expr(e) for e in s.value.elts]
        if any(not isinstance(v.type, T.Scalar) for v in vals):
            raise self.error(s, "a kernel or helper may return only scalars (or a tuple "
                                "of scalars)")
        if self.ret not in (None, T.VOID) or (self.ret is T.VOID and self.rets is None):
            raise self.error(s, "return of a tuple and of something else in the same "
                                "function")
        if self.rets is None:
            self.ret, self.rets, self.changed = T.VOID, [v.type for v in vals], True
        elif len(self.rets) != len(vals):
            raise self.error(s, f"returns of {len(self.rets)} and of {len(vals)} values "
                                f"in the same function")
        out = []
        for k, v in enumerate(vals):
            t = T.promote(self.rets[k], v.type)
            if t != self.rets[k]:
                self.rets[k], self.changed = t, True
            name, at = self.out_params()[k]
            out.append(ir.Assign(ir.Index(ir.ArrayRef(name, type=at), [_i(0)], type=t),
                                 self.convert(v, t, s)))
        return out + [ir.Return(None)]

    def out_params(self):
        """[(C name, array type)] of the result arrays (`rets` known)."""
        space, shape = ("global", ()) if self.is_kernel else ("private", (1,))
        return [(f"pyg_ret{k}", T.Array(t, 1, space, shape))
                for k, t in enumerate(self.rets or ())]

    def return_call(self, s):
        """``return helper(...)`` of a helper returning a tuple, else None."""
        obj = self.callee(s.value.func)
        rets = self.helper(obj, s.value)[0].rets if isinstance(obj, lang.DeclareTarget) \
            else None
        if rets is None:
            return None
        names = [f"__rv{self.line(s)}_{k}" for k in range(len(rets))]
        target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names],
                           ctx=ast.Store())
        ret = ast.copy_location(ast.Return(value=ast.Tuple(
            elts=[_load(n, s) for n in names], ctx=ast.Load())), s)
        return self.unpack_call(target, s.value, s) + self.tuple_return(ret)

    def unpack_call(self, target, call, s):
        """``a, b = helper(...)`` of a helper returning a tuple, else None."""
        if not isinstance(self.callee(call.func), lang.DeclareTarget):
            return None
        fn, args = self.helper(self.callee(call.func), call)
        if fn.rets is None:
            return None
        if len(fn.rets) != len(target.elts):
            raise self.error(s, f"{ast.unparse(call.func)} returns {len(fn.rets)} values "
                                f"and the assignment unpacks {len(target.elts)}")
        out, names = [], []
        for k, (_, t) in enumerate(fn.params[-len(fn.rets):]):
            name = f"__ret{self.line(s)}_{k}"
            cname = self.cname(name)
            if name not in self.arrays:
                self.arrays[name] = ir.ArrayRef(cname, type=t)
                self.scopes[-1].bound.add(name)
                self.scopes[-1].decls.append((cname, t))
            out.append(ir.ArrayInit(cname, t))
            args.append(ir.ArrayRef(cname, type=t))
            names.append(name)
        out.append(ir.ExprStmt(ir.HelperCall(fn, args, type=T.VOID)))
        for t, name in zip(target.elts, names):
            out += self.block([ast.copy_location(ast.Assign(targets=[t], value=ast.Subscript(
                value=_load(name, s), slice=_const(0, s), ctx=ast.Load())), s)])
        return out


class Local(lang.DeclareTarget):
    """A function defined in a kernel or helper (a def, or a lambda bound to a name): a
    helper whose parameters are followed by the enclosing function's variables it reads
    (``free``), which each call passes (their values at the call, as in Python)."""

    def __init__(self, outer, node, env, free):
        self.py_func = outer        # its globals, closure cells and source
        self.node, self.env, self.free = node, env, free
        self.__name__ = node.name

    def __repr__(self):
        return f"<function {self.node.name} in {self.py_func.__qualname__}>"


class Nested:
    """Mixin of `frontend.Frontend`: nested ``def`` and ``name = lambda ...``."""

    def stmt_FunctionDef(self, s):
        local = self.locals.get(id(s))
        if local is None:
            a = s.args
            if not precheck.plain(s):
                raise self.error(s, precheck.NESTED)
            own = {p.arg for p in a.args} | set(scoping.assignments(s.body))
            outer = (self.params | set(self.counts)) - {
                n for n, v in self.env.items() if isinstance(v, Local)}
            free = sorted({records.base(n.id) for n in ast.walk(s) if isinstance(n, ast.Name)
                           and isinstance(n.ctx, ast.Load)} & outer - own)
            node = copy.copy(s)
            node.args = copy.copy(a)
            node.args.args = a.args + [ast.arg(arg=n) for n in free]
            local = self.locals[id(s)] = Local(self.fn, node, dict(self.env), free)
        self.env[s.name] = local
        return None

    def lambda_def(self, target, value, s):
        """``name = lambda ...``: a nested function ``name``."""
        node = self.lambdas.get(id(s))
        if node is None:
            node = self.lambdas[id(s)] = ast.copy_location(ast.FunctionDef(
                name=target.id, args=value.args, decorator_list=[], returns=None,
                type_comment=None, body=[ast.copy_location(ast.Return(value=value.body),
                                                           s)]), s)
        return self.stmt_FunctionDef(node)
