"""Statements of the kernel front end: assignments, if, while, break, continue, return."""
from __future__ import annotations

import ast
import builtins
import copy
from dataclasses import fields

import numpy as np

from . import ir, lang, nonneg, precheck
from . import types as T
from .callables import ATOMICS, SCANS
from .expressions import _BINOPS, _UNSET, dims
from .scoping import as_load


class Statements:
    """Mixin of `frontend.Frontend`: the statements of `frontend.SUPPORTED` but ``for``,
    and variables."""

    def stmt_Pass(self, s):
        return None

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return None                                   # a docstring
        if not isinstance(s.value, ast.Call):
            self.expr(s.value)                            # names a refused construct
            raise self.error(s, "an expression statement must be a call")
        obj = self.callee(s.value.func)
        if obj is lang.barrier:
            self.no_args(s.value, 0)
            if not self.is_kernel:
                raise self.error(s, "omp.barrier() is allowed only in kernels")
            if any(lv in ("worker", "vector") for lv in self.levels):
                raise self.error(s, "omp.barrier() inside a worker or vector loop would "
                                    "deadlock; call it between the worker loops of a gang")
            return ir.Barrier()
        if obj is lang.atomic_add:
            return self.atomic(s.value)
        if obj in SCANS:
            self.scan_directive(s)
        if obj is builtins.print:
            return self.print_call(s.value)
        if obj in ATOMICS:
            self.atomic_call = s.value
        return ir.ExprStmt(self.expr(s.value))

    def print_call(self, call):
        """``print(...)`` of scalars and string literals (``sep=`` and ``end=`` strings)."""
        kw = {}
        for k in call.keywords:
            if k.arg not in ("sep", "end") or not (isinstance(k.value, ast.Constant)
                                                   and isinstance(k.value.value, str)):
                raise self.error(call, "print() takes only sep= and end= string literals "
                                       "as keywords")
            kw[k.arg] = k.value.value
        items = []
        for a in call.args:
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                items.append(a.value)
                continue
            if isinstance(a, ast.Starred):
                raise self.error(call, "print(*...) is not supported: name each value")
            v = self.expr(a)
            if not isinstance(v.type, T.Scalar):
                raise self.error(call, f"print() of the array {ast.unparse(a)!r}: print "
                                       f"its elements (print({ast.unparse(a)}[i]))")
            if v.type.is_complex:
                raise self.error(call, f"print() of the complex {ast.unparse(a)!r}: print "
                                       f"its parts ({ast.unparse(a)}.real, .imag)")
            items.append(v)
        return ir.Print(items, **kw)

    def atomic(self, call, capture=False):
        """``omp.atomic_<op>(a, i, ...)``: ir.AtomicAdd for a statement that adds to a type
        atomic_add always took, else an ir.Atomic (whose value is the old element)."""
        op = ATOMICS[self.callee(call.func)]
        self.no_args(call, 4 if op == "cas" else 3)
        arr, idx, *vals = call.args
        target = self.subscript(arr, idx.elts if isinstance(idx, ast.Tuple) else [idx], call)
        t = target.type
        name = f"omp.atomic_{op}"
        if isinstance(target, ir.View):
            raise self.error(call, f"{name} needs an index for every dimension")
        if t.is_bool or t.is_complex:
            raise self.error(call, f"{name} on a {t} array: use an integer or float type")
        field = getattr(target, "array", None)
        if isinstance(field, ir.FieldRef):
            rec = field.rtype.elem
            fname, _, _, _, off = next(m for m in rec.members if m[1] == field.member)
            if off % t.size or rec.size % t.size:
                raise self.error(call, f"{name} on the field {fname!r}, which is not aligned "
                                       f"to its {t.size} bytes in every record (offset "
                                       f"{off}, records of {rec.size} bytes): give the "
                                       f"dtype align=True")
        vals = [self.convert(self.expr(v), t, call) for v in vals]
        if op == "add" and not capture and t in (T.INT32, T.INT64, T.UINT32, T.UINT64,
                                                 T.FLOAT32, T.FLOAT64):
            return ir.AtomicAdd(target, vals[0])
        a = ir.Atomic(op, target, vals[-1], vals[0] if op == "cas" else None, type=t)
        return a if capture else ir.ExprStmt(a)

    def stmt_Assign(self, s):
        if len(s.targets) != 1:
            return [x for t in s.targets for x in self.block([ast.copy_location(
                ast.Assign(targets=[t], value=s.value), s)])]
        target = s.targets[0]
        if isinstance(target, ast.Tuple):
            if isinstance(s.value, ast.Call):
                made = self.unpack_call(target, s.value, s)
                if made is not None:
                    return made
            return self.unpack(target, s.value, s)
        if isinstance(target, ast.Name) and isinstance(s.value, ast.Lambda):
            return self.lambda_def(target, s.value, s)
        if isinstance(target, ast.Name) and isinstance(s.value, ast.Call):
            made = self.array_creation(target, s.value)
            if made is not None:
                return made
            self.atomic_call = s.value      # old = omp.atomic_max(...): the one place
        return self.assign(target, s.value, s)

    def unpack(self, target, value, s):
        """``a, b = x, y`` (through temporaries when they overlap) and ``n, m = a.shape``."""
        arr = self.array_of(value.value) if isinstance(value, ast.Attribute) \
            and value.attr == "shape" else None
        if arr is not None:
            ndim = arr.type.ndim
            if ndim != len(target.elts):
                raise self.error(s, f"{ast.unparse(value.value)} has {dims(ndim)} and the "
                                    f"kernel unpacks {len(target.elts)} from its shape")
            value = ast.Tuple(elts=[ast.copy_location(ast.Subscript(
                value=value, slice=ast.Constant(k), ctx=ast.Load()), s) for k in range(ndim)],
                ctx=ast.Load())
        if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
            raise self.error(s, "tuple assignment needs a tuple of the same length on the "
                                "right (a, b = x, y) or an array's shape")
        names = {n.id for t in target.elts for n in ast.walk(t) if isinstance(n, ast.Name)}
        used = {n.id for v in value.elts for n in ast.walk(v) if isinstance(n, ast.Name)}
        out = []

        def one(t, v):          # an assignment at the top stays at the top (see defs)
            a = ast.copy_location(ast.Assign(targets=[t], value=v), s)
            if id(s) in self.top:
                self.top.add(id(a))
                self.made.append(a)         # kept alive, so its id stays its own
            return self.block([a])
        if names & used:
            temps = []
            for k, v in enumerate(value.elts):
                tmp = ast.copy_location(ast.Name(id=f"__tup{self.line(s)}_{k}", ctx=ast.Store()), s)
                out += one(tmp, v)
                temps.append(ast.copy_location(ast.Name(id=tmp.id, ctx=ast.Load()), s))
            value = ast.Tuple(elts=temps, ctx=ast.Load())
        for t, v in zip(target.elts, value.elts):
            out += one(t, v)
        return out

    def stmt_AnnAssign(self, s):
        if not isinstance(s.target, ast.Name):
            raise self.error(s, "annotations are allowed only on plain variable names")
        try:
            t = T.scalar(self.static(s.annotation))
        except TypeError:
            raise self.error(s, f"unsupported annotation {ast.unparse(s.annotation)}") from None
        name = s.target.id
        if self.fixed.setdefault(name, t) != t:
            raise self.error(s, f"{name!r} is annotated twice with different types")
        self.vtypes[name] = t
        if s.value is None:
            self.define(name, s)
            return None
        return self.assign(s.target, s.value, s)

    def stmt_AugAssign(self, s):
        op = _BINOPS.get(type(s.op))
        if op is None:
            raise self.error(s, "@= is not supported in kernels (numpy's needs square "
                                "matrices): store the product into another array, "
                                "y[:] = A @ x")
        load = ast.copy_location(as_load(s.target), s)
        value = ast.copy_location(ast.BinOp(left=load, op=s.op, right=s.value), s)
        if self.is_array_target(s.target):                     # x[1:] += y (arrays.py)
            return self.array_assign(s.target, value, s, aug=True)
        return self.assign(s.target, value, s)

    def assign(self, target, value_node, s):
        if isinstance(target, ast.Subscript) and self.is_array_target(target):
            return self.array_assign(target, value_node, s)     # x[1:] = ... (arrays.py)
        if isinstance(target, ast.Subscript):
            idx = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
            t = self.subscript(target.value, idx, target)
            v = self.expr(value_node)
            return ir.Assign(t, self.convert(v, t.type, s))
        if isinstance(target, ast.Attribute) and target.attr in ("real", "imag"):
            raise self.error(s, f"cannot assign to {ast.unparse(target)}: a complex number "
                                f"is immutable (as numpy's elements are); assign the whole "
                                f"value, e.g. x[i] = complex(v, x[i].imag)")
        if not isinstance(target, ast.Name):
            raise self.error(s, f"cannot assign to {ast.unparse(target)}")
        name = target.id
        if name in self.seqvars or any(name in sc.loopvars for sc in self.scopes):
            raise self.error(s, f"assignment to the loop variable {name!r}")
        if self.binds_view(value_node):
            return self.bind_view(name, value_node, s)      # a = x[1:] (views.py)
        v = self.expr(value_node)
        if isinstance(v.type, T.Array):
            return self.bind(name, v, s)
        if name in self.arrays:
            raise self.error(s, f"{name!r} is an array: it cannot become a scalar")
        if v.type is T.VOID:
            raise self.error(s, "the called function returns nothing")
        vt = v.type
        fixed = self.fixed.get(name)
        if name in self.params:
            fixed = self.vtypes[name]
        if fixed is not None:
            if not T.can_assign(fixed, vt):
                raise self.error(s, f"cannot assign a {vt} value to {name!r} of type "
                                    f"{fixed}; convert it explicitly (int(...))")
        elif name not in self.vtypes:
            self.vtypes[name] = vt
            self.changed = True
            self.mark_weak(name, v.weak)
        elif name in self.weakvars and not v.weak:     # a Python scalar meets a typed one
            self.mark_weak(name, False)
            self.vtypes[name] = T.promote_weak(vt, self.vtypes[name])
            self.changed = True
        else:
            old = self.vtypes[name]
            if name in self.weakvars:
                if T.promote(old, vt) != old:
                    self.vtypes[name] = T.promote(old, vt)
                    self.changed = True
            elif not (v.weak and T.promote_weak(old, vt) == old):
                new = T.promote(old, vt) if not v.weak else T.promote_weak(old, vt)
                if new != old:
                    if old.is_float and not (new.is_float or new.is_complex):
                        raise self.error(s, f"{name!r} is {old} and gets {vt}")
                    self.vtypes[name] = new
                    self.changed = True
        cname = self.define(name, s)
        value = self.convert(v, self.vtypes[name], s)
        if self.counts.get(name) == 1 and isinstance(value.type, T.Scalar) \
                and value.type.is_int:
            lo = self.lower_bound(value)        # it holds wherever the name is read
            if lo is not None:
                self.bounds[cname] = lo
            if nonneg.stable(value, self.facts):    # until the end of this block
                self.facts[cname] = ("value", value)
            if id(s) in self.top:
                try:
                    self.defs[cname] = self.launch_value(value, s)
                except Exception:   # noqa: BLE001  (not an argument value: no definition)
                    pass
        return ir.Assign(ir.Var(cname, type=self.vtypes[name]), value)

    def mark_weak(self, name, weak):
        """Whether variable ``name`` is weak (NEP 50): until a typed value is assigned
        to it, in any pass."""
        if not weak:
            self.weakvars.discard(name)
            self.strong.add(name)
        elif name not in self.strong:
            self.weakvars.add(name)

    def bind(self, name, arr, s):
        """``name = A`` or ``name = A[i]``: ``name`` denotes that array or sub-array from
        here on; the indices of a sub-array are kept in int64 variables ``name__v<k>``, so
        a later change of ``i`` does not move it (as with a numpy view)."""
        root = arr.array if isinstance(arr, ir.View) else arr
        old = self.arrays.get(name)
        if name in self.params or (name not in self.arrays and self.resolve(name)):
            raise self.error(s, f"{name!r} is a parameter or a scalar; a sub-array needs a "
                                f"new name")
        if old is not None:
            old_root = old.array if isinstance(old, ir.View) else old
            if (old_root.name, type(old), old.type.ndim) != (root.name, type(arr), arr.type.ndim):
                raise self.error(s, f"{name!r} already denotes another array; bind this one "
                                    f"to a new name")
        if old is None:
            self.scopes[-1].bound.add(name)
        if not isinstance(arr, ir.View):
            self.arrays[name] = arr
            return None
        out, prefix = [], []
        for k, e in enumerate(arr.prefix):
            tmp = f"{name}__v{k}"
            self.vtypes[tmp] = T.INT64
            c = self.define(tmp, s)
            out.append(ir.Assign(ir.Var(c, type=T.INT64), e))
            prefix.append(ir.Var(c, type=T.INT64))
        self.arrays[name] = ir.View(root, prefix, type=arr.type)
        return out

    def define(self, name, node):
        """The C name of ``name`` for writing, declaring it in the current scope if new."""
        found = self.resolve(name)
        if found is not None:
            cname, scope = found
            if scope is not self.scopes[-1]:
                raise self.error(node, f"assignment to {name!r} inside the parallel loop at "
                                       f"line {self.scopes[-1].line} races with the other "
                                       f"iterations: list it in reduction= or private=, or "
                                       f"use an array element")
            return cname
        scope = self.scopes[-1]
        cname = self.cname(name)
        scope.names[name] = cname
        self.gone.pop(name, None)
        t = self.vtypes.get(name)
        scope.decls.append((cname, t))
        self.decl_lines.setdefault(cname, self.line(node))
        return cname

    def resolve(self, name):
        for scope in reversed(self.scopes):
            if name in scope.reductions:
                return scope.reductions[name], scope
            if name in scope.names:
                return scope.names[name], scope
        return None

    def array_creation(self, target, call):
        obj = self.callee(call.func)
        if obj not in (np.zeros, np.empty, lang.shared_array):
            return None
        name = target.id
        if self.is_local(name):
            raise self.error(call, f"{name!r} is already defined: an array needs a new name")
        kw = {k.arg: k.value for k in call.keywords}
        if len(call.args) > 2 or set(kw) - {"dtype", "shape"}:
            raise self.error(call, f"{ast.unparse(call.func)}(shape, dtype) takes a shape "
                                   f"and a dtype")
        shape_node = call.args[0] if call.args else kw.get("shape")
        dtype_node = call.args[1] if len(call.args) > 1 else kw.get("dtype")
        if shape_node is None:
            raise self.error(call, f"{ast.unparse(call.func)}() needs a shape")
        dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
        shape = tuple(self.static(d) for d in dims)
        sized = None                                    # run-time extents
        if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                   for d in shape):
            if obj is lang.shared_array or not self.is_kernel:
                raise self.error(call, "the shape of a team-shared array, or of an array "
                                       "in a declare_target helper, must be integer "
                                       "constants (literals or module constants)")
            sized = [self.launch_value(self.int_expr(d), d) for d in dims]
            shape = ()
        elif not all(d > 0 for d in shape):
            raise self.error(call, "the shape of a local array must be positive")
        if dtype_node is None:
            elem = T.FLOAT64
        else:
            try:
                elem = T.scalar(self.static(dtype_node))
            except TypeError as e:
                raise self.error(call, f"bad dtype {ast.unparse(dtype_node)}: {e}") from None
        if obj is lang.shared_array:
            if not self.is_kernel:
                raise self.error(call, "omp.shared_array is allowed only in kernels")
            if any(lv in ("worker", "vector") for lv in self.levels):
                raise self.error(call, "omp.shared_array must be created outside worker and "
                                       "vector loops (once per gang)")
            space = "local"
        else:
            space = "private"
        if sized is not None:
            space = "global"        # a work-item's part of the global private scratch
        t = T.Array(elem, len(dims), space, tuple(int(d) for d in shape))
        cname = self.cname(name)
        if sized is not None:
            self.sizes[cname] = sized
        self.arrays[name] = ir.ArrayRef(cname, type=t)
        self.scopes[-1].bound.add(name)
        self.scopes[-1].decls.append((cname, t))
        self.decl_lines.setdefault(cname, self.line(call))
        return ir.ArrayInit(cname, t, zero=obj is np.zeros)

    def launch_value(self, e, node):
        """``e`` rewritten over the kernel's arguments alone (scalar parameters it never
        assigns, array extents), so that a device can size memory before the launch;
        a function-scope variable assigned once at the top is replaced by its value."""
        for n in ir.walk(e):
            if isinstance(n, ir.Var):
                py = next((p for p in self.params if self.cname(p) == n.name), None)
                if n.name in self.defs or (py is not None and py not in self.assigned):
                    continue
                raise self.error(node, f"{ast.unparse(node)}: the size of a private array "
                                       f"must come from the kernel's arguments (scalars "
                                       f"it does not assign, array shapes), so that it "
                                       f"can be allocated before the launch")
            if isinstance(n, (ir.Index, ir.HelperCall, ir.Builtin)):
                raise self.error(node, f"{ast.unparse(node)}: the size of a private array "
                                       f"must come from the kernel's arguments")
        return _substitute(e, self.defs)

    def stmt_If(self, s):
        return ir.If(self.cond(s.test), self.block(s.body), self.block(s.orelse))

    def stmt_While(self, s):
        if s.orelse:
            raise self.error(s, "while ... else is not supported in kernels")
        self.loopdepth += 1
        try:
            return ir.While(self.cond(s.test), self.block(s.body))
        finally:
            self.loopdepth -= 1

    def stmt_Break(self, s):
        if not self.loopdepth:
            raise self.error(s, precheck.BREAK)
        return ir.Break()

    def stmt_Continue(self, s):
        if not self.loopdepth and not self.levels:
            raise self.error(s, "continue outside a loop")
        return ir.Continue()

    def stmt_Return(self, s):
        if self.levels:
            raise self.error(s, "return inside a parallel loop; reduce into a variable "
                                "and return it after the loop")
        if s.value is None:
            if self.ret not in (None, T.VOID) or self.rets is not None:
                raise self.error(s, "return without a value in a function returning a value")
            self.ret = T.VOID
            return ir.Return(None)
        if isinstance(s.value, ast.Tuple):
            return self.tuple_return(s)
        if isinstance(s.value, ast.Call):
            made = self.return_call(s)
            if made is not None:
                return made
        if self.rets is not None:
            raise self.error(s, "return of a tuple and of something else in the same "
                                "function")
        v = self.expr(s.value)
        if not isinstance(v.type, T.Scalar):
            raise self.error(s, "a kernel or helper may return only a scalar")
        vt = v.type
        if self.ret is None:
            self.ret, self.changed = vt, True
        elif self.ret is T.VOID:
            raise self.error(s, "return with and without a value in the same function")
        elif T.promote(self.ret, vt) != self.ret:
            self.ret, self.changed = T.promote(self.ret, vt), True
        return ir.Return(self.convert(v, self.ret, s))


def _substitute(e, defs):
    """A copy of ``e`` with each Var of ``defs`` replaced by its value (recursively)."""
    if isinstance(e, ir.Var) and e.name in defs:
        return _substitute(defs[e.name], defs)
    e = copy.copy(e)
    for f in fields(e):
        v = getattr(e, f.name)
        if isinstance(v, ir.Expr):
            setattr(e, f.name, _substitute(v, defs))
        elif isinstance(v, list):
            setattr(e, f.name, [_substitute(x, defs) if isinstance(x, ir.Expr) else x
                                for x in v])
    return e
