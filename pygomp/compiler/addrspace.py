"""Address-space inference for targets without a generic address space (OpenCL C 1.2).

Spaces follow SYCL 2020: mapped arrays are global, team-shared arrays local, private
arrays private.  Kernel parameters and array declarations know their space; a helper's
array parameters take the spaces of the arrays it is called with, so a helper called with
a global array and with a local one becomes two clones, one for each signature
(``name__g``, ``name__l``, ``name__gl``, ...).  A pointer that would have to change
space (an array variable bound to arrays of two spaces, a local or private array
returned from a function) is a CompileError at its Python line.

`infer(kernel)` returns the kernel with every HelperCall pointing at its clone and
``kernel.helpers`` listing the clones, callees first.  The input is not modified.  The
front end already specializes helpers by argument type, space included, so on its output
`infer` reuses every helper as it is; `check(kernel)` verifies that property.
"""
from __future__ import annotations

import copy
from dataclasses import replace

from . import ir
from .types import Array

LETTER = {"global": "g", "local": "l", "private": "p", "constant": "c"}


def infer(kernel: ir.Function) -> ir.Function:
    return _Inference(kernel).run()


def signature_suffix(spaces) -> str:
    return "__" + "".join(LETTER[s] for s in spaces) if spaces else ""


class _Inference:
    def __init__(self, kernel):
        self.kernel = kernel
        self.clones = {}         # (id(helper), spaces) -> clone
        self.order = []          # clones, callees first

    def run(self):
        k = self._copy(self.kernel)
        self._visit(k, {n: t.space for n, t in k.params if isinstance(t, Array)}, ())
        k.helpers = list(self.order)
        return k

    def _copy(self, fn):
        """A copy of fn's body whose HelperCalls still point at the original helpers."""
        memo = {id(h): h for h in _all_helpers(fn)}
        new = copy.copy(fn)
        new.body = copy.deepcopy(fn.body, memo)
        new.params = list(fn.params)
        return new

    def _visit(self, fn, spaces, stack):
        """Give every array use in fn its space; clone the helpers it calls."""
        spaces = dict(spaces)
        decls = list(fn.decls)
        for st in ir.walk(fn.body):
            if isinstance(st, ir.ParLoop):
                decls += st.decls
            elif type(st).__name__ in ("ArrayInit", "ArrayDecl"):
                decls.append((st.name, st.type))
        for name, t in decls:
            if isinstance(t, Array):
                spaces[name] = t.space
        for node in ir.walk(fn.body):
            if isinstance(node, ir.Assign) and _is_array(node.value):
                self._bind(fn, node, spaces)
        for node in ir.walk(fn.body):
            if isinstance(node, ir.ArrayRef) and node.name in spaces \
                    and isinstance(node.type, Array):
                node.type = replace(node.type, space=spaces[node.name])
            elif isinstance(node, ir.Return) and node.value is not None \
                    and _is_array(node.value):
                sp = spaces.get(node.value.name, node.value.type.space)
                if sp != "global" or fn.is_kernel:
                    raise _error(fn, node.line,
                                 f"returning the {sp} array {node.value.name!r}: a "
                                 f"{'kernel' if fn.is_kernel else 'function'} may not "
                                 f"return a pointer to {sp} memory")
        for node in ir.walk(fn.body):
            if isinstance(node, ir.HelperCall):
                node.fn = self._clone(fn, node, stack)

    def _bind(self, fn, node, spaces):
        value, target = node.value, node.target
        sp = spaces.get(value.name, value.type.space)
        if isinstance(target, ir.Index):
            raise _error(fn, node.line, f"storing a pointer to the {sp} array "
                                        f"{value.name!r} into memory is not supported")
        name = target.name
        old = spaces.get(name)
        if old is not None and old != sp:
            raise _error(fn, node.line,
                         f"array variable {name!r} refers to {old} and to {sp} memory; "
                         f"OpenCL C 1.2 has no generic address space")
        spaces[name] = sp

    def _clone(self, caller, call, stack):
        helper = call.fn
        arrays = [i for i, (_, t) in enumerate(helper.params) if isinstance(t, Array)]
        sig = tuple(_space_of(call.args[i]) for i in arrays)
        key = (id(helper), sig)
        if key in self.clones:
            return self.clones[key]
        if key in stack:
            raise _error(caller, 0, f"recursive call of {helper.pyname!r}")
        if tuple(helper.params[i][1].space for i in arrays) == sig:
            self.clones[key] = helper           # already this signature
            self._visit(self._copy(helper), {n: t.space for n, t in helper.params
                                             if isinstance(t, Array)}, stack + (key,))
            self.order.append(helper)
            return helper
        clone = self._copy(helper)
        clone.name = helper.name + signature_suffix(sig)
        params = list(helper.params)
        for i, sp in zip(arrays, sig):
            n, t = params[i]
            params[i] = (n, replace(t, space=sp))
        clone.params = params
        if isinstance(clone.ret, Array):
            raise _error(helper, helper.line, f"{helper.pyname!r} returns an array; "
                                              f"functions return scalars")
        self._visit(clone, {n: t.space for n, t in params if isinstance(t, Array)},
                    stack + (key,))
        clone.helpers = []
        self.clones[key] = clone
        self.order.append(clone)
        return clone


def check(kernel: ir.Function) -> None:
    """Every array passed to a helper has the space of the helper's parameter, so each
    helper has one address-space signature (a CompileError at the call otherwise)."""
    for fn in [kernel] + list(kernel.helpers):
        for st in ir.walk(fn.body):
            if not isinstance(st, ir.Stmt):
                continue
            for node in ir.walk(st):
                if isinstance(node, ir.HelperCall):
                    for a, (name, t) in zip(node.args, node.fn.params):
                        if isinstance(t, Array) and _space_of(a) != t.space:
                            raise _error(fn, st.line,
                                         f"{_space_of(a)} array passed to the {t.space} "
                                         f"parameter {name!r} of {node.fn.pyname!r}")


def signatures(kernel: ir.Function) -> dict:
    """{helper Python name: [address-space signature, ...]} of a kernel's helpers."""
    out = {}
    for h in kernel.helpers:
        sig = "".join(LETTER[t.space] for _, t in h.params if isinstance(t, Array))
        out.setdefault(h.pyname, []).append(sig)
    return out


def _is_array(e):
    return isinstance(e, ir.ArrayRef) and isinstance(e.type, Array)


def _space_of(e):
    if isinstance(e, ir.ArrayRef) and isinstance(e.type, Array):
        return e.type.space
    return "private"


def _all_helpers(fn, seen=None):
    seen = {} if seen is None else seen
    for h in fn.helpers:
        if id(h) not in seen:
            seen[id(h)] = h
            _all_helpers(h, seen)
    for node in ir.walk(fn.body):
        if isinstance(node, ir.HelperCall) and id(node.fn) not in seen:
            seen[id(node.fn)] = node.fn
            _all_helpers(node.fn, seen)
    return list(seen.values())


def _error(fn, line, message):
    try:
        from .errors import CompileError
    except ImportError:
        try:
            from .frontend import CompileError
        except ImportError:
            CompileError = SyntaxError
    where = f"{fn.file}:{line or fn.line}"
    try:
        return CompileError(message, file=fn.file, line=line or fn.line)
    except TypeError:
        return CompileError(f"{where}: {message}")
