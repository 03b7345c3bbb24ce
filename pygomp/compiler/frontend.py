"""Python AST -> typed IR, through a whitelist visitor (one method a supported node).

Anything else is a `CompileError` naming the construct, with the file, line and source.

Semantics that differ from Python (they are C's, as on every device):
- integers have fixed width: int64 (Python ints), int32, ...; overflow wraps around;
- ``a // b`` and ``a % b`` on integers truncate toward zero (C), so ``-7 // 2 == -3`` and
  ``-7 % 2 == -1``; on floats ``//`` is ``floor(a / b)`` and ``%`` is C's ``fmod``;
- ``a / b`` on integers is a float64 division, as in Python; ``a ** k`` stays an integer
  only for a literal ``k`` of 0 to 4, otherwise it is computed in floating point (pow);
- ``and``/``or``/``not`` give a bool; indices are not bounds-checked and a negative index
  counts from the end only when it is a literal (``a[-1]``);
- a variable keeps one type: the widest one assigned to it (``s = 0`` then ``s += x[i]``
  with float64 ``x`` makes ``s`` float64); a loop variable is int64, and after a ``range``
  loop it holds the stop value rather than the last one;
- global scalars (module constants) are read once, when the kernel is compiled.

Variables first assigned inside a parallel loop are private to one iteration; assigning a
variable of an enclosing scope inside a parallel loop is an error unless it appears in the
loop's ``reduction=`` or ``private=`` clause.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import textwrap

import numpy as np

from . import ir, lang
from . import types as T
from .reductions import OPS, local_name


class CompileError(Exception):
    """A construct the kernel compiler does not accept, with file, line and source line."""

    def __init__(self, message, file=None, line=None, source=None):
        self.message, self.file, self.line, self.source = message, file, line, source
        text = message
        if file is not None:
            text = f"{file}:{line}: {message}"
            if source:
                text += f"\n    {source.strip()}"
        super().__init__(text)


# math functions by object -> (generic name, kind); kind: "f" float result, "i" int result
MATH = {}
for _n in ("sqrt exp log log2 log10 sin cos tan asin acos atan sinh cosh tanh asinh acosh "
           "atanh erf erfc expm1 log1p fabs atan2 pow hypot fmod copysign gamma lgamma").split():
    if hasattr(math, _n):
        MATH[getattr(math, _n)] = (_n, "f")
MATH[math.floor] = ("floor", "i")
MATH[math.ceil] = ("ceil", "i")
MATH[math.trunc] = ("trunc", "i")
MATH[math.isnan] = ("isnan", "b")
MATH[math.isinf] = ("isinf", "b")
MATH[math.isfinite] = ("isfinite", "b")
for _np, _n in (("sqrt", "sqrt"), ("exp", "exp"), ("log", "log"), ("log2", "log2"),
                ("log10", "log10"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"),
                ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"),
                ("cosh", "cosh"), ("tanh", "tanh"), ("arcsinh", "asinh"), ("arccosh", "acosh"),
                ("arctanh", "atanh"), ("expm1", "expm1"), ("log1p", "log1p"),
                ("fabs", "fabs"), ("arctan2", "atan2"), ("power", "pow"), ("hypot", "hypot"),
                ("fmod", "fmod"), ("copysign", "copysign"), ("floor", "floor"),
                ("ceil", "ceil"), ("trunc", "trunc")):
    MATH[getattr(np, _np)] = (_n, "f")
for _np in ("isnan", "isinf", "isfinite"):
    MATH[getattr(np, _np)] = (_np, "b")
MINMAX = {builtins.min: "min", builtins.max: "max", np.minimum: "min", np.maximum: "max"}
ABS = (builtins.abs, np.abs, np.absolute)
CONSTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

RESERVED = set("""auto break case char const continue default do double else enum extern float
for goto if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while bool half uchar ushort uint ulong kernel global local
private constant launch args min max abs""".split()) | {m[0] for m in MATH.values()}

_UNSET = object()
LEVELS = ("gang", "worker", "vector")
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
           ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_STATIC_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
               ast.Pow: lambda a, b: a ** b if 0 <= b < 128 else None,
               ast.LShift: lambda a, b: a << b if 0 <= b < 128 else None}
_CMPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class Scope:
    """The function, or the body of one parallel loop (its variables are private)."""

    def __init__(self, loop=None, line=0):
        self.loop = loop            # the ParLoop, or None for the function
        self.line = line
        self.names = {}             # python name -> C name
        self.reductions = {}        # python name -> C name of this loop's local copy
        self.decls = []             # [(C name, type)]
        self.loopvars = set()


class Registry:
    """Helper specializations compiled for one kernel (shared by nested compilations)."""

    def __init__(self):
        self.done = {}              # (DeclareTarget, argtypes) -> ir.Function
        self.order = []
        self.busy = set()


def compile_function(fn, argtypes, *, is_kernel=True, registry=None, name=None) -> ir.Function:
    """The typed IR of a Python function for the given argument types (a list with one
    `types.Scalar`/`types.Array` a parameter; annotations win over scalars given)."""
    fe = Frontend(fn, argtypes, is_kernel=is_kernel, registry=registry or Registry(),
                  name=name)
    return fe.build()


class Frontend:
    def __init__(self, fn, argtypes, is_kernel, registry, name):
        self.fn = fn
        self.is_kernel = is_kernel
        self.registry = registry
        try:
            lines, start = inspect.getsourcelines(fn)
            self.file = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as e:
            raise CompileError(f"cannot read the source of {fn.__qualname__}: {e}") from None
        self.lines = lines
        self.offset = start - 1
        tree = ast.parse(textwrap.dedent("".join(lines)))
        self.node = tree.body[0]
        if not isinstance(self.node, ast.FunctionDef):
            raise CompileError(f"{fn.__qualname__} is not a def function", self.file, start)
        self.name = name or fn.__name__
        self.env = dict(fn.__globals__)
        if fn.__closure__:
            for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.env[var] = cell.cell_contents
                except ValueError:
                    pass
        self.argtypes = list(argtypes)
        self.vtypes = {}            # variable type (widened across passes)
        self.fixed = {}             # annotated variables
        self.ret = None

    # -- errors and source ------------------------------------------------------------
    def line(self, node):
        return getattr(node, "lineno", 1) + self.offset

    def error(self, node, message):
        ln = self.line(node)
        src = self.lines[ln - self.offset - 1] if 0 <= ln - self.offset - 1 < len(self.lines) else ""
        return CompileError(message, self.file, ln, src)

    # -- driver ---------------------------------------------------------------------
    def build(self) -> ir.Function:
        args = self.node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise self.error(self.node, "kernel parameters must be plain positional names "
                                        "(no *args, **kwargs, keyword-only or defaults)")
        if len(args.args) != len(self.argtypes):
            raise self.error(self.node, f"{self.name} takes {len(args.args)} arguments, "
                                        f"{len(self.argtypes)} given")
        for _ in range(10):
            self.changed = False
            fn = self._build_once()
            if not self.changed:
                return fn
        raise self.error(self.node, "the variable types do not settle; add annotations")

    def _build_once(self):
        self.scopes = [Scope()]
        self.gone = {}              # name -> line of the parallel loop it was private to
        self.arrays = {}            # python name -> (C name, Array type) visible now
        self.seqvars = []           # loop variables of the enclosing range loops
        self.levels = []            # levels of enclosing parallel loops
        self.rid = 0
        self.decl_lines = {}
        self.loopdepth = 0
        self.rets_seen = False
        self.helpers_used = []
        params = []
        for a, t in zip(self.node.args.args, self.argtypes):
            ann = self.annotation(a)
            if ann is not None and isinstance(t, T.Scalar):
                t = ann
            elif ann is not None and isinstance(t, T.Array):
                raise self.error(a, f"parameter {a.arg!r} is annotated as a scalar "
                                    f"{ann} but gets an array")
            c = self.cname(a.arg)
            params.append((c, t))
            if isinstance(t, T.Array):
                self.arrays[a.arg] = (c, t)
            else:
                self.scopes[0].names[a.arg] = c
                self.vtypes[a.arg] = t
        self.params = {a.arg for a in self.node.args.args}
        body = self.block(self.node.body)
        ret = self.ret or T.VOID
        fn = ir.Function(self.name, self.fn.__qualname__, params, body, ret,
                         self.scopes[0].decls, self.file, self.line(self.node), self.is_kernel)
        fn.helpers = list(self.registry.order) if self.is_kernel else []
        fn.decl_lines = self.decl_lines
        return fn

    def annotation(self, a):
        if a.annotation is None:
            return None
        v = self.static(a.annotation)
        if v is _UNSET or v is np.ndarray:
            return None
        try:
            return T.scalar(v)
        except TypeError:
            return None

    def cname(self, name):
        return name + "_" if name in RESERVED or name.startswith("__") else name

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

    # -- statements -------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            method = getattr(self, "stmt_" + type(s).__name__, None)
            if method is None:
                raise self.error(s, f"{_describe(s)} is not supported in kernels")
            r = method(s)
            if r is None:
                continue
            for x in (r if isinstance(r, list) else [r]):
                if not x.line:
                    x.line = self.line(s)
                out.append(x)
        return out

    def stmt_Pass(self, s):
        return None

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return None                                   # a docstring
        if not isinstance(s.value, ast.Call):
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
        return ir.ExprStmt(self.expr(s.value))

    def atomic(self, call):
        self.no_args(call, 3)
        arr, idx, val = call.args
        target = self.subscript(arr, idx.elts if isinstance(idx, ast.Tuple) else [idx], call)
        t = target.type
        if t not in (T.INT32, T.INT64, T.UINT32, T.UINT64, T.FLOAT32, T.FLOAT64):
            raise self.error(call, f"omp.atomic_add on a {t} array: use int32, int64, "
                                   f"uint32, uint64, float32 or float64")
        return ir.AtomicAdd(target, self.convert(self.expr(val), t, call))

    def no_args(self, call, n):
        if len(call.args) != n or call.keywords:
            raise self.error(call, f"{ast.unparse(call.func)}() takes {n} positional arguments")

    def stmt_Assign(self, s):
        if len(s.targets) != 1:
            return [x for t in s.targets for x in self.block([ast.copy_location(
                ast.Assign(targets=[t], value=s.value), s)])]
        target = s.targets[0]
        if isinstance(target, ast.Tuple):
            return self.unpack(target, s.value, s)
        if isinstance(target, ast.Name) and isinstance(s.value, ast.Call):
            made = self.array_creation(target, s.value)
            if made is not None:
                return made
        return self.assign(target, s.value, s)

    def unpack(self, target, value, s):
        """``a, b = x, y`` (through temporaries when they overlap) and ``n, m = a.shape``."""
        if (isinstance(value, ast.Attribute) and value.attr == "shape"
                and isinstance(value.value, ast.Name) and value.value.id in self.arrays):
            ndim = self.arrays[value.value.id][1].ndim
            value = ast.Tuple(elts=[ast.copy_location(ast.Subscript(
                value=value, slice=ast.Constant(k), ctx=ast.Load()), s) for k in range(ndim)],
                ctx=ast.Load())
        if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
            raise self.error(s, "tuple assignment needs a tuple of the same length on the "
                                "right (a, b = x, y) or an array's shape")
        names = {n.id for t in target.elts for n in ast.walk(t) if isinstance(n, ast.Name)}
        used = {n.id for v in value.elts for n in ast.walk(v) if isinstance(n, ast.Name)}
        out = []
        if names & used:
            temps = []
            for k, v in enumerate(value.elts):
                tmp = ast.copy_location(ast.Name(id=f"__tup{self.line(s)}_{k}", ctx=ast.Store()), s)
                out += self.block([ast.copy_location(ast.Assign(targets=[tmp], value=v), s)])
                temps.append(ast.copy_location(ast.Name(id=tmp.id, ctx=ast.Load()), s))
            value = ast.Tuple(elts=temps, ctx=ast.Load())
        for t, v in zip(target.elts, value.elts):
            out += self.block([ast.copy_location(ast.Assign(targets=[t], value=v), s)])
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
            raise self.error(s, f"operator {type(s.op).__name__} is not supported")
        load = ast.copy_location(_as_load(s.target), s)
        value = ast.copy_location(ast.BinOp(left=load, op=s.op, right=s.value), s)
        return self.assign(s.target, value, s)

    def assign(self, target, value_node, s):
        if isinstance(target, ast.Subscript):
            idx = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
            t = self.subscript(target.value, idx, target)
            v = self.expr(value_node)
            return ir.Assign(t, self.convert(v, t.type, s))
        if not isinstance(target, ast.Name):
            raise self.error(s, f"cannot assign to {ast.unparse(target)}")
        name = target.id
        if name in self.arrays:
            raise self.error(s, f"{name!r} is an array: it cannot be reassigned in a kernel")
        if name in self.seqvars or any(name in sc.loopvars for sc in self.scopes):
            raise self.error(s, f"assignment to the loop variable {name!r}")
        v = self.expr(value_node)
        if isinstance(v.type, T.Array):
            raise self.error(s, "arrays cannot be assigned to variables in kernels; "
                                "use the array itself")
        if v.type is T.VOID:
            raise self.error(s, "the called function returns nothing")
        vt = _concrete(v)
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
        else:
            old = self.vtypes[name]
            if not (v.weak and T.promote_weak(old, vt) == old):
                new = T.promote(old, vt) if not v.weak else T.promote_weak(old, vt)
                if new != old:
                    if old.is_float and not new.is_float:
                        raise self.error(s, f"{name!r} is {old} and gets {vt}")
                    self.vtypes[name] = new
                    self.changed = True
        cname = self.define(name, s)
        return ir.Assign(ir.Var(cname, type=self.vtypes[name]),
                         self.convert(v, self.vtypes[name], s))

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
        shape = self.static(shape_node) if shape_node is not None else _UNSET
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        if (not isinstance(shape, tuple) or not shape
                or not all(isinstance(d, (int, np.integer)) and d > 0 for d in shape)):
            raise self.error(call, "the shape of a local array must be positive integer "
                                   "constants (literals or module constants)")
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
        t = T.Array(elem, len(shape), space, tuple(int(d) for d in shape))
        cname = self.cname(name)
        self.arrays[name] = (cname, t)
        self.scopes[-1].decls.append((cname, t))
        self.decl_lines.setdefault(cname, self.line(call))
        return ir.ArrayInit(cname, t, zero=obj is np.zeros)

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
            raise self.error(s, "break directly in a parallel loop is not allowed: it has "
                                "no order to stop")
        return ir.Break()

    def stmt_Continue(self, s):
        if not self.loopdepth:
            raise self.error(s, "continue outside a sequential loop")
        return ir.Continue()

    def stmt_Return(self, s):
        if self.levels:
            raise self.error(s, "return inside a parallel loop; reduce into a variable "
                                "and return it after the loop")
        if s.value is None:
            if self.ret not in (None, T.VOID):
                raise self.error(s, "return without a value in a function returning a value")
            self.ret = T.VOID
            return ir.Return(None)
        v = self.expr(s.value)
        if not isinstance(v.type, T.Scalar):
            raise self.error(s, "a kernel or helper may return only a scalar")
        vt = _concrete(v)
        if self.ret is None:
            self.ret, self.changed = vt, True
        elif self.ret is T.VOID:
            raise self.error(s, "return with and without a value in the same function")
        elif T.promote(self.ret, vt) != self.ret:
            self.ret, self.changed = T.promote(self.ret, vt), True
        return ir.Return(self.convert(v, self.ret, s))

    def stmt_For(self, s):
        if s.orelse:
            raise self.error(s, "for ... else is not supported in kernels")
        if not isinstance(s.iter, ast.Call):
            raise self.error(s, f"cannot loop over {ast.unparse(s.iter)}: a kernel loop "
                                f"iterates over range(...) or an omp loop (omp.gang, "
                                f"omp.worker, omp.vector, omp.parallel_range)")
        obj = self.callee(s.iter.func)
        if obj is builtins.range:
            return self.seq_for(s)
        if obj in lang.LOOPS:
            return self.par_for(s, lang.LOOPS[obj])
        raise self.error(s, f"cannot loop over {ast.unparse(s.iter)}: use range(...) or an "
                            f"omp loop")

    def range_args(self, call, what):
        if not 1 <= len(call.args) <= 3:
            raise self.error(call, f"{what} takes 1 to 3 arguments, like range")
        vals = [self.int_expr(a) for a in call.args]
        if len(vals) == 1:
            return _i(0), vals[0], _i(1)
        if len(vals) == 2:
            return vals[0], vals[1], _i(1)
        if isinstance(vals[2], ir.Const) and vals[2].value == 0:
            raise self.error(call, f"{what} step must not be zero")
        return vals

    def int_expr(self, node):
        v = self.expr(node)
        if not (isinstance(v.type, T.Scalar) and (v.type.is_int or v.type.is_bool)):
            raise self.error(node, f"{ast.unparse(node)} must be an integer, not {v.type}")
        return self.convert(v, T.INT64, node)

    def seq_for(self, s):
        if not isinstance(s.target, ast.Name):
            raise self.error(s, "the loop variable must be a plain name")
        if s.iter.keywords:
            raise self.error(s, "range() takes no keywords")
        start, stop, step = self.range_args(s.iter, "range")
        name = s.target.id
        if self.vtypes.get(name) not in (None, T.INT64):
            raise self.error(s, f"loop variable {name!r} was used as {self.vtypes[name]}")
        self.vtypes[name] = T.INT64
        found = self.resolve(name)
        if found is not None and found[1] is not self.scopes[-1]:
            raise self.error(s, f"loop variable {name!r} belongs to an enclosing scope: "
                                f"inside a parallel loop use a new name")
        cname = self.define(name, s)
        self.seqvars.append(name)
        self.loopdepth += 1
        try:
            body = self.block(s.body)
        finally:
            self.loopdepth -= 1
            self.seqvars.pop()
        return ir.For(cname, start, stop, step, body)

    def par_for(self, s, levels):
        what = ast.unparse(s.iter.func)
        if not self.is_kernel:
            raise self.error(s, f"{what} loops are allowed only in kernels, not in "
                                f"declare_target helpers (they run in one thread)")
        if self.levels:
            inner = LEVELS.index(self.levels[-1])
            if LEVELS.index(levels[0]) <= inner:
                raise self.error(s, f"a {levels[0]} loop cannot nest inside a "
                                    f"{self.levels[-1]} loop (order: gang, worker, vector)")
        kw = {}
        for k in s.iter.keywords:
            if k.arg not in ("reduction", "private", "collapse"):
                raise self.error(s, f"unknown clause {k.arg}= (use reduction=, private=, "
                                    f"collapse=)")
            kw[k.arg] = self.static(k.value)
            if kw[k.arg] is _UNSET:
                raise self.error(s, f"{k.arg}= must be a constant")
        dims_ast = [(s.target, s.iter)]
        body_ast = s.body
        collapse = kw.get("collapse", 1)
        if not isinstance(collapse, int) or collapse < 1:
            raise self.error(s, "collapse= must be a positive integer")
        for _ in range(collapse - 1):
            if (len(body_ast) != 1 or not isinstance(body_ast[0], ast.For)
                    or not isinstance(body_ast[0].iter, ast.Call)
                    or self.callee(body_ast[0].iter.func) is not builtins.range):
                raise self.error(s, f"collapse={collapse} needs {collapse} perfectly nested "
                                    f"loops: the inner ones `for j in range(...)`")
            inner = body_ast[0]
            used = {n.id for n in ast.walk(inner.iter) if isinstance(n, ast.Name)}
            outer_vars = {t.id for t, _ in dims_ast if isinstance(t, ast.Name)}
            if used & outer_vars:
                raise self.error(inner, "a collapsed loop's bounds must not depend on the "
                                        "outer loop variables")
            dims_ast.append((inner.target, inner.iter))
            body_ast = inner.body
        dims = []
        for target, call in dims_ast:
            if not isinstance(target, ast.Name):
                raise self.error(s, "the loop variable must be a plain name")
            start, stop, step = self.range_args(call, what)
            dims.append(ir.Dim(self.cname(target.id), start, stop, step))
        loop = ir.ParLoop(levels, dims, [], line=self.line(s))
        scope = Scope(loop, self.line(s))
        for target, _ in dims_ast:
            scope.names[target.id] = self.cname(target.id)
            scope.loopvars.add(target.id)
            self.vtypes[target.id] = T.INT64
        for name in _names(kw.get("private"), s, self, "private"):
            found = self.resolve(name)
            if found is None or name not in self.vtypes:
                raise self.error(s, f"private variable {name!r} is not defined before the loop")
            scope.names[name] = found[0]
            scope.decls.append((found[0], self.vtypes[name]))
        for op, name in self.parse_reduction(kw.get("reduction"), s):
            found = self.resolve(name)
            if found is None:
                raise self.error(s, f"reduction variable {name!r} must be defined before "
                                    f"the loop (e.g. {name} = 0)")
            t = self.vtypes[name]
            OPS[op].check(t, lambda m: self.error(s, f"reduction {op}:{name}: {m}"))
            self.rid += 1
            local = local_name(found[0], self.rid, levels[-1])
            scope.reductions[name] = local
            loop.reductions.append(ir.Reduction(op, found[0], local, t, self.rid))
        saved_depth, self.loopdepth = self.loopdepth, 0
        saved_seq, self.seqvars = self.seqvars, []
        self.scopes.append(scope)
        self.levels.extend(levels)
        try:
            loop.body = self.block(body_ast)
        finally:
            self.scopes.pop()
            del self.levels[-len(levels):]
            self.loopdepth, self.seqvars = saved_depth, saved_seq
        for name in scope.names:
            if name not in scope.loopvars and self.resolve(name) is None:
                self.gone[name] = scope.line
        for name, (c, t) in list(self.arrays.items()):
            if (c, t) in scope.decls:
                del self.arrays[name]
                self.gone[name] = scope.line
        loop.decls = [(c, t if t is not None else self.vtypes.get(_py(c)))
                      for c, t in scope.decls]
        loop.has_sync = any(isinstance(n, (ir.AtomicAdd, ir.Barrier)) for n in ir.walk(loop.body))
        return loop

    def parse_reduction(self, spec, node):
        if spec is None:
            return []
        if not isinstance(spec, str):
            raise self.error(node, 'reduction= must be a string like "+:s" or "max:m,n"')
        out = []
        for group in filter(None, (g.strip() for g in spec.split(";"))):
            op, sep, names = group.partition(":")
            op = op.strip()
            if not sep or op not in OPS:
                raise self.error(node, f"bad reduction {group!r}: write OP:VAR[,VAR] with OP "
                                       f"one of {' '.join(OPS)}")
            out += [(op, n) for n in _names(names, node, self, "reduction")]
        return out

    # -- expressions ---------------------------------------------------------------
    def expr(self, node) -> ir.Expr:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{_describe(node)} is not supported in kernels")
        return method(node)

    def cond(self, node):
        v = self.expr(node)
        if not isinstance(v.type, T.Scalar):
            raise self.error(node, "a condition must be a scalar")
        return v

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
                ta = _concrete(a) if not a.weak else t
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

    def expr_Call(self, node):
        obj = self.callee(node.func)
        if obj is _UNSET:
            raise self.error(node, f"{ast.unparse(node.func)} is not a function a kernel can "
                                   f"call")
        if node.keywords:
            raise self.error(node, f"{ast.unparse(node.func)}(): keyword arguments are not "
                                   f"supported here")
        if obj in lang.BUILTINS:
            self.no_args(node, 0)
            return ir.Builtin(lang.BUILTINS[obj], type=T.INT64)
        if isinstance(obj, lang.DeclareTarget):
            return self.helper_call(obj, node)
        if obj in (lang.barrier, lang.atomic_add):
            raise self.error(node, f"{ast.unparse(node.func)}() is a statement, not a value")
        if obj is builtins.len:
            self.no_args(node, 1)
            a = self.expr(node.args[0])
            if not isinstance(a, ir.ArrayRef):
                raise self.error(node, "len() takes an array")
            return self.shape(a, 0)
        args = [self.expr(a) for a in node.args]
        for a, n in zip(args, node.args):
            if not isinstance(a.type, T.Scalar):
                raise self.error(n, f"{ast.unparse(n)} is an array; "
                                    f"{ast.unparse(node.func)}() takes scalars")
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
            return ir.Cast(args[0], type=t)
        if obj in MINMAX:
            if len(args) < 2:
                raise self.error(node, f"{ast.unparse(node.func)}() needs at least two "
                                       f"scalars in a kernel")
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
        raise self.error(node, f"{ast.unparse(node.func)} ({type(obj).__name__}) cannot be "
                               f"called in a kernel; decorate helpers with @omp.declare_target")

    def helper_call(self, helper, node):
        args = [self.expr(a) for a in node.args]
        types_ = []
        for a in args:
            if isinstance(a.type, T.Array):
                if not isinstance(a, ir.ArrayRef):
                    raise self.error(node, "array arguments must be array names")
                types_.append(a.type if a.type.space == "global" else
                              T.Array(a.type.elem, a.type.ndim, a.type.space, a.type.shape))
            else:
                types_.append(_concrete(a))
        key = (helper, tuple(types_))
        fn = self.registry.done.get(key)
        if fn is None:
            if key in self.registry.busy:
                raise self.error(node, f"recursive call of {helper.__name__}: recursion is "
                                       f"not supported in kernels")
            self.registry.busy.add(key)
            try:
                name = f"{helper.__name__}__{len(self.registry.order)}"
                fe = Frontend(helper.py_func, types_, is_kernel=False, registry=self.registry,
                              name=name)
                fn = fe.build()
            finally:
                self.registry.busy.discard(key)
            self.registry.done[key] = fn
            self.registry.order.append(fn)
        return ir.HelperCall(fn, args, type=fn.ret)

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


def _concrete(v):
    return v.type


def _i(n):
    return ir.Const(int(n), type=T.INT64)


def _py(cname):
    return cname[:-1] if cname.endswith("_") else cname


def _names(spec, node, fe, what):
    if spec is None:
        return []
    if isinstance(spec, (list, tuple)):
        names = list(spec)
    elif isinstance(spec, str):
        names = [n.strip() for n in spec.split(",") if n.strip()]
    else:
        raise fe.error(node, f"{what}= must be a string of names")
    for n in names:
        if not isinstance(n, str) or not n.isidentifier():
            raise fe.error(node, f"{what}=: {n!r} is not a variable name")
    return names


def _as_load(node):
    if isinstance(node, ast.Name):
        return ast.Name(id=node.id, ctx=ast.Load())
    if isinstance(node, ast.Subscript):
        return ast.Subscript(value=node.value, slice=node.slice, ctx=ast.Load())
    return node


def _describe(node):
    names = {"ListComp": "a list comprehension", "Lambda": "a lambda", "With": "with",
             "Try": "try", "Raise": "raise", "Global": "global", "Nonlocal": "nonlocal",
             "FunctionDef": "a nested def", "ClassDef": "a class", "Import": "import",
             "ImportFrom": "import", "Yield": "yield", "Await": "await", "Assert": "assert",
             "Delete": "del", "List": "a list", "Dict": "a dict", "Set": "a set",
             "JoinedStr": "an f-string", "Starred": "*unpacking", "GeneratorExp":
             "a generator expression", "DictComp": "a dict comprehension", "Tuple": "a tuple",
             "AsyncFunctionDef": "async def", "Match": "match", "NamedExpr": ":="}
    n = type(node).__name__
    return names.get(n, f"{n} ({ast.unparse(node)[:40]})" if hasattr(ast, "unparse") else n)
