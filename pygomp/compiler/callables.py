"""The functions a kernel may call: one registry, beside `frontend.SUPPORTED` (the AST
kinds).  Each entry names the object a kernel's name resolves to (a method's name for
``x.sum()``), how a kernel writes it, its group, one line of doc, and the value the
group's table gives the compiler (the C function and result kind of a math function, the
operator of a reduction, ...).  The compiler's tables (`MATH`, `REDUCE`, `LOOPS`, ...)
are read from here; ``python -m pygomp language`` prints the registry.

Adding a callable: one `_add` line in its group below (a group whose handling is new
also needs its lowering in the front end), and its case in tests/test_callables.py.
"""
from __future__ import annotations

import builtins
import cmath
import dataclasses
import math

import numpy as np

from . import lang


@dataclasses.dataclass(frozen=True)
class Callable:
    key: object         # what the kernel's name resolves to; a str: a method's name
    name: str           # how a kernel writes it
    group: str
    doc: str            # one line
    value: object = None


ENTRIES: list[Callable] = []
GROUPS = {      # group -> its title, in the order `python -m pygomp language` prints them
    "loops": "parallel loops (clauses: reduction=, private=, collapse=)",
    "iterators": "sequential loops",
    "threads": "thread numbers",
    "memory": "arrays a kernel makes, and synchronization",
    "atomics": "atomics (each returns the old element)",
    "scan": "OpenMP's scan directive (in a loop with reduction=\"inscan,...\")",
    "conversions": "conversions",
    "math": "math functions of real scalars (elementwise on arrays)",
    "minmax": "min and max",
    "abs": "absolute value",
    "complex": "complex numbers",
    "complex_methods": "complex number methods",
    "reductions": "reductions of arrays (numpy 2's result types, axis= where numpy has it)",
    "methods": "reduction methods of arrays",
    "arrays": "array functions",
    "cumulative": "cumulative array functions (a sub-array = ... of its own)",
    "builtins": "other builtins",
}


def _add(key, name, group, doc, value=None):
    ENTRIES.append(Callable(key, name, group, doc, value))


def _first_line(fn):
    """The first paragraph of ``fn``'s docstring, as one line."""
    return " ".join(fn.__doc__.strip().split("\n\n")[0].split())


def table(group) -> dict:
    """``{key: value}`` of the entries of ``group``."""
    return {e.key: e.value for e in ENTRIES if e.group == group}


# -- omp's own names (lang.py; their docstrings are their docs) ------------------------
for _f, _v in ((lang.gang, ("gang",)), (lang.worker, ("worker",)),
               (lang.vector, ("vector",)),
               (lang.parallel_range, ("gang", "worker", "vector"))):
    _add(_f, f"omp.{_f.__name__}", "loops", _first_line(_f), _v)
for _f in (lang.gang_id, lang.worker_id, lang.vector_id, lang.num_gangs, lang.num_workers,
           lang.vector_length):
    _add(_f, f"omp.{_f.__name__}", "threads", _first_line(_f), _f.__name__)
for _f in (lang.atomic_add, lang.atomic_max, lang.atomic_min, lang.atomic_exchange,
           lang.atomic_cas):
    _add(_f, f"omp.{_f.__name__}", "atomics", _first_line(_f), _f.__name__[7:])
for _f in (lang.inclusive, lang.exclusive):
    _add(_f, f"omp.{_f.__name__}", "scan", _first_line(_f), _f.__name__)
_add(lang.shared_array, "omp.shared_array", "memory", _first_line(lang.shared_array))
_add(lang.barrier, "omp.barrier", "memory", _first_line(lang.barrier))

# -- Python's and numpy's -------------------------------------------------------------
_add(np.zeros, "np.zeros", "memory", "a private array of zeros (sized by the arguments)")
_add(np.empty, "np.empty", "memory", "a private array, not cleared")
_add(builtins.range, "range", "iterators", "a sequential loop (start, stop, step)")
_add(builtins.enumerate, "enumerate", "iterators", "(index, element) of an iterable, start=")
_add(builtins.zip, "zip", "iterators", "elements of arrays and ranges side by side")
_add(builtins.len, "len", "builtins", "the length of an array's first axis")
_add(builtins.print, "print", "builtins", "scalars and string literals, with the "
                                          "device's printf (sep=, end=)")

for _f, _doc in ((int, "an int64 (truncated toward zero); a weak Python scalar"),
                 (float, "a float64; a weak Python scalar"),
                 (bool, "whether a number is nonzero"),
                 (complex, "complex(re[, im]): a complex128, weak")):
    _add(_f, _f.__name__, "conversions", _doc)
for _f in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float32, np.float64, np.complex64, np.complex128):
    _n = "bool_" if _f is np.bool_ else _f.__name__
    _add(_f, f"np.{_n}", "conversions", f"a value converted to numpy's {np.dtype(_f).name}")

# C name, result ("f" float, "i" int, "b" bool), math's name, numpy's name, doc
_MATH = (
    ("sqrt", "f", "sqrt", "sqrt", "square root"),
    ("exp", "f", "exp", "exp", "e to the power x"),
    ("log", "f", "log", "log", "natural logarithm"),
    ("log2", "f", "log2", "log2", "base-2 logarithm"),
    ("log10", "f", "log10", "log10", "base-10 logarithm"),
    ("sin", "f", "sin", "sin", "sine"),
    ("cos", "f", "cos", "cos", "cosine"),
    ("tan", "f", "tan", "tan", "tangent"),
    ("asin", "f", "asin", "arcsin", "inverse sine"),
    ("acos", "f", "acos", "arccos", "inverse cosine"),
    ("atan", "f", "atan", "arctan", "inverse tangent"),
    ("sinh", "f", "sinh", "sinh", "hyperbolic sine"),
    ("cosh", "f", "cosh", "cosh", "hyperbolic cosine"),
    ("tanh", "f", "tanh", "tanh", "hyperbolic tangent"),
    ("asinh", "f", "asinh", "arcsinh", "inverse hyperbolic sine"),
    ("acosh", "f", "acosh", "arccosh", "inverse hyperbolic cosine"),
    ("atanh", "f", "atanh", "arctanh", "inverse hyperbolic tangent"),
    ("erf", "f", "erf", None, "the error function"),
    ("erfc", "f", "erfc", None, "1 - erf(x), exact for large x"),
    ("expm1", "f", "expm1", "expm1", "exp(x) - 1, exact near 0"),
    ("log1p", "f", "log1p", "log1p", "log(1 + x), exact near 0"),
    ("fabs", "f", "fabs", "fabs", "absolute value, as a float"),
    ("atan2", "f", "atan2", "arctan2", "the angle of the point (x, y), atan2(y, x)"),
    ("pow", "f", "pow", "power", "x to the power y, in floats"),
    ("hypot", "f", "hypot", "hypot", "sqrt(x*x + y*y) without overflow"),
    ("fmod", "f", "fmod", "fmod", "the remainder of x / y with x's sign (C's fmod)"),
    ("copysign", "f", "copysign", "copysign", "x's magnitude with y's sign"),
    ("gamma", "f", "gamma", None, "the gamma function"),
    ("lgamma", "f", "lgamma", None, "the log of |gamma(x)|"),
    ("floor", "i", "floor", None, "the largest integer <= x, an int"),
    ("ceil", "i", "ceil", None, "the smallest integer >= x, an int"),
    ("trunc", "i", "trunc", None, "x rounded toward zero, an int"),
    ("floor", "f", None, "floor", "the largest integer <= x, a float"),
    ("ceil", "f", None, "ceil", "the smallest integer >= x, a float"),
    ("trunc", "f", None, "trunc", "x rounded toward zero, a float"),
    ("isnan", "b", "isnan", "isnan", "whether x is NaN"),
    ("isinf", "b", "isinf", "isinf", "whether x is infinite"),
    ("isfinite", "b", "isfinite", "isfinite", "whether x is neither infinite nor NaN"),
)
for _c, _kind, _m, _np, _doc in _MATH:
    for _mod, _prefix, _n in ((math, "math.", _m), (np, "np.", _np)):
        if _n is not None:
            _add(getattr(_mod, _n), _prefix + _n, "math", _doc, (_c, _kind))

_add(builtins.min, "min", "minmax", "the least of two or more (Python's: the first "
                                    "NaN wins)", "min")
_add(builtins.max, "max", "minmax", "the greatest of two or more (Python's: the first "
                                    "NaN wins)", "max")
_add(np.minimum, "np.minimum", "minmax", "the lesser of two (numpy's: a NaN wins)",
     "minimum")
_add(np.maximum, "np.maximum", "minmax", "the greater of two (numpy's: a NaN wins)",
     "maximum")
_add(builtins.abs, "abs", "abs", "absolute value (of a complex: its modulus)")
_add(np.abs, "np.abs", "abs", "absolute value (of a complex: its modulus)")
_add(np.absolute, "np.absolute", "abs", "absolute value, as np.abs")

_add(np.conj, "np.conj", "complex", "the complex conjugate", "conj")
_add(np.conjugate, "np.conjugate", "complex", "the complex conjugate, as np.conj", "conj")
_add(np.real, "np.real", "complex", "the real part", "real")
_add(np.imag, "np.imag", "complex", "the imaginary part (0 of a real)", "imag")
_add(cmath.exp, "cmath.exp", "complex", "e to the power z", "exp")
_add(cmath.sqrt, "cmath.sqrt", "complex", "the principal square root", "sqrt")
_add("conjugate", ".conjugate()", "complex_methods", "z.conjugate(): the complex "
                                                      "conjugate", "conj")

for _f, _op, _doc in (
        (np.sum, "+", "the sum of the elements"),
        (np.prod, "*", "the product of the elements"),
        (np.min, "min", "the least element"),
        (np.max, "max", "the greatest element"),
        (np.amin, "min", "the least element, as np.min"),
        (np.amax, "max", "the greatest element, as np.max"),
        (np.dot, "dot", "the dot product of 1-d arrays; a matrix product of 2-d ones"),
        (np.matmul, "dot", "a matrix product, as the @ operator"),
        (np.argmin, "argmin", "the flat index of the first least element"),
        (np.argmax, "argmax", "the flat index of the first greatest element"),
        (np.linalg.norm, "norm", "the 2-norm of a vector, Frobenius's of a matrix")):
    _add(_f, "np.linalg.norm" if _f is np.linalg.norm else f"np.{_f.__name__}",
         "reductions", _doc, _op)
for _n, _op, _doc in (("sum", "+", "the sum of the elements"),
                      ("prod", "*", "the product of the elements"),
                      ("min", "min", "the least element"),
                      ("max", "max", "the greatest element"),
                      ("argmin", "argmin", "the flat index of the first least element"),
                      ("argmax", "argmax", "the flat index of the first greatest element")):
    _add(_n, f".{_n}()", "methods", f"x.{_n}(): {_doc}", _op)

_add(np.where, "np.where", "arrays", "np.where(c, a, b): a where c holds, else b")
_add(np.clip, "np.clip", "arrays", "np.clip(a, lo, hi): a limited to [lo, hi]")
_add(np.outer, "np.outer", "arrays", "the outer product of two vectors")
_add(np.cumsum, "np.cumsum", "cumulative", "running sums (a parallel scan at the top "
                                           "level)", "+")
_add(np.cumprod, "np.cumprod", "cumulative", "running products (a parallel scan at the "
                                             "top level)", "*")

# the compiler's tables, read from the registry
LOOPS = table("loops")              # omp loop -> its levels
BUILTINS = table("threads")         # omp thread number -> its IR name
ATOMICS = table("atomics")          # omp.atomic_<op> -> op
SCANS = table("scan")               # omp.inclusive/exclusive -> its kind
ITERATORS = tuple(k for k in table("iterators") if k is not builtins.range)
MATH = table("math")                # math function -> (C name, result kind)
MINMAX = table("minmax")            # -> the IR function
ABS = tuple(table("abs"))
COMPLEX = table("complex")          # a function of a complex -> its IR name
COMPLEX_METHODS = table("complex_methods")
REDUCE = table("reductions")        # numpy reduction -> its operator
METHODS = table("methods")          # array method name -> its operator
CUMULATIVE = table("cumulative")    # np.cumsum/np.cumprod -> the scan's operator
assert set(GROUPS) == {e.group for e in ENTRIES}
assert len({e.name for e in ENTRIES}) == len(ENTRIES)
