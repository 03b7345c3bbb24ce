"""Types of the kernel language: scalars, arrays (with an address space) and their rules.

Promotion follows numpy (NEP 50): two typed operands promote as numpy does; a Python
literal is "weak" and takes the type of the other operand (``x[i] * 2.0`` stays float32
when ``x`` is float32).
"""
from __future__ import annotations

import numpy as np

from ..frozen import Frozen


class Scalar(Frozen):
    """A scalar type: its numpy ``name`` ("float32", "int64", "bool", ...) and C type
    ``c``."""
    __slots__ = _fields = ("name", "c")

    @property
    def dtype(self):
        return np.dtype(self.name)

    @property
    def is_float(self):
        return self.name.startswith("float")

    @property
    def is_complex(self):
        return self.name.startswith("complex")

    @property
    def real(self):
        """The type of a complex's parts (the type itself for the others)."""
        return {"complex64": FLOAT32, "complex128": FLOAT64}.get(self.name, self)

    @property
    def words(self):
        """The 8-byte words a value takes in a scratch buffer."""
        return 2 if self.size > 8 else 1

    @property
    def is_int(self):
        return self.name.startswith(("int", "uint"))

    @property
    def is_signed(self):
        return self.name.startswith("int")

    @property
    def is_bool(self):
        return self.name == "bool"

    @property
    def size(self):
        return self.dtype.itemsize

    def __str__(self):
        return self.name


class Array(Frozen):
    """An n-d C-contiguous array; ``space`` is global (mapped), local (team-shared) or
    private (a local array of one thread); ``shape`` the compile-time shape of a
    local/private array, () otherwise."""
    __slots__ = _fields = ("elem", "ndim", "space", "shape")
    _defaults = {"space": "global", "shape": ()}

    def __str__(self):
        sp = "" if self.space == "global" else f", {self.space}"
        return f"array({self.elem}, {self.ndim}d{sp})"


class Record(Frozen):
    """The element of a record array (a structured dtype): ``c`` its C struct's name,
    ``members`` one (field name, C member name, Scalar, sub-array shape, byte offset)
    per field, ``size`` numpy's itemsize, ``packed`` whether C's own layout of the
    members (with explicit padding) differs from numpy's (records.py builds it)."""
    __slots__ = _fields = ("c", "members", "size", "packed")
    name = "record"
    is_float = is_complex = is_int = is_signed = is_bool = False

    def field(self, name):
        """The member of the field ``name``, None if there is none."""
        return next((m for m in self.members if m[0] == name), None)

    def __str__(self):
        inner = ", ".join(f"{f}: {t}{list(sub) if sub else ''} @{off}"
                          for f, _, t, sub, off in self.members)
        return f"record({inner}; {self.size} bytes)"


class Void(Frozen):
    __slots__ = _fields = ("name",)
    _defaults = {"name": "void"}

    def __str__(self):
        return "void"


def _s(name, c):
    return Scalar(name, c)


BOOL = _s("bool", "bool")
INT8, INT16, INT32, INT64 = (_s("int8", "int8_t"), _s("int16", "int16_t"),
                             _s("int32", "int32_t"), _s("int64", "int64_t"))
UINT8, UINT16, UINT32, UINT64 = (_s("uint8", "uint8_t"), _s("uint16", "uint16_t"),
                                 _s("uint32", "uint32_t"), _s("uint64", "uint64_t"))
FLOAT32, FLOAT64 = _s("float32", "float"), _s("float64", "double")
COMPLEX64, COMPLEX128 = _s("complex64", "float _Complex"), _s("complex128", "double _Complex")
VOID = Void()

SCALARS = {t.name: t for t in (BOOL, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32,
                               UINT64, FLOAT32, FLOAT64)}
COMPLEX = {t.name: t for t in (COMPLEX64, COMPLEX128)}     # see complexes.py
REDUCIBLE = (INT32, INT64, FLOAT32, FLOAT64, COMPLEX64, COMPLEX128)


def scalar(x) -> Scalar:
    """The Scalar for a dtype, a numpy type, a Python type or a name."""
    if isinstance(x, Scalar):
        return x
    if x is float:
        return FLOAT64
    if x is int:
        return INT64
    if x is bool:
        return BOOL
    if x is complex:
        return COMPLEX128
    try:
        name = np.dtype(x).name
    except TypeError:
        raise TypeError(f"not a kernel scalar type: {x!r}") from None
    if name not in SCALARS and name not in COMPLEX:
        raise TypeError(f"unsupported dtype {name}: use bool, int8..int64, uint8..uint64, "
                        f"float32, float64, complex64 or complex128")
    return SCALARS.get(name) or COMPLEX[name]


def of_value(v):
    """The kernel type of a Python argument value (for specialization)."""
    if isinstance(v, np.ndarray):
        if v.dtype.names is not None:
            from .records import record
            return Array(record(v.dtype), v.ndim)
        return Array(scalar(v.dtype), v.ndim)
    if isinstance(v, (bool, np.bool_)):
        return BOOL
    if isinstance(v, np.void):
        raise TypeError("a record (np.void) is not a kernel argument: pass the record "
                        "array and an index")
    if isinstance(v, np.generic):
        return scalar(v.dtype)
    if isinstance(v, int):
        return INT64
    if isinstance(v, float):
        return FLOAT64
    if isinstance(v, complex):
        return COMPLEX128
    raise TypeError(f"unsupported kernel argument of type {type(v).__name__}: "
                    f"pass numpy arrays, ints, floats, complexes, bools or numpy scalars")


def promote(a: Scalar, b: Scalar) -> Scalar:
    if a == b:
        return a
    return scalar(np.promote_types(a.dtype, b.dtype))


def promote_weak(t: Scalar, weak: Scalar) -> Scalar:
    """Type of ``t op literal`` where the literal's own type is ``weak`` (int64/float64/bool)."""
    if weak.is_bool:
        return t
    if weak.is_int:
        return t if not t.is_bool else INT64
    if weak.is_complex:
        return t if t.is_complex else COMPLEX64 if t == FLOAT32 else COMPLEX128
    return t if t.is_float or t.is_complex else FLOAT64


def can_assign(dst: Scalar, src: Scalar) -> bool:
    """Implicit conversions allowed on assignment: anything but float -> int/bool and
    complex -> real."""
    if src.is_complex:
        return dst.is_complex
    return not (src.is_float and not (dst.is_float or dst.is_complex))


IDENTITY = {   # reduction operator -> identity, as a function of the type
    "+": lambda t: "0",
    "*": lambda t: "1",
    "max": lambda t: _limit(t, low=True),
    "min": lambda t: _limit(t, low=False),
    "&": lambda t: "~0" if t.is_int else "1",
    "|": lambda t: "0",
    "^": lambda t: "0",
    "and": lambda t: "1",
    "or": lambda t: "0",
}


def _limit(t: Scalar, low: bool) -> str:
    if t.is_float:
        return ("-" if low else "") + ("INFINITY")
    info = np.iinfo(t.dtype)
    v = info.min if low else info.max
    if t == INT64 and low:
        return "(-9223372036854775807L - 1)"
    suffix = {"int64": "L", "uint64": "UL", "uint32": "U"}.get(t.name, "")
    return f"{v}{suffix}"
