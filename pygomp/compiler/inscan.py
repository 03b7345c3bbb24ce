"""OpenMP's scan directive: a parallel loop with ``reduction="inscan,OP:s"`` whose body
holds ``omp.inclusive(s)`` or ``omp.exclusive(s)``.

The directive splits the body into an input phase, which updates ``s`` (``s += e``,
``s = max(s, e)``, ...), and a scan phase, which reads it: the statements before
``inclusive`` are the input phase and those after it the scan phase, which sees the
prefix that includes the iteration; with ``exclusive`` the statements after it are
the input phase and those before it the scan phase, which sees the prefix that
excludes the iteration.  As in Python, the prefix starts from the value ``s`` has
before the loop, and ``s`` holds the whole reduction after it.

The loop becomes a two-pass parallel scan, as ``np.cumsum`` (`scans.py`): a parallel
loop over ``BLOCKS`` chunks runs each chunk's input phases from the operator's identity
(a vector loop with a reduction, where the loop has the vector level and another one)
and keeps the chunk's total in an array of the kernel in the device's global scratch
(``Function.scratch``); a sequential loop turns the totals into the prefix before
each chunk, starting from ``s``; a second parallel loop runs each chunk's iterations
again, the input and scan phases in the body's order, from that prefix.  The input
phase therefore runs twice: it may assign scalars and private arrays only (no store to
an array the kernel shares, no atomic, print or helper that writes).
"""
from __future__ import annotations

import ast
import builtins
import copy
from dataclasses import dataclass, field

import numpy as np

from . import ir, lang, precheck, steps
from . import types as T
from .callables import SCANS
from .expressions import _i
from .reductions import combine, local_name
from .scans import BLOCKS, _add, _div, _max

SCAN_OPS = ("+", "*", "max", "min", "&", "|", "^")
_AUG = {ast.Add: "+", ast.Mult: "*", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}


@dataclass
class Scan:
    """What the directive of one loop says."""
    kind: str                   # "inclusive" or "exclusive"
    at: int                     # the directive's index in the loop's body
    ops: dict                   # python name -> operator
    vars: list = field(default_factory=list)    # [(op, outer C name, local, type)]
    first: list = field(default_factory=list)   # IR of the statements before it
    second: list = field(default_factory=list)  # and after it

    @property
    def phases(self):
        """(input phase, scan phase) in IR."""
        return (self.first, self.second) if self.kind == "inclusive" else \
            (self.second, self.first)


class Inscan:
    """Mixin of `frontend.Frontend`: parallel loops with an inscan reduction."""

    def scan_check(self, s, kw):
        """The `Scan` of a parallel loop whose reduction= has the inscan modifier (its
        rules checked on the source), else None."""
        spec = kw.get("reduction")
        if not precheck.inscan(spec):
            return None
        what = ast.unparse(s.iter.func)
        if self.levels:
            raise self.error(s, f"{what}(...) with an inscan reduction must stand at the "
                                f"kernel's top level, not inside another parallel loop")
        if kw.get("collapse", 1) != 1:
            raise self.error(s, "collapse= cannot be combined with an inscan reduction")
        ops = {}
        for op, name in self.parse_reduction(spec, s):
            if op not in SCAN_OPS:
                raise self.error(s, f"inscan reduction {op}:{name}: a scan takes the "
                                    f"operators {' '.join(SCAN_OPS)}")
            if name in self.arrays:
                raise self.error(s, f"inscan reduction on {name!r}, an array: a scan "
                                    f"reduces scalars")
            if name in ops:
                raise self.error(s, f"inscan reduction: {name!r} is listed twice")
            ops[name] = op
        body = s.body
        top = [k for k, st in enumerate(body) if self.scan_call(st)]
        nested = [n for st in body if not self.scan_call(st) for n in ast.walk(st)
                  if isinstance(n, ast.Call) and _in(self.callee(n.func), SCANS)]
        if nested:
            raise self.error(nested[0], "the scan directive (omp.inclusive or "
                                        "omp.exclusive) must stand directly in the body of "
                                        "the loop with the inscan reduction, not inside an "
                                        "if or an inner loop")
        if len(top) != 1:
            raise self.error(s, f"a loop with an inscan reduction takes one scan directive, "
                                f"omp.inclusive({', '.join(ops)}) or "
                                f"omp.exclusive({', '.join(ops)}), in its body; it has "
                                f"{len(top)}")
        call = body[top[0]].value
        kind = SCANS[self.callee(call.func)]
        if call.keywords or not all(isinstance(a, ast.Name) for a in call.args):
            raise self.error(call, f"omp.{kind}() takes the inscan variables by name")
        named = [a.id for a in call.args]
        if sorted(named) != sorted(ops):
            raise self.error(call, f"omp.{kind}({', '.join(named)}) must name the inscan "
                                   f"reduction variables of its loop, "
                                   f"{', '.join(sorted(ops))}, each once")
        before, after = body[:top[0]], body[top[0] + 1:]
        inputs, scans = (before, after) if kind == "inclusive" else (after, before)
        for st in body:
            for n in _walk_here(st):
                if isinstance(n, ast.Continue):
                    raise self.error(n, "continue in a loop with a scan directive is not "
                                        "supported: put the rest of the iteration under an if")
            for n in ast.walk(st):
                if isinstance(n, ast.For) and self.is_par_loop(n) or isinstance(
                        n, ast.Call) and self.callee(n.func) is lang.barrier:
                    raise self.error(n, "a loop with a scan directive cannot hold a parallel "
                                        "loop or omp.barrier()")
        for name, op in ops.items():
            for st in inputs:
                self.scan_updates(st, name, op, kind)
            for st in scans:
                for n in ast.walk(st):
                    if _assigns(n, name):
                        raise self.error(n, f"{name!r} is assigned in the scan phase (the "
                                            f"statements {_side(kind, False)} "
                                            f"omp.{kind}), which may only read it: update "
                                            f"it in the input phase")
        return Scan(kind, top[0], ops)

    def scan_call(self, st):
        return isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
            and _in(self.callee(st.value.func), SCANS)

    def scan_updates(self, st, name, op, kind):
        """Refuse a use of ``name`` in the input phase other than ``name OP= e`` (``name
        = name OP e``, ``name = max(name, e)`` for max) with ``e`` not reading it."""
        ok = set()
        for n in ast.walk(st):
            e = _update(n, name, op, self.callee)
            if e is not None and not any(isinstance(m, ast.Name) and m.id == name
                                         for m in ast.walk(e)):
                ok |= {id(m) for m in ast.walk(n) if isinstance(m, ast.Name) and m.id == name}
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and n.id == name and id(n) not in ok:
                form = f"{name} = {op}({name}, e)" if op in ("max", "min") \
                    else f"{name} {op}= e"
                raise self.error(n, f"in the input phase of a scan (the statements "
                                    f"{_side(kind, True)} omp.{kind}) {name!r} may only be "
                                    f"updated as {form}, with e not reading {name!r}")

    def scan_var(self, s, op, name, scope, scan):
        """The loop's private copy of an inscan variable."""
        var, t, local = self.scalar_reduction(s, op, name, scope, "s")
        scope.decls.append((local, t))
        scan.vars.append((op, var, local, t))

    def scan_body(self, scan, body):
        """The loop's body in IR, each phase built once; the input phase checked."""
        scan.first = self.block(body[:scan.at])
        scan.second = self.block(body[scan.at + 1:])
        inputs, scans = scan.phases
        what = _effect(inputs, self.sizes)
        side = _side(scan.kind, True)
        if what:
            raise self.error(ast.Pass(lineno=what[0] - self.offset),
                             f"the input phase of a scan (the statements {side} "
                             f"omp.{scan.kind}) runs twice in the parallel scan, so it may "
                             f"only compute values and update the inscan variables; here "
                             f"it {what[1]}: move that to the scan phase")
        if scan.kind == "exclusive":
            both = sorted(_stored(scans, self.sizes) & _read(inputs))
            if both:
                raise self.error(ast.Pass(lineno=inputs[0].line - self.offset),
                                 f"with omp.exclusive the input phase (after it) reads "
                                 f"{both[0]!r}, which the scan phase (before it) writes: "
                                 f"read it into a variable first, before omp.exclusive")
        return scan.first + scan.second

    def scan_lower(self, s, loop, scan):
        """The statements of the two-pass scan that replace ``loop``."""
        line = self.line(s)
        (dim,) = loop.dims
        i64 = T.INT64
        n = self.temp(s, "isn", i64, steps._trip(dim.start, dim.stop, dim.step))
        chunk = self.temp(s, "isc", i64, _max(_div(_add(n, BLOCKS - 1), _i(BLOCKS)), 1))
        blocks = self.temp(s, "isb", i64, _div(_add(n, chunk, -1), chunk))
        tag = f"__inscan{s.lineno}_{s.col_offset}"
        b, k, e = (ir.Var(f"{tag}_{x}", type=i64) for x in ("blk", "k", "e"))
        fscope = self.scopes[-1]
        fscope.decls.append((e.name, i64))
        tots = []
        for r, (op, var, local, t) in enumerate(scan.vars):
            name = f"{tag}_tot{r}"
            at = T.Array(t, 1, "global", (BLOCKS,))
            fscope.decls.append((name, at))
            self.scratch[name] = at
            self.decl_lines.setdefault(name, line)
            tots.append(ir.ArrayRef(name, type=at))

        def tot(r, x):
            return ir.Index(copy.deepcopy(tots[r]), [copy.deepcopy(x)],
                            type=scan.vars[r][3])

        def chunked(body):          # the iterations of chunk b, the loop variable set
            lo = ir.BinOp("*", b, chunk, type=i64)
            hi = ir.Call("min", [_add(lo, chunk), n], type=i64)
            first = ir.Assign(ir.Var(dim.var, type=i64), ir.BinOp(
                "+", dim.start, ir.BinOp("*", k, dim.step, type=i64), type=i64), line=line)
            return ir.For(k.name, lo, hi, _i(1), [first] + copy.deepcopy(body), line=line)

        def par(body):
            p = ir.ParLoop(loop.levels, [ir.Dim(b.name, _i(0), blocks, _i(1))], body,
                           line=line)
            p.decls = list(loop.decls) + [(dim.var, i64), (k.name, i64)]
            p.has_sync = loop.has_sync
            return p
        inputs, _ = scan.phases
        start = [ir.Assign(ir.Var(lc, type=t), ir.Const(_identity(op, t), type=t),
                           line=line) for op, _, lc, t in scan.vars]
        end = [ir.Assign(tot(r, b), ir.Var(lc, type=t), line=line)
               for r, (_, _, lc, t) in enumerate(scan.vars)]
        outer = tuple(lv for lv in loop.levels if lv != "vector")
        if outer and "vector" in loop.levels:   # a chunk's total: a vector reduction
            first = ir.ParLoop(outer, [ir.Dim(b.name, _i(0), blocks, _i(1))],
                               start + [self.scan_totals(scan, loop, inputs, b, k, chunk,
                                                         n, line)] + end, line=line)
            first.decls = [(lc, t) for _, _, lc, t in scan.vars]
        else:
            first = par(start + [chunked(inputs)] + end)
        middle = []
        for r, (op, var, _, t) in enumerate(scan.vars):
            v, x = ir.Var(var, type=t), ir.Var(f"{tag}_t{r}", type=t)
            fscope.decls.append((x.name, t))
            middle += [ir.Assign(x, tot(r, e), line=line),
                       ir.Assign(tot(r, e), v, line=line),
                       ir.Assign(copy.deepcopy(v), combine(op, t, v, x), line=line)]
        ends = ir.For(e.name, _i(0), blocks, _i(1), middle, line=line)
        second = par([ir.Assign(ir.Var(lc, type=t), tot(r, b), line=line)
                      for r, (_, _, lc, t) in enumerate(scan.vars)]
                     + [chunked(scan.first + scan.second)])
        return [first, ends, second]

    def scan_totals(self, scan, loop, inputs, b, k, chunk, n, line):
        """The vector loop over chunk ``b`` that reduces its input phases into the
        scan variables' copies (each lane's own copy of them, then combined)."""
        i64 = T.INT64
        dim = loop.dims[0]
        names, reds = {}, []
        for op, _, lc, t in scan.vars:
            self.rid += 1
            names[lc] = local_name(lc, self.rid, "vector")
            reds.append(ir.Reduction(op, lc, names[lc], t, self.rid))
        body = copy.deepcopy(inputs)
        for node in ir.walk(body):
            if isinstance(node, ir.Var) and node.name in names:
                node.name = names[node.name]
        lo = ir.BinOp("*", b, chunk, type=i64)
        first = ir.Assign(ir.Var(dim.var, type=i64), ir.BinOp(
            "+", dim.start, ir.BinOp("*", k, dim.step, type=i64), type=i64), line=line)
        inner = ir.ParLoop(("vector",), [ir.Dim(k.name, lo, ir.Call(
            "min", [_add(lo, chunk), n], type=i64), _i(1))], [first] + body,
            reductions=reds, line=line)
        inner.decls = [d for d in loop.decls if d[0] not in names] + [(dim.var, i64)]
        return inner

    def scan_directive(self, s):
        """A scan directive the loop did not take: misplaced."""
        name = ast.unparse(s.value.func)
        raise self.error(s, f"{name}() is the scan directive: it stands directly in the "
                            f"body of a parallel loop with an inscan reduction "
                            f"(reduction=\"inscan,+:s\")")


def _identity(op, t):
    if op == "+" or op in ("|", "^"):
        return 0
    if op == "*":
        return 1
    if t.is_bool:
        return op in ("&", "min")
    if op == "&":
        return int(np.iinfo(t.dtype).max) if t.dtype.kind == "u" else -1
    if t.is_float:
        return -np.inf if op == "max" else np.inf
    info = np.iinfo(t.dtype)
    return int(info.min if op == "max" else info.max)


def _update(n, name, op, callee):
    """The operand ``e`` when ``n`` is the statement ``name OP= e`` in one of its
    forms, else None."""
    if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) \
            and n.target.id == name and _AUG.get(type(n.op)) == op:
        return n.value
    if not (isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name):
        return None
    v = n.value
    if op in ("max", "min"):
        if isinstance(v, ast.Call) and callee(v.func) is getattr(builtins, op) \
                and len(v.args) == 2 and not v.keywords:
            args = v.args
        else:
            return None
    elif isinstance(v, ast.BinOp) and _AUG.get(type(v.op)) == op:
        args = [v.left, v.right]
    else:
        return None
    for a, other in ((args[0], args[1]), (args[1], args[0])):
        if isinstance(a, ast.Name) and a.id == name:
            return other
    return None


def _assigns(n, name):
    targets = n.targets if isinstance(n, ast.Assign) else \
        [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
    return any(isinstance(m, ast.Name) and m.id == name
               for t in targets for m in ast.walk(t))


def _walk_here(st):
    """The nodes of a statement outside the loops it holds (a continue's own loop)."""
    todo = [st]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.For, ast.While)) and n is not st:
            continue
        if isinstance(n, (ast.For, ast.While)):
            todo += n.orelse
            continue
        todo += [c for c in ast.iter_child_nodes(n) if isinstance(c, ast.stmt)]


def _private(arr, sizes):
    return arr.type.space == "private" or arr.name in sizes


def _effect(stmts, sizes):
    """(line, what) of the first effect of ``stmts`` other than on scalars and private
    arrays, else None."""
    for st in ir.walk(stmts):
        if not isinstance(st, ir.Stmt):
            continue
        if isinstance(st, (ir.Assign, ir.AtomicAdd)) and isinstance(st.target, ir.Index) \
                and not _private(st.target.array, sizes):
            return st.line, f"stores into {_py(st.target.array.name)!r}"
        if isinstance(st, ir.AtomicAdd):
            return st.line, "has an atomic"
        if isinstance(st, ir.Print):
            return st.line, "prints"
        for n in ir.walk([getattr(st, f) for f in ("value", "expr", "cond")
                          if isinstance(getattr(st, f, None), ir.Expr)]):
            if isinstance(n, ir.Atomic):
                return st.line, "has an atomic"
            if isinstance(n, ir.HelperCall) and n.fn.written:
                return st.line, f"calls {n.fn.pyname}, which writes an array"
    return None


def _stored(stmts, sizes):
    return {_py(n.target.array.name) for n in ir.walk(stmts)
            if isinstance(n, (ir.Assign, ir.AtomicAdd, ir.Atomic))
            and isinstance(n.target, ir.Index) and not _private(n.target.array, sizes)}


def _read(stmts):
    return {_py(n.array.name) for n in ir.walk(stmts) if isinstance(n, ir.Index)}


def _py(cname):
    return cname[:-1] if cname.endswith("_") else cname


def _side(kind, inputs):
    return "before" if (kind == "inclusive") == inputs else "after"


def _in(obj, table):
    try:
        return obj in table
    except TypeError:
        return False
