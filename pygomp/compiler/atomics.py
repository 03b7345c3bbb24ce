"""``omp.atomic_<op>`` with its old value (`ir.Atomic`): a dialect's native instruction
where it has one (`Dialect.atomic_native`), else a compare-and-swap loop on the element,
or on the 32-bit word that contains it where the device swaps no smaller words.

A CAS loop takes no lock: each round, one contender's swap succeeds, so lanes of one warp
never spin waiting for each other (as they could on a lock held by a lane of their warp).
Words are little-endian on every device pygomp targets.
"""
from __future__ import annotations

from . import types as T

_UNSIGNED = {1: T.UINT8, 2: T.UINT16, 4: T.UINT32, 8: T.UINT64}


def _when(op, old):
    """The condition under which ``op`` writes, given the old value."""
    return {"max": f"pyg_v > {old}", "min": f"pyg_v < {old}",
            "cas": f"{old} == pyg_e"}.get(op, "1")


def _new(op, old):
    return f"{old} + pyg_v" if op == "add" else "pyg_v"


def emit(em, a, result, plain=False):
    """The atomic ``a`` as a block of statements; ``result``: where its old value goes
    (None: nowhere).  ``plain``: memory no other work-item sees (no atomics needed)."""
    d, t = em.d, a.type
    c = d.type_name(t)
    space = a.target.array.type.space
    em.line("{")
    with em.indent():
        em.line(f"{c} pyg_v = {em.expr(a.value)};")
        if a.expected is not None:
            em.line(f"{c} pyg_e = {em.expr(a.expected)};")
        target = em.expr(a.target)
        native = None if plain else d.atomic_native(em, a, f"&{target}")
        if plain or native is not None:
            get = native or target
            if result is not None or native is None:
                em.line(f"{c} pyg_o = {get};")
            else:
                em.line(f"(void){get};")
            if native is None:
                em.line(f"if ({_when(a.op, 'pyg_o')}) {target} = {_new(a.op, 'pyg_o')};")
        elif t.size in d.cas_sizes:
            _loop(em, a, t, space, target)
        else:
            _subword(em, a, t, space, target)
        if result is not None:
            em.line(f"{result} = pyg_o;")
    em.line("}")


def _loop(em, a, t, space, target):
    """CAS on the element itself, its bits in an unsigned word of its size."""
    d = em.d
    c, w = d.type_name(t), d.type_name(_UNSIGNED[t.size])
    em.line(f"{d.atomic_pointer(space, w)}pyg_p = ({d.atomic_pointer(space, w)})&{target};")
    em.line(f"union {{ {w} w; {c} v; }} pyg_u, pyg_n;")
    em.line(f"{w} pyg_s;")
    em.line("pyg_u.w = *pyg_p;")
    em.line(f"while ({_when(a.op, 'pyg_u.v')}) {{")
    with em.indent():
        em.line(f"pyg_n.v = {_new(a.op, 'pyg_u.v')};")
        em.line(f"pyg_s = {d.atomic_swap(space, t.size, 'pyg_p', 'pyg_u.w', 'pyg_n.w')};")
        em.line("if (pyg_s == pyg_u.w) break;")
        em.line("pyg_u.w = pyg_s;")
    em.line("}")
    em.line(f"{c} pyg_o = pyg_u.v;")


def _subword(em, a, t, space, target):
    """CAS on the aligned 32-bit word holding an 8- or 16-bit element."""
    d = em.d
    c, uc, w = d.type_name(t), d.type_name(_UNSIGNED[t.size]), d.type_name(T.UINT32)
    ptr, bytes_ = d.atomic_pointer(space, w), d.atomic_pointer(space, d.type_name(T.UINT8))
    em.line(f"{bytes_}pyg_b = ({bytes_})&{target};")
    em.line("const unsigned int pyg_sh = (unsigned int)((size_t)pyg_b & 3) * 8u;")
    em.line(f"{ptr}pyg_p = ({ptr})(pyg_b - ((size_t)pyg_b & 3));")
    em.line(f"const {w} pyg_m = (({w}){(1 << 8 * t.size) - 1}u) << pyg_sh;")
    em.line(f"{w} pyg_w = *pyg_p, pyg_s;")
    em.line(f"{c} pyg_o = ({c})({uc})(pyg_w >> pyg_sh);")
    em.line(f"while ({_when(a.op, 'pyg_o')}) {{")
    with em.indent():
        em.line(f"{c} pyg_n = ({c})({_new(a.op, 'pyg_o')});")
        new = f"(pyg_w & ~pyg_m) | (({w})({uc})pyg_n << pyg_sh)"
        em.line(f"pyg_s = {d.atomic_swap(space, 4, 'pyg_p', 'pyg_w', new)};")
        em.line("if (pyg_s == pyg_w) break;")
        em.line("pyg_w = pyg_s;")
        em.line(f"pyg_o = ({c})({uc})(pyg_w >> pyg_sh);")
    em.line("}")
