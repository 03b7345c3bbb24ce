"""Address spaces for targets without a generic address space (OpenCL C 1.2).

Spaces follow SYCL 2020: mapped arrays are global, team-shared arrays local, private
arrays private.  Kernel parameters and array declarations know their space; the front
end specializes a helper by its argument types, spaces included, so a helper called with
a global array and with a local one becomes two helpers.  `check(kernel)` verifies that
every call passes arrays of its helper's spaces; `signatures` lists them.
"""
from __future__ import annotations

from ..errors import CompileError
from . import ir
from .types import Array

LETTER = {"global": "g", "local": "l", "private": "p", "constant": "c"}


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


def _space_of(e):
    if isinstance(e, ir.View):
        return e.array.type.space
    if isinstance(e, ir.ArrayRef) and isinstance(e.type, Array):
        return e.type.space
    return "private"


def _error(fn, line, message):
    return CompileError(message, file=fn.file, line=line or fn.line)
