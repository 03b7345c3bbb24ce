"""Record arrays: a numpy structured dtype as a kernel argument.

A record array's element is a `types.Record`, emitted as a C struct whose members sit
at numpy's byte offsets (explicit padding members; the struct is packed where C's own
alignment would move a member or round the size).  Each field is read and written as
an array of its own, an `ir.FieldRef`: ``p["x"]`` has the record array's axes, and a
sub-array field (``("v", np.float64, (3,))``) its own axes after them.  The front end
(`Records.normalize`) writes every field access in one form, numpy's equivalent with
the field first (``p[i]["v"][0]`` is ``p["v"][i][0]``), and binds ``p["x"]`` to that
array under the name ``p["x"]`` (which error messages then show as written).
"""
from __future__ import annotations

import ast
import copy
import hashlib
import math

import numpy as np

from . import ir
from . import types as T

_KEYWORDS = set("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static
struct switch typedef union unsigned void volatile while bool half uchar ushort uint ulong
kernel global local private constant""".split())


def record(dtype) -> T.Record:
    """The Record of a structured dtype; TypeError naming what a kernel cannot take."""
    dtype = np.dtype(dtype)
    members = []
    for k, name in enumerate(dtype.names):
        ft, off = dtype.fields[name][:2]
        base, sub = (ft.subdtype if ft.subdtype else (ft, ()))
        if base.names is not None:
            raise TypeError(f"the field {name!r} of {dtype} is itself a record: nested "
                            f"structured dtypes are not supported in kernels yet")
        try:
            t = T.scalar(base)
        except TypeError:
            raise TypeError(f"the field {name!r} of {dtype} has the dtype {base}: record "
                            f"fields must be bool, int8..int64, uint8..uint64, float32 or "
                            f"float64 (or fixed-size sub-arrays of those)") from None
        if t.is_complex:
            raise TypeError(f"the field {name!r} of {dtype} is complex: complex fields "
                            f"are not supported in kernels yet")
        member = name if name.isidentifier() and name.isascii() and \
            name not in _KEYWORDS and not name.startswith("pyg_") else f"pyg_f{k}"
        members.append((name, member, t, tuple(sub), off))
    ordered = sorted(members, key=lambda m: m[4])
    end = 0
    packed = False
    for name, _, t, sub, off in ordered:
        if off < end:
            raise TypeError(f"the fields of {dtype} overlap (at {name!r}): kernels take "
                            f"records whose fields do not share bytes")
        packed |= off % t.size != 0
        end = off + t.size * math.prod(sub)
    align = max(t.size for _, _, t, _, _ in members)
    packed |= dtype.itemsize % align != 0
    key = repr((members, dtype.itemsize)).encode()
    c = "pyg_rec_" + hashlib.sha1(key).hexdigest()[:12]
    return T.Record(c, tuple(members), dtype.itemsize, packed)


def used(fn) -> list:
    """The Records of the array parameters of a kernel and its helpers, once each."""
    out = []
    for f in [fn] + list(getattr(fn, "helpers", ())):
        for _, t in f.params:
            e = getattr(t, "elem", None)
            if isinstance(e, T.Record) and e not in out:
                out.append(e)
    return out


def struct(rec: T.Record, type_name, tag: str | None = None, flat=True) -> str:
    """The C struct of ``rec`` (``type_name`` spells a member's scalar type), as a
    typedef of ``rec.c`` (or as ``struct tag``); ``flat``: a sub-array member is one
    flat array (the kernels index it so), else it keeps its axes."""
    lines, end = [], 0
    for k, (name, member, t, sub, off) in enumerate(sorted(rec.members, key=lambda m: m[4])):
        if off > end:
            lines.append(f"    unsigned char pyg_pad{k}[{off - end}];")
        dims = (f"[{math.prod(sub)}]" if flat else "".join(f"[{n}]" for n in sub)) \
            if sub else ""
        note = f"    /* {name!r} */" if member != name else ""
        lines.append(f"    {type_name(t)} {member}{dims};{note}")
        end = off + t.size * math.prod(sub)
    if rec.size > end:
        lines.append(f"    unsigned char pyg_pad_end[{rec.size - end}];")
    attr = " __attribute__((packed))" if rec.packed else ""
    if tag:
        return f"struct{attr} {tag} {{\n" + "\n".join(lines) + "\n};\n"
    return f"typedef struct{attr} {rec.c} {{\n" + "\n".join(lines) + f"\n}} {rec.c};\n"


def typedefs(d, fn) -> str:
    """The structs of the records ``fn`` takes, in dialect ``d``."""
    return "".join(struct(r, d.type_name) for r in used(fn))


def place(arr, k: str) -> str:
    """C text of the element at flat index ``k`` (text) of an array or field."""
    if not isinstance(arr, ir.FieldRef):
        return f"{arr.name}[{k}]"
    n = math.prod(arr.sub)
    if not arr.sub:
        return f"{arr.name}[{k}].{arr.member}"
    if n == 1:
        return f"{arr.name}[{k}].{arr.member}[0]"
    return f"{arr.name}[({k}) / {n}].{arr.member}[({k}) % {n}]"


def record_type(arr) -> T.Array:
    """The type of the array whose memory ``arr`` (an array or a field) is."""
    return arr.rtype if isinstance(arr, ir.FieldRef) else arr.type


class Records:
    """Mixin of `frontend.Frontend`: record-array parameters and their fields."""

    def record_params(self):
        """{Python name: Record} of the record-array parameters."""
        return {a.arg: t.elem for a, t in zip(self.node.args.args, self.argtypes)
                if isinstance(t, T.Array) and isinstance(t.elem, T.Record)}

    def bind_fields(self, name, ref):
        """``name["f"]`` for each field ``f`` of the record-array parameter ``ref``."""
        t = ref.type
        for fname, member, st, sub, _ in t.elem.members:
            ft = T.Array(st, t.ndim + len(sub))
            self.arrays[field_name(name, fname)] = ir.FieldRef(
                ref.name, member, sub, t.ndim, t, type=ft)

    def normalize(self, node):
        """``node`` with its field accesses in the form ``p["x"][...]`` (a copy when it
        has any)."""
        recs = self.record_params()
        if not recs and not any(isinstance(n, ast.Subscript) and _key(n) is not None
                                for n in ast.walk(node)):
            return node
        fe = self

        class Fields(ast.NodeTransformer):
            def visit_Subscript(self, n):
                self.generic_visit(n)
                return fe.field_first(n, recs)

            def visit_Attribute(self, n):
                self.generic_visit(n)
                root = n.value
                while isinstance(root, ast.Subscript):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in recs and \
                        recs[root.id].field(n.attr) is not None:
                    raise fe.error(n, f"{ast.unparse(n)}: a field of a structured array "
                                      f"is written {ast.unparse(n.value)}[{n.attr!r}] "
                                      f"(.{n.attr} is numpy's recarray, which kernels do "
                                      f"not take)")
                return n

            def visit_Assign(self, n):
                self.generic_visit(n)
                n.targets = [_whole(t) for t in n.targets]
                return n

            def visit_AugAssign(self, n):
                self.generic_visit(n)
                n.target = _whole(n.target)
                return n

        return ast.fix_missing_locations(Fields().visit(copy.deepcopy(node)))

    def field_first(self, n, recs, shown=None):
        """``n`` with a field key moved before the indices it follows (``shown``: the
        access as written, for messages)."""
        shown = shown or n
        key = _key(n)
        if key is None:
            return n
        v = n.value
        if isinstance(v, ast.Subscript) and _key(v) is None and not (
                isinstance(v.value, ast.Attribute) and v.value.attr == "shape"):
            inner = ast.copy_location(ast.Subscript(value=v.value, slice=n.slice,
                                                    ctx=ast.Load()), n)
            return ast.copy_location(ast.Subscript(value=self.field_first(inner, recs, shown),
                                                   slice=v.slice, ctx=n.ctx), n)
        if isinstance(v, ast.Name) and v.id in recs:
            rec = recs[v.id]
            if rec.field(key) is None:
                raise self.error(n, f"{ast.unparse(shown)}: the record array {v.id} has no "
                                    f"field {key!r} (its fields: "
                                    f"{', '.join(m[0] for m in rec.members)})")
            return ast.copy_location(ast.Name(id=field_name(v.id, key), ctx=n.ctx), n)
        t = dict(zip((a.arg for a in self.node.args.args), self.argtypes)).get(
            getattr(v, "id", None))
        if isinstance(t, T.Array):
            raise self.error(n, f"{ast.unparse(shown)}: {v.id} is a {t.elem} array; a "
                                f"field name indexes a record array (a structured dtype)")
        return n

    def whole_record(self, node, root):
        """The error for a record used whole (``p[i]``, ``p``) where kernels take its
        fields."""
        fields = ", ".join(f'"{m[0]}"' for m in root.type.elem.members)
        return self.error(node, f"{ast.unparse(node)} is a record (or records): kernels "
                                f"read and write the fields of a record array "
                                f"({fields}), as p[i][\"x\"] or p[\"x\"][i], not whole "
                                f"records yet")


def field_name(name, field):
    """The name the front end gives the field array ``name[field]``."""
    return f"{name}[{field!r}]"


def base(name):
    """The record array a field's name (`field_name`) names; any other name itself."""
    return name.partition("[")[0]


def _key(n):
    s = n.slice
    return s.value if isinstance(s, ast.Constant) and isinstance(s.value, str) else None


def _whole(t):
    """An assignment target ``p["x"]`` (all of the field) as ``p["x"][:]``."""
    if isinstance(t, ast.Name) and t.id.endswith("]") and "[" in t.id:
        load = ast.copy_location(ast.Name(id=t.id, ctx=ast.Load()), t)
        return ast.copy_location(ast.Subscript(value=load, slice=ast.Slice(),
                                               ctx=ast.Store()), t)
    return t
