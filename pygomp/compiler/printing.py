"""``print(...)`` in kernels: one printf of a format built from the items, as close to
Python's output as printf allows (floats are printf's ``%g``: 6 significant digits,
``1.0`` prints as ``1``)."""
from __future__ import annotations


def literal(text: str) -> str:
    """``text`` inside a C string literal, UTF-8, its ``%`` doubled (a printf format)."""
    out = []
    for b in text.replace("%", "%%").encode():
        c = chr(b)
        out.append(_ESCAPES.get(c) or (c if 32 <= b < 127 and c != "?" else f"\\{b:03o}"))
    return "".join(out)


_ESCAPES = {"\n": "\\n", "\t": "\\t", '"': '\\"', "\\": "\\\\"}


def printf_args(em, s) -> list:
    """The arguments of printf for the ir.Print ``s``: the format, then the values."""
    fmt, args = [], []
    for item in s.items:
        if isinstance(item, str):
            fmt.append(literal(item))
        else:
            spec, arg = em.d.print_item(item.type, em.expr(item))
            fmt.append(spec)
            args.append(arg)
    return ['"' + literal(s.sep).join(fmt) + literal(s.end) + '"'] + args
