"""Bounds checking: each array access of a kernel compiled with ``boundscheck`` is
checked against the array's extent on every axis, as numpy would check it.

Such a kernel takes one more array parameter, the error record (`RECORD`: `WORDS`
int64 words, zero at the launch).  The first access out of range takes the record by
an atomic compare-and-swap of its first 32-bit word from 0 to 1, then writes the site
(an index into `emit.Unit.sites`, each a ``(file, line)``), the index, the axis and
the extent (words 1 to 4).  The access itself is not done: a read gives 0, a store or
an atomic is skipped.  The runtime reads the record once the kernel ends (`message`).

The C text (`functions`, spelled by the dialect's `claim`, `record_pointer` and
`inline`): ``pyg_ix(record, site, axis, k, i, n)`` folds index ``i`` of extent ``n``
into the flat index ``k`` of the axes before it (``k * n + i``), or gives -1, taking
the record when ``i`` is out of range and ``k`` was not already -1; ``pyg_ok(k)`` is
``k``, or 0 for -1 (the address of a view passed to a helper, whose own accesses are
checked); a read is ``pyg_rd<N>(pointer, k)``, one function a pointer type, which
reads nothing for -1.  A negative index reaches the check already counted from the end
(the front end added the extent), so a value below 0 stood for the index minus the
extent: the record gets the index as the source wrote it.
"""
from __future__ import annotations

import contextlib
import copy
import math

from . import ir, records
from . import types as T

RECORD = "__bc"         # the record's parameter name (a C name no Python name becomes)
WORDS = 8               # int64 words of a record: taken, site, index, axis, extent, spare


def functions(d, wrapped=True) -> str:
    """``pyg_ix`` and ``pyg_ok`` in dialect ``d`` (``wrapped``: the front end added the
    extent to negative indices; without wraparound the index reaches the check as is)."""
    i64, u64, q = d.type_name(T.INT64), d.type_name(T.UINT64), d.inline
    return (f"{q} {i64} pyg_ix({d.record_pointer()}r, {i64} site, {i64} axis, {i64} k, "
            f"{i64} i, {i64} n)\n"
            "{\n"
            f"    if (k >= 0 && ({u64})i < ({u64})n)\n        return k * n + i;\n"
            "    if (k < 0)\n        return -1;\n"
            f"    if ({d.claim('r')}) {{\n"
            f"        r[1] = site; r[2] = {'i < 0 ? i - n : i' if wrapped else 'i'}; "
            "r[3] = axis; r[4] = n;\n"
            "    }\n"
            "    return -1;\n"
            "}\n"
            f"{q} {i64} pyg_ok({i64} k) {{ return k < 0 ? 0 : k; }}\n")


def site(em) -> int:
    """The number of the current Python line of the emitter (a new one if unseen)."""
    key = (em.cur.file, em.site_line or em.last or em.cur.line)
    n = em.site_ids.get(key)
    if n is None:
        n = em.site_ids[key] = len(em.sites)
        em.sites.append(key)
    return n


def _extent(arr, k) -> str:
    t = arr.type
    if isinstance(arr, ir.FieldRef) and k >= arr.nrec:       # a field's sub-array axis
        return str(arr.sub[k - arr.nrec])
    return str(t.shape[k]) if t.shape else f"{arr.name}__s{k}"


def flat(em, arr, indices, fixed=0) -> str:
    """The flat index of ``arr[indices]``, each index checked, as text (-1: out of
    range).  Axes from ``fixed`` on are numbered from 0, as a view's own."""
    n = site(em)
    out = "0"
    for k, i in enumerate(indices):
        axis = k - fixed if k >= fixed else k
        out = f"pyg_ix({RECORD}, {n}, {axis}, {out}, {em.expr(i)}, {_extent(arr, k)})"
    return out


def load(em, e) -> str:
    """A checked read of the element ``e`` (or the place a guarded store writes)."""
    placed = em.placed.get(id(e))
    if placed is not None:
        return placed
    ptr = em.d.pointer(records.record_type(e.array))
    a = e.array
    key = (ptr, a.member, a.sub) if isinstance(a, ir.FieldRef) else ptr
    name = em.readers.get(key)
    if name is None:
        name = f"pyg_rd{len(em.readers)}"
        em.readers[key] = name
        elem = e.array.type.elem
        at = copy.copy(a)
        at.name = "a"
        em.reader_defs.append(f"{em.d.inline} {em.type(elem)} {name}(const {ptr}a, "
                              f"{em.type(T.INT64)} k) {{ return k >= 0 ? "
                              f"{records.place(at, 'k')} : {em.d.const(0, elem)}; }}")
    text = f"{name}({e.array.name}, {flat(em, e.array, e.indices, e.fixed)})"
    return em.loads.get(text, text)


@contextlib.contextmanager
def guarded(em, target):
    """Around a store or an atomic into ``target``: its flat index, checked once, and
    the statement only when it is in range."""
    k = f"pyg_at{em.uid()}"
    em.line("{")
    with em.indent():
        em.line(f"const {em.type(T.INT64)} {k} = "
                f"{flat(em, target.array, target.indices, target.fixed)};")
        em.line(f"if ({k} >= 0) {{")
        em.placed[id(target)] = records.place(target.array, k)
        try:
            with em.indent():
                yield
        finally:
            del em.placed[id(target)]
        em.line("}")
    em.line("}")


def view_address(em, view) -> str:
    """The address of a view's first element, its fixed indices checked."""
    root, p = view.array, len(view.prefix)
    rest = " * ".join(_extent(root, k) for k in range(p, root.type.ndim))
    if root.type.shape:
        rest = str(math.prod(root.type.shape[p:]))
    return f"&{root.name}[pyg_ok({flat(em, root, view.prefix)}) * {rest}]"


def line_of(node, body, default):
    """The line of the statement of ``body`` that holds ``node``."""
    from . import ir
    return next((s.line for s in body if any(n is node for n in ir.walk(s))), default)


def message(record, sites) -> str | None:
    """numpy's words for a taken record (a sequence of its int64 words), after the
    access's ``file:line``; None when no access was out of range."""
    if not record[0]:
        return None
    where, index, axis, size = int(record[1]), int(record[2]), int(record[3]), int(record[4])
    file, line = sites[where] if 0 <= where < len(sites) else ("<kernel>", 0)
    return f"{file}:{line}: index {index} is out of bounds for axis {axis} with size {size}"
