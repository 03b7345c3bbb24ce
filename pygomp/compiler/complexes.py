"""Complex numbers (complex64, complex128): their front end and their C text.

The IR keeps the usual nodes with a complex type (BinOp + - * /, Unary -, Compare == !=,
Cast, Const) and a few named Calls: "cmake" (``complex(a, b)``), "real", "imag", "conj",
"abs" (a real result), "exp", "sqrt".  The emitter turns each into a call of a small
function of the unit, ``pyg_c<op>_<type>`` (`helpers`), written once for every dialect
from three hooks of `dialect.Dialect`: the type's name, how to make one from two parts
(`Dialect.complex_make`) and how to read a part (`Dialect.complex_part`).  The host
spells a complex as C99 ``_Complex``, OpenCL and CUDA as a struct of two floats or
doubles (``pyg_complex64``: no vector type, whose alignment would exceed a scratch
word's).  Arithmetic is numpy's: the plain product, Smith's division, abs by hypot, exp
and sqrt on the parts (no C99 Annex G recovery of infinities).
"""
from __future__ import annotations

import ast
import dataclasses

from . import ir
from . import types as T

OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
FUNCS = ("exp", "sqrt")     # the math functions that take a complex


def involved(e) -> bool:
    """Whether an IR expression computes on complex values (its type or an argument's)."""
    t = e.type
    if isinstance(t, T.Scalar) and t.is_complex:
        return True
    args = e.args if isinstance(e, ir.Call) else [getattr(e, "left", None),
                                                  getattr(e, "operand", None)]
    return any(a is not None and isinstance(a.type, T.Scalar) and a.type.is_complex
               for a in args)


def uses(fn: ir.Function) -> bool:
    """Whether a kernel (or one of its helpers) has a complex value anywhere."""
    def cx(t):
        t = getattr(t, "elem", t)
        return isinstance(t, T.Scalar) and t.is_complex
    for f in [fn] + list(fn.helpers):
        if any(cx(t) for _, t in list(f.params) + list(f.decls)) or cx(f.ret):
            return True
        for n in ir.walk(f.body):
            if cx(getattr(n, "type", None)):
                return True
    return False


# -- the front end -------------------------------------------------------------------

def binop(fe, op, a, b, t, node):
    """``a op b`` with complex type ``t`` (the promoted type of a and b)."""
    weak = a.weak and b.weak
    if op in OPS:
        return ir.BinOp(op, fe.convert(a, t, node), fe.convert(b, t, node), type=t, weak=weak)
    if op == "**" and isinstance(b, ir.Const) and isinstance(b.value, int) \
            and not isinstance(b.value, bool) and 0 <= b.value <= 4:
        out = fe.convert(ir.Const(1, type=T.INT64, weak=True), t, node)
        for k in range(b.value):
            x = fe.convert(a, t, node)
            out = x if k == 0 else ir.BinOp("*", out, x, type=t)
        return out
    if op == "**":
        raise fe.error(node, "a complex power needs an integer literal exponent from 0 to 4 "
                             "(z ** 2); write other powers with np.exp and np.log")
    raise fe.error(node, f"operator {op} does not apply to complex numbers")


def compare(fe, op, a, b, t, node):
    if op not in ("==", "!="):
        raise fe.error(node, f"complex numbers have no order: {op} does not apply to {t} "
                             f"(compare abs(z) or z.real)")
    return ir.Compare(op, fe.convert(a, t, node), fe.convert(b, t, node), type=T.BOOL)


def part(v, name):
    """``v.real`` or ``v.imag`` of a scalar expression."""
    if v.type.is_complex:
        return ir.Call(name, [v], type=v.type.real)
    if name == "real":
        return v
    return ir.Const(0, type=v.type if not v.type.is_bool else T.INT64, weak=v.weak)


def make(fe, args, t, node):
    """``complex(a[, b])`` or ``np.complex64(a)``: a complex ``t`` (None: Python's
    complex, complex128)."""
    if len(args) not in (1, 2):
        raise fe.error(node, f"{ast.unparse(node.func)}() takes one or two numbers")
    weak = t is None                # Python's complex is weak (NEP 50)
    if any(a.type.is_complex for a in args):
        v = args[0] if len(args) == 1 else fe.binop(
            "+", args[0], fe.binop("*", args[1], fe.const(1j, node), node), node)
        v = fe.convert(v, t or T.COMPLEX128, node)
        return dataclasses.replace(v, weak=True) if weak else v
    t = t or T.COMPLEX128
    re = [fe.convert(a, t.real, node) for a in args]
    return ir.Call("cmake", re + [fe.convert(ir.Const(0.0, type=T.FLOAT64, weak=True),
                                             t.real, node)] * (2 - len(re)), type=t,
                   weak=weak)


def call(fe, name, args, node):
    """A math function (``np.exp``, ``abs``, ``np.conj``, ...) of a complex argument."""
    if len(args) != 1:
        raise fe.error(node, f"{ast.unparse(node.func)}() takes one number")
    z = args[0]
    t = z.type
    if name == "abs":
        return ir.Call("abs", [z], type=t.real)
    if name in ("conj", "real", "imag"):
        return ir.Call(name, [z], type=t if name == "conj" else t.real) if t.is_complex \
            else (z if name != "imag" else part(z, "imag"))
    if name in FUNCS:
        return ir.Call(name, [z], type=t)
    raise fe.error(node, f"{ast.unparse(node.func)}() of a complex number is not supported "
                         f"in kernels (complex: abs, np.conj, np.exp, np.sqrt, .real, .imag)")


# -- the C text ----------------------------------------------------------------------

def fn(t: T.Scalar, op: str) -> str:
    return f"pyg_c{op}_{t.name}"


def const(d, value, t) -> str:
    v = complex(value)
    r = t.real
    return f"{fn(t, 'make')}({d.const(v.real, r)}, {d.const(v.imag, r)})"


def expr(em, e) -> str:
    """The text of a complex IR expression (see `involved`)."""
    d, x = em.d, em.expr
    if isinstance(e, ir.BinOp):
        return f"{fn(e.type, OPS[e.op])}({x(e.left)}, {x(e.right)})"
    if isinstance(e, ir.Unary):
        return f"{fn(e.type, 'neg')}({x(e.operand)})" if e.op == "-" else x(e.operand)
    if isinstance(e, ir.Compare):
        eq = f"{fn(e.left.type, 'eq')}({x(e.left)}, {x(e.right)})"
        return eq if e.op == "==" else f"(!{eq})"
    if isinstance(e, ir.Cast):
        src = e.operand.type
        if src.is_complex:
            return f"{fn(e.type, 'from')}({x(e.operand)})"
        return f"{fn(e.type, 'make')}({x(e.operand)}, 0)"
    if e.fn in ("real", "imag"):
        return d.complex_part(x(e.args[0]), e.fn)
    if e.fn == "cmake":
        return f"{fn(e.type, 'make')}({', '.join(x(a) for a in e.args)})"
    return f"{fn(e.args[0].type, e.fn)}({x(e.args[0])})"


def helpers(d) -> str:
    """The functions of `expr` for both complex types, in dialect ``d``."""
    out = []
    for t in (T.COMPLEX64, T.COMPLEX128):
        c, r = d.type_name(t), d.type_name(t.real)
        pre, post = d.fp64_guard if t == T.COMPLEX128 else ("", "")
        if pre:
            out.append(pre)
        if d.complex_struct:
            out.append(f"typedef struct {{ {r} x, y; }} {c};")

        def f(op, ret, params, body):
            out.append(f"{d.inline} {ret} {fn(t, op)}({params}) {{ {body} }}")

        def m(name, *args):         # a real math function
            return d.call(name, t.real, list(args))
        re, im = (lambda z: d.complex_part(z, "real")), (lambda z: d.complex_part(z, "imag"))
        mk = fn(t, "make")
        ab, ri = f"{c} a, {c} b", f"const {r} ar = {re('a')}, ai = {im('a')}"
        rib = f"{ri}, br = {re('b')}, bi = {im('b')};"
        f("make", c, f"{r} x, {r} y", f"return {d.complex_make(t, 'x', 'y')};")
        f("add", c, ab, f"{rib} return {mk}(ar + br, ai + bi);")
        f("sub", c, ab, f"{rib} return {mk}(ar - br, ai - bi);")
        f("mul", c, ab, f"{rib} return {mk}(ar * br - ai * bi, ar * bi + ai * br);")
        f("div", c, ab, f"{rib} const {r} fr = {m('abs', 'br')}, fi = {m('abs', 'bi')}; "
                        f"if (fr >= fi) {{ if (fr == 0 && fi == 0) "
                        f"return {mk}(ar / fr, ai / fr); "
                        f"const {r} q = bi / br, s = 1 / (br + bi * q); "
                        f"return {mk}((ar + ai * q) * s, (ai - ar * q) * s); }} "
                        f"const {r} q = br / bi, s = 1 / (bi + br * q); "
                        f"return {mk}((ar * q + ai) * s, (ai * q - ar) * s);")
        f("neg", c, f"{c} a", f"return {mk}(-{re('a')}, -{im('a')});")
        f("conj", c, f"{c} a", f"return {mk}({re('a')}, -{im('a')});")
        f("eq", "int", ab, f"{rib} return ar == br && ai == bi;")
        f("abs", r, f"{c} a", f"return {m('hypot', re('a'), im('a'))};")
        f("exp", c, f"{c} a", f"{ri}; const {r} e = {m('exp', 'ar')}; "
                              f"if (ai == 0) return {mk}(e, ai); "
                              f"return {mk}(e * {m('cos', 'ai')}, e * {m('sin', 'ai')});")
        half = f"({m('abs', 'ar')} + {m('hypot', 'ar', 'ai')}) / 2"
        f("sqrt", c, f"{c} a", f"{ri}; if (ar == 0 && ai == 0) return {mk}(0, ai); "
                               f"if ({m('isinf', 'ai')}) return {mk}(INFINITY, ai); "
                               f"const {r} s = {m('sqrt', half)}; "
                               f"if (ar >= 0) return {mk}(s, ai / (2 * s)); "
                               f"return {mk}({m('abs', 'ai')} / (2 * s), "
                               f"{m('copysign', 's', 'ai')});")
        if t == T.COMPLEX128:       # conversions between the two widths
            for a, b in ((T.COMPLEX64, T.COMPLEX128), (T.COMPLEX128, T.COMPLEX64)):
                out.append(f"{d.inline} {d.type_name(a)} {fn(a, 'from')}({d.type_name(b)} z) "
                           f"{{ return {fn(a, 'make')}(({d.type_name(a.real)}){re('z')}, "
                           f"({d.type_name(a.real)}){im('z')}); }}")
        if post:
            out.append(post)
    return "\n".join(out) + "\n"
