"""Python's scoping in parallel loops: which outer scalars an iteration makes its own.

A parallel loop's iterations run at once, so a scalar of an enclosing scope that the body
assigns is safe only if each iteration writes it before reading it (it is then private to
the iteration, as Numba's parallel loops infer), or if the loop combines it
(``reduction=``).  Two analyses on the Python AST give the front end what it needs:

- `exposed_reads(body, defined)`: the names some path of one iteration reads before the
  iteration writes them (a loop-carried value), each with the line of such a read;
- `live_after(function_body)`: for every ``for`` statement, the names that may be read
  after it before being written; a name privatized by a parallel loop must not be (after
  the loop Python would see the last iteration's value, the kernel the old one).

Both are conservative: they may report a read that cannot happen, never miss one.
"""
from __future__ import annotations

import ast


def assigned(stmts, nested) -> set:
    """Names assigned by ``stmts`` at this loop level: through nested if/for/while, but
    not inside nested parallel loops (``nested(for_node)`` says which are)."""
    out = set()
    for s in stmts:
        if isinstance(s, ast.For) and nested(s) or isinstance(s, ast.FunctionDef):
            continue
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                out |= {n.id for n in ast.walk(t)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for field in ("body", "orelse"):
            out |= assigned(getattr(s, field, []), nested)
    return out


def assignments(stmts) -> dict:
    """{name: how many statements of a function assign it} (loop targets included; not
    what the functions it defines assign)."""
    out = {}
    todo = list(stmts)
    while todo:
        s = todo.pop()
        if isinstance(s, (ast.FunctionDef, ast.Lambda)):
            continue
        todo += ast.iter_child_nodes(s)
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            for name in _stores(s.targets if isinstance(s, ast.Assign) else [s.target]):
                out[name] = out.get(name, 0) + 1
    return out


def loads(node) -> dict:
    """{name: line} of the names ``node`` reads."""
    out = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.setdefault(n.id, n.lineno)
    return out


_DEAD = None      # the defined-set of a path that cannot reach the next statement


def exposed_reads(stmts, defined, nested, clause_names) -> dict:
    """{name: line} read by some path of ``stmts`` before that path assigns the name,
    starting with the names of ``defined`` assigned.  ``clause_names(for_node)`` gives a
    nested parallel loop's (loop variables, private names, reduction names)."""
    found = {}
    _walk(stmts, set(defined), found, nested, clause_names)
    return found


def _read(node, defined, found):
    for name, line in loads(node).items():
        if name not in defined:
            found.setdefault(name, line)


def _walk(stmts, defined, found, nested, clause_names):
    for s in stmts:
        if defined is _DEAD:
            return _DEAD
        if isinstance(s, ast.Assign):
            _read(s.value, defined, found)
            for t in s.targets:
                if not isinstance(t, (ast.Name, ast.Tuple)):
                    _read(t, defined, found)
            defined = defined | _stores(s.targets)
        elif isinstance(s, ast.AugAssign):
            _read(s.value, defined, found)
            _read(as_load(s.target), defined, found)
            defined = defined | _stores([s.target])
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                _read(s.value, defined, found)
                defined = defined | _stores([s.target])
        elif isinstance(s, ast.If):
            _read(s.test, defined, found)
            a = _walk(s.body, set(defined), found, nested, clause_names)
            b = _walk(s.orelse, set(defined), found, nested, clause_names)
            defined = b if a is _DEAD else a if b is _DEAD else a & b
        elif isinstance(s, ast.While):
            _read(s.test, defined, found)
            _walk(s.body, set(defined), found, nested, clause_names)
        elif isinstance(s, ast.For):
            _read(s.iter, defined, found)
            if nested(s):
                loopvars, private, reductions = clause_names(s)
                for name in reductions:
                    if name not in defined:
                        found.setdefault(name, s.lineno)
                _walk(s.body, defined | loopvars | private | reductions, found, nested,
                      clause_names)
            else:
                _walk(s.body, defined | _stores([s.target]), found, nested, clause_names)
        elif isinstance(s, (ast.Break, ast.Continue)):
            return _DEAD
        elif isinstance(s, ast.Return):
            if s.value is not None:
                _read(s.value, defined, found)
            return _DEAD
        elif isinstance(s, ast.Expr):
            _read(s.value, defined, found)
    return defined


def live_after(body) -> dict:
    """{id(for node): names that may be read after it before being assigned}."""
    out = {}
    _live(body, set(), out, None)
    return out


def _live(stmts, live, out, loop):
    """The names live before ``stmts`` when ``live`` are live after them; ``loop`` is
    (live after the enclosing loop, live at its head) for break and continue."""
    for s in reversed(stmts):
        if isinstance(s, ast.Assign):
            live = (live - _plain(s.targets)) | set(loads(s.value))
            for t in s.targets:
                live |= set(loads(t)) if not isinstance(t, ast.Name) else set()
        elif isinstance(s, ast.AugAssign):
            live = live | set(loads(s.value)) | set(loads(as_load(s.target)))
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                live = (live - _plain([s.target])) | set(loads(s.value))
        elif isinstance(s, ast.If):
            live = (set(loads(s.test)) | _live(s.body, live, out, loop)
                    | _live(s.orelse, live, out, loop))
        elif isinstance(s, (ast.For, ast.While)):
            after = live
            if isinstance(s, ast.For):
                out[id(s)] = set(after)
            head = set(after)
            while True:
                body_in = _live(s.body, head, out, (after, head))
                new = after | (body_in - _plain([s.target]) if isinstance(s, ast.For)
                               else body_in | set(loads(s.test)))
                if new == head:
                    break
                head = new
            live = head | set(loads(s.iter if isinstance(s, ast.For) else s.test))
        elif isinstance(s, ast.Break):
            live = set(loop[0]) if loop else set()
        elif isinstance(s, ast.Continue):
            live = set(loop[1]) if loop else set()
        elif isinstance(s, ast.Return):
            live = set(loads(s.value)) if s.value is not None else set()
        elif isinstance(s, ast.Expr):
            live = live | set(loads(s.value))
    return live


def _stores(targets):
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _plain(targets):
    """Names a target list assigns as a whole (a subscript assigns an element only)."""
    return {n.id for t in targets for n in ([t] if isinstance(t, ast.Name) else
                                            t.elts if isinstance(t, ast.Tuple) else [])
            if isinstance(n, ast.Name)}


def as_load(node):
    """The same target read (``x`` of ``x += 1``)."""
    if isinstance(node, ast.Name):
        return ast.copy_location(ast.Name(id=node.id, ctx=ast.Load()), node)
    if isinstance(node, ast.Subscript):
        return ast.copy_location(ast.Subscript(value=node.value, slice=node.slice,
                                               ctx=ast.Load()), node)
    return node
