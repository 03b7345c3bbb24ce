"""The C functions that give kernels Python's and numpy's arithmetic (`arith_helpers`),
which each dialect's preamble defines, and their generic names (`ARITH`, the names
`Dialect.call` turns into calls of them).
"""
from __future__ import annotations

from . import types as T

ARITH = ("min", "max", "minimum", "maximum", "abs", "floordiv", "mod", "shl", "shr", "ipow")


def arith_helpers(qual: str, type_name, f32_suffix: str, guard=None) -> str:
    """The C text of the functions that give kernels Python's and numpy's arithmetic,
    for every scalar type T (``qual`` opens each definition, e.g. "static inline"):

    - pyg_min_T, pyg_max_T: Python's min/max of two (the first wins ties and NaN);
      pyg_minimum_T, pyg_maximum_T: numpy's (a NaN wins);
    - pyg_abs_T (signed integers);
    - pyg_floordiv_T, pyg_mod_T: floor division and the remainder with the divisor's
      sign; integers: x // 0 == x % 0 == 0, MIN // -1 == MIN, nothing traps; floats:
      numpy's floor_divide and remainder (inf and nan where numpy gives them);
    - pyg_shl_T, pyg_shr_T (integers): numpy's shifts, whose count may be out of range;
    - pyg_ipow_T (integers): a ** b by squaring, wrapping; a negative b gives the
      integer part of the real result.

    ``guard(t)`` may return (line before, line after) around a type's functions."""
    out = []
    for t in T.SCALARS.values():
        c, n = type_name(t), t.name
        pre, post = guard(t) if guard else ("", "")
        if pre:
            out.append(pre)

        def fn(name, params, body):
            out.append(f"{qual} {c} pyg_{name}_{n}({params}) {{ {body} }}")

        ab = f"{c} a, {c} b"
        fn("min", ab, "return b < a ? b : a;")
        fn("max", ab, "return b > a ? b : a;")
        if t.is_float:
            fn("minimum", ab, "return (a < b || a != a) ? a : b;")
            fn("maximum", ab, "return (a > b || a != a) ? a : b;")
            f = f32_suffix if t == T.FLOAT32 else ""
            fn("mod", ab, f"{c} r = fmod{f}(a, b); if (b == 0) return r; "
                          f"if (r == 0) return copysign{f}(({c})0, b); "
                          f"return ((r < 0) != (b < 0)) ? r + b : r;")
            fn("floordiv", ab, f"if (b == 0) return a / b; {c} r = fmod{f}(a, b); "
                               f"{c} d = (a - r) / b; if (r != 0 && (r < 0) != (b < 0)) d -= 1; "
                               f"if (d == 0) return copysign{f}(({c})0, a / b); "
                               f"{c} q = floor{f}(d); return d - q > ({c})0.5 ? q + 1 : q;")
        else:
            fn("minimum", ab, "return b < a ? b : a;")
            fn("maximum", ab, "return b > a ? b : a;")
        if t.is_int:
            bits = 8 * t.size
            u = type_name(T.SCALARS["u" + n] if t.is_signed else t)
            if t.is_signed:
                fn("abs", f"{c} a", "return a < 0 ? -a : a;")
                fn("floordiv", ab, f"if (b == 0) return 0; if (b == -1) return ({c})(({u})0 - ({u})a); "
                                   f"{c} q = a / b, r = a % b; "
                                   f"return (r != 0 && (r < 0) != (b < 0)) ? q - 1 : q;")
                fn("mod", ab, f"if (b == 0 || b == -1) return 0; {c} r = a % b; "
                              f"return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;")
                fn("shr", ab, f"return ({u})b < {bits} ? a >> b : (a < 0 ? -1 : 0);")
            else:
                fn("floordiv", ab, "return b == 0 ? 0 : a / b;")
                fn("mod", ab, "return b == 0 ? 0 : a % b;")
                fn("shr", ab, f"return ({u})b < {bits} ? a >> b : 0;")
            fn("shl", ab, f"return ({u})b < {bits} ? ({c})(({u})a << b) : 0;")
            neg = (f"if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0; "
                   if t.is_signed else "")
            w = u if t.size >= 4 else type_name(T.UINT32)     # no promotion to int
            fn("ipow", ab, f"{neg}{w} r = 1, x = ({u})a; "
                           f"while (b) {{ if (b & 1) r *= x; x *= x; b >>= 1; }} return ({c})r;")
        if post:
            out.append(post)
    return "\n".join(out) + "\n"
