"""A kernel's argument words and private scratch, as the plugin sees them.

`arg_words` names the words a launch passes (in the order of
`pygomp.runtime.plugin.KernelInfo.args`, whose kinds `word_kinds` gives);
`private_terms` and `elem_words` size the private scratch of each participant
(`KernelInfo.private`); `written` says which array parameters the kernel stores into.
"""
from __future__ import annotations

from ..errors import CompileError
from . import ir
from . import types as T

def written(fn: ir.Function) -> dict:
    """``{C name: "file:line"}`` of the array parameters the kernel stores into."""
    return {p: f"{fn.file}:{line}" for p, line in fn.written.items()}


def arg_words(fn: ir.Function):
    """[(C name, type, role)], one per argument word (in the order of
    `pygomp.runtime.plugin.KernelInfo.args`); role is "array", "shape", "scalar",
    "real" and "imag" (the parts of a complex scalar) or "ret"."""
    out = []
    for name, t in fn.params:
        if isinstance(t, T.Array):
            out.append((name, t, "array"))
            out += [(f"{name}__s{k}", T.INT64, "shape") for k in range(t.ndim)]
        elif t.is_complex:
            out += [(f"{name}__re", t.real, "real"), (f"{name}__im", t.real, "imag")]
        else:
            out.append((name, t, "scalar"))
    if fn.ret is not T.VOID:
        out.append((fn.ret_param, fn.ret, "ret"))
    return out


_WORD_KINDS = {"bool": "u8", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
               "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64",
               "float32": "f32", "float64": "f64"}


def word_kinds(fn: ir.Function) -> tuple:
    """`KernelInfo.args` of a kernel: "p" for an address, else the scalar's kind."""
    return tuple("p" if role in ("array", "ret") else _WORD_KINDS[t.name]
                 for _, t, role in arg_words(fn))


def private_terms(fn: ir.Function) -> tuple:
    """`KernelInfo.private` of a kernel: its private arrays sized at run time and its
    array reduction copies (``fn.sizes``), one 8-byte word per element (two for a
    complex128) and participant; an extent must be a constant, a scalar argument or an
    array extent (the plugin multiplies argument words)."""
    index = {name: k for k, (name, _, _) in enumerate(arg_words(fn))}
    terms = []
    per = elem_words(fn)
    for name, dims in fn.sizes.items():
        size, words = 8 * per.get(name, 1), []
        for e in dims:
            if isinstance(e, ir.Const):
                size *= int(e.value)
            elif isinstance(e, ir.Shape):
                words.append(index[f"{e.array.name}__s{e.dim}"])
            elif isinstance(e, ir.Var) and e.name in index:
                words.append(index[e.name])
            else:
                raise CompileError(f"the extents of the private array {name!r} must be "
                                   f"constants, scalar arguments or array extents (their "
                                   f"product sizes it before the launch)", fn.file,
                                   fn.decl_lines.get(name, fn.line))
        terms.append((size, tuple(words)))
    return tuple(terms)


def elem_words(fn: ir.Function) -> dict:
    """{private array or array reduction copy: the 8-byte words of one element}."""
    arrays = list(fn.decls)
    for n in ir.walk(fn.body):
        if isinstance(n, ir.ParLoop):
            arrays += n.decls + [(r.local, r.type) for r in n.reductions]
    return {name: t.elem.words for name, t in arrays if isinstance(t, T.Array)}
