"""For loops of the kernel front end: ``range`` loops, and the parallel omp loops with
their clauses (reduction=, private=, collapse=) and private scopes."""
from __future__ import annotations

import ast
import builtins

from . import ir, nonneg, precheck, scoping, steps
from . import types as T
from .callables import LOOPS
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
        self.bound = set()          # array names created or bound here
        self.inferred = set()       # enclosing scalars made private by Python's scoping
        self.saved = {}             # arrays whose name means a reduction copy here


class Loops:
    """Mixin of `frontend.Frontend`: ``stmt_For``, sequential and parallel."""

    def stmt_For(self, s):
        if s.orelse:
            raise self.error(s, "for ... else is not supported in kernels")
        if self.iterates(s):                        # arrays, enumerate, zip: `forms`
            return self.iter_for(s)
        if not isinstance(s.iter, ast.Call):
            raise self.error(s, f"cannot loop over {ast.unparse(s.iter)}: a kernel loop "
                                f"iterates over range(...) or an omp loop (omp.gang, "
                                f"omp.worker, omp.vector, omp.parallel_range)")
        obj = self.callee(s.iter.func)
        if obj is builtins.range:
            return self.seq_for(s)
        if obj in LOOPS:
            return self.par_for(s, LOOPS[obj])
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
        self.mark_weak(name, True)              # a Python int (NEP 50)
        cname = self.define(name, s)
        self.seqvars.append(name)
        self.loopdepth += 1
        saved = self.bounds.get(cname)
        self.bounds[cname] = self.loop_bound(start, stop, step)
        facts = dict(self.facts)
        self.loop_fact(name, cname, start, stop, step)
        try:
            body = self.block(s.body)
        finally:
            self.loopdepth -= 1
            self.seqvars.pop()
            self.bounds[cname] = saved
            self.facts = facts
        return ir.For(cname, start, stop, step, body)

    def loop_fact(self, name, cname, start, stop, step):
        """Inside its loop, a loop variable no statement assigns lies between the bounds
        (for `nonneg`), when they keep their values."""
        if self.counts.get(name) == 1 and isinstance(step, ir.Const) and step.value \
                and nonneg.stable(start, self.facts) and nonneg.stable(stop, self.facts):
            self.facts[cname] = ("loop", start, stop, step)

    def loop_bound(self, start, stop, step):
        """The lower bound of a loop variable inside its loop (None: unknown)."""
        if isinstance(step, ir.Const):
            lo = self.lower_bound(start if step.value > 0 else stop)
            return lo if lo is None or step.value > 0 else lo + 1
        return None

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
        kw = self.clauses(s)
        scan = self.scan_check(s, kw)               # an inscan reduction (inscan.py)
        dims_ast, body_ast = self.collapsed(s, kw.get("collapse", 1))
        loop = ir.ParLoop(levels, [], [], line=self.line(s))
        scope = Scope(loop, self.line(s))
        first = self.range_args(s.iter, what)
        self.scopes.append(scope)
        saved_bounds, saved_facts = dict(self.bounds), dict(self.facts)
        try:
            for k, (target, call) in enumerate(dims_ast):
                # an inner dimension's bounds may use the outer loop variables (OpenMP 5.0)
                if not isinstance(target, ast.Name):
                    raise self.error(s, "the loop variable must be a plain name")
                start, stop, step = self.range_args(call, what) if k else first
                c = self.cname(target.id)
                loop.dims.append(ir.Dim(c, start, stop, step))
                scope.names[target.id] = c
                scope.loopvars.add(target.id)
                self.vtypes[target.id] = T.INT64
                self.mark_weak(target.id, True)
                self.bounds[c] = self.loop_bound(start, stop, step)
                self.loop_fact(target.id, c, start, stop, step)
            self.loop_clauses(s, kw, loop, scope, scan)
            self.privatize(s, body_ast, kw, scope)
            saved_depth, self.loopdepth = self.loopdepth, 0
            saved_seq, self.seqvars = self.seqvars, []
            self.levels.extend(levels)
            try:
                loop.body = self.block(body_ast) if scan is None else \
                    self.scan_body(scan, body_ast)
            finally:
                del self.levels[-len(levels):]
                self.loopdepth, self.seqvars = saved_depth, saved_seq
        finally:
            self.scopes.pop()
            self.bounds, self.facts = saved_bounds, saved_facts
            self.arrays.update(scope.saved)
        for name in scope.names:
            if name not in scope.loopvars and self.resolve(name) is None:
                self.gone[name] = scope.line
        for name in scope.bound:
            self.arrays.pop(name, None) or self.views.pop(name)
            self.gone[name] = scope.line
        live = self.live_after.get(id(s), set())
        for name in sorted(scope.inferred & live):
            raise self.error(s, f"{name!r} is private to this parallel loop (each iteration "
                                f"assigns it before reading it), but it is read after the "
                                f"loop, where Python would see the last iteration's value: "
                                f"assign it again after the loop, or use another name inside")
        loop.decls = [(c, t if t is not None else self.vtypes.get(_py(c)))
                      for c, t in scope.decls]
        loop.body = guard_continue(loop.body, loop)
        loop.has_sync = any(isinstance(n, (ir.AtomicAdd, ir.Atomic, ir.Barrier)) for n in ir.walk(loop.body))
        return loop if scan is None else self.scan_lower(s, loop, scan)

    def clauses(self, s):
        kw = {}
        for k in s.iter.keywords:
            if k.arg not in ("reduction", "private", "collapse"):
                raise self.error(s, f"unknown clause {k.arg}= (use reduction=, private=, "
                                    f"collapse=)")
            kw[k.arg] = self.static(k.value)
            if kw[k.arg] is _UNSET:
                raise self.error(s, f"{k.arg}= must be a constant")
        return kw

    def collapsed(self, s, collapse):
        """[(target, range call)] of the loops a collapse= merges, and the inner body."""
        dims_ast, body_ast = [(s.target, s.iter)], s.body
        if not isinstance(collapse, int) or collapse < 1:
            raise self.error(s, "collapse= must be a positive integer")
        for _ in range(collapse - 1):
            if (len(body_ast) != 1 or not isinstance(body_ast[0], ast.For)
                    or not isinstance(body_ast[0].iter, ast.Call)
                    or self.callee(body_ast[0].iter.func) is not builtins.range):
                raise self.error(s, f"collapse={collapse} needs {collapse} perfectly nested "
                                    f"loops: the inner ones `for j in range(...)`")
            dims_ast.append((body_ast[0].target, body_ast[0].iter))
            body_ast = body_ast[0].body
        return dims_ast, body_ast

    def loop_clauses(self, s, kw, loop, scope, scan=None):
        """private= and reduction=: the loop's own copies of enclosing variables
        (``scan``: an inscan reduction's, `inscan.Scan`)."""
        levels = loop.levels
        for name in _names(kw.get("private"), s, self, "private"):
            found = self.resolve(name)
            if found is None or name not in self.vtypes:
                raise self.error(s, f"private variable {name!r} is not defined before the loop")
            scope.names[name] = found[0]
            scope.decls.append((found[0], self.vtypes[name]))
        for op, name in self.parse_reduction(kw.get("reduction"), s):
            if scan is not None:
                self.scan_var(s, op, name, scope, scan)
                continue
            if name in self.arrays:
                self.array_reduction(s, op, name, loop, scope)
                continue
            var, t, local = self.scalar_reduction(s, op, name, scope, levels[-1],
                                                  ", or be an array")
            loop.reductions.append(ir.Reduction(op, var, local, t, self.rid))

    def scalar_reduction(self, s, op, name, scope, suffix, other=""):
        """(C name, type, private copy's name) of the scalar ``name`` reduced by ``op``
        in a loop, its copy now what ``name`` means in ``scope``."""
        found = self.resolve(name)
        if found is None:
            raise self.error(s, f"reduction variable {name!r} must be defined before "
                                f"the loop (e.g. {name} = 0){other}")
        t = self.vtypes[name]
        OPS[op].check(t, lambda m: self.error(s, f"reduction {op}:{name}: {m}"))
        self.rid += 1
        local = local_name(found[0], self.rid, suffix)
        scope.reductions[name] = local
        return found[0], t, local

    def array_reduction(self, s, op, name, loop, scope):
        """``reduction="+:y"`` with y an array: the loop's participants each update a
        private copy (sized as y), combined into y when the loop ends.  In a loop nested
        in one that already reduces y, y is that copy (private to the participant)."""
        arr = self.arrays[name]
        if isinstance(arr, ir.View):
            raise self.error(s, f"reduction on {name!r}, a sub-array: reduce the whole array")
        if arr.name in self.copies:
            return
        t = arr.type
        OPS[op].check(t.elem, lambda m: self.error(s, f"reduction {op}:{name}: {m}"))
        self.rid += 1
        local = local_name(arr.name, self.rid, loop.levels[-1])
        copy_t = T.Array(t.elem, t.ndim, "global", t.shape)
        self.sizes[local] = [self.shape(arr, k) for k in range(t.ndim)]
        self.copies.add(local)
        scope.saved[name] = arr
        self.arrays[name] = ir.ArrayRef(local, type=copy_t)
        loop.reductions.append(ir.Reduction(op, arr.name, local, t, self.rid))

    def privatize(self, s, body_ast, kw, scope):
        """Python's scoping: an enclosing scalar that every iteration assigns before it
        reads it becomes private to the iteration; one read first is an error."""
        clause = set(scope.names) | set(scope.reductions)
        cands = {n for n in scoping.assigned(body_ast, self.is_par_loop)
                 if n not in clause and n not in self.arrays and self.resolve(n) is not None}
        if not cands:
            return
        carried = scoping.exposed_reads(body_ast, clause, self.is_par_loop, self.clause_names)
        for name in sorted(cands, key=lambda n: (carried.get(n, 0), n)):
            if name in carried:
                raise self.error(ast.Pass(lineno=carried[name]), f"{name!r} is read before "
                                 f"this iteration of the parallel loop at line {scope.line} "
                                 f"assigns it, so its value would come from another "
                                 f"iteration: combine it with reduction= (e.g. "
                                 f"reduction=\"+:{name}\"), or give each iteration its own "
                                 f"copy with private=\"{name}\"")
            c = self.resolve(name)[0]
            scope.names[name] = c
            scope.decls.append((c, self.vtypes.get(name)))
            scope.inferred.add(name)

    def is_par_loop(self, node):
        return isinstance(node.iter, ast.Call) and self.callee(node.iter.func) in LOOPS

    def clause_names(self, node):
        """(loop variables, private names, reduction names) of a nested parallel loop."""
        kw = self.clauses(node)
        dims, _ = self.collapsed(node, kw.get("collapse", 1))
        loopvars = {t.id for t, _ in dims if isinstance(t, ast.Name)}
        return (loopvars, set(_names(kw.get("private"), node, self, "private")),
                {n for _, n in self.parse_reduction(kw.get("reduction"), node)})

    def parse_reduction(self, spec, node):
        if spec is None:
            return []
        if not isinstance(spec, str):
            raise self.error(node, 'reduction= must be a string like "+:s" or "max:m,n"')
        try:
            groups = precheck.reduction(spec)
        except ValueError as e:
            raise self.error(node, str(e)) from None
        out = []
        for op, item in groups:
            out += [(op, n) for n in _names(item, node, self, "reduction")]
        return out


def guard_continue(body, loop):
    """A parallel loop's body whose ``continue`` (of this loop) must not jump over a
    nested parallel loop or a barrier, which every participant has to reach alike: it
    sets an iteration-private flag instead, and what follows runs under that flag.
    Elsewhere a plain C ``continue`` is right."""
    if "continue" not in steps.jumps(body) or not any(
            isinstance(n, (ir.ParLoop, ir.Barrier)) for n in ir.walk(body)):
        return body
    flag = f"pyg_skip{loop.line}"
    loop.decls.append((flag, T.BOOL))
    return steps.guard_jumps(body, None, flag)


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
