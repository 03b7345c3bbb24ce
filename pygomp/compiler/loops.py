"""For loops of the kernel front end: ``range`` loops, and the parallel omp loops with
their clauses (reduction=, private=, collapse=) and private scopes."""
from __future__ import annotations

import ast
import builtins

from . import ir, lang
from . import types as T
from .expressions import _UNSET, _i
from .reductions import OPS, local_name

LEVELS = ("gang", "worker", "vector")


class Scope:
    """The function, or the body of one parallel loop (its variables are private)."""

    def __init__(self, loop=None, line=0):
        self.loop = loop            # the ParLoop, or None for the function
        self.line = line
        self.names = {}             # python name -> C name
        self.reductions = {}        # python name -> C name of this loop's local copy
        self.decls = []             # [(C name, type)]
        self.loopvars = set()


class Loops:
    """Mixin of `frontend.Frontend`: ``stmt_For``, sequential and parallel."""

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
