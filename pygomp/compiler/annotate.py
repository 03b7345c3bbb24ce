"""Parameter annotations of kernels: the one parser that `@omp.target`, the compiler and
the command lines (``--signature``) use.

A scalar annotation is a type (``float``, ``int``, ``bool``, ``np.float32``, a dtype or
its name ``"float32"``); it fixes the parameter's type (a value passed is converted).
An array annotation is ``"float32[:]"``, ``"float64[:, :]"`` (dtype and rank; a record
array's: ``"particle[:]"``, the name of a structured dtype the module defines),
``np.ndarray`` (any), ``npt.NDArray[np.float32]`` (a dtype, any rank) or
``np.ndarray[tuple[int, int], np.dtype[np.float32]]`` (both); an array argument that
differs is a TypeError at the call.  Any other annotation is refused, never ignored.
"""
from __future__ import annotations

import typing

import numpy as np

from ..frozen import Frozen
from . import types as T

FORMS = ('a scalar type (float, int, bool, np.float32, "int32") or an array: '
         '"float32[:]", "float64[:, :]", np.ndarray, npt.NDArray[np.float32], '
         'np.ndarray[tuple[int], np.dtype[np.float32]]')


class ArrayAnn(Frozen):
    """An array annotation; ``elem`` or ``ndim`` None where it leaves them open."""
    __slots__ = _fields = ("elem", "ndim", "text")

    @property
    def type(self):
        """The `types.Array` it names, None if it leaves the dtype or rank open."""
        if self.elem is None or self.ndim is None:
            return None
        return T.Array(self.elem, self.ndim)

    def accepts(self, t) -> bool:
        return isinstance(t, T.Array) and self.elem in (None, t.elem) \
            and self.ndim in (None, t.ndim)


def parse_text(text: str, env=None):
    """A Scalar or ArrayAnn from a type's text (``float32``, ``float64[:, :]``, or
    ``particle[:]`` with ``particle`` a structured dtype of ``env``: a record array);
    TypeError if it is not one."""
    s = text.strip()
    if s.endswith("]") and "[" in s:
        name, dims = s[:-1].split("[", 1)
        if dims.replace(":", "").replace(",", "").strip() or not dims.strip():
            raise TypeError(f"bad array type {text!r}: write the dtype then one : per "
                            f"dimension, e.g. float32[:] or float64[:, :]")
        name = name.strip()
        dtype = (env or {}).get(name)
        if isinstance(dtype, np.dtype) and dtype.names is not None:
            from .records import record
            return ArrayAnn(record(dtype), dims.count(":"), s)
        return ArrayAnn(T.scalar(name), dims.count(":"), s)
    return T.scalar(s)


def parse(ann, env=None):
    """The Scalar or ArrayAnn of an annotation object (a string is read by `parse_text`,
    else evaluated in ``env``, as ``from __future__ import annotations`` leaves it);
    TypeError naming the forms understood otherwise."""
    if isinstance(ann, str):
        try:
            return parse_text(ann, env)
        except TypeError:
            if "[" in ann and ":" in ann.partition("[")[2]:
                raise
        try:
            ann = eval(ann, dict(env or {}))           # noqa: S307  (the user's own text)
        except Exception:       # noqa: BLE001  (any failure: not an annotation we read)
            raise TypeError(f"cannot read the annotation {ann!r}: use {FORMS}") from None
        if isinstance(ann, str):
            raise TypeError(f"cannot read the annotation {ann!r}: use {FORMS}")
    ann = _unalias(ann)
    if ann is np.ndarray:
        return ArrayAnn(None, None, "np.ndarray")
    if typing.get_origin(ann) is np.ndarray:
        return _ndarray(ann)
    try:
        return T.scalar(ann)
    except TypeError:
        raise TypeError(f"annotation {_show(ann)} is not a kernel type: use "
                        f"{FORMS}") from None


def _unalias(ann):
    """What a type alias stands for (``type NDArray[T] = ...``: numpy 2.5's npt.NDArray),
    its parameters given; any other annotation as it is."""
    origin = typing.get_origin(ann)
    if hasattr(origin, "__value__") and hasattr(origin, "__type_params__"):
        args = typing.get_args(ann)
        return origin.__value__[args] if origin.__type_params__ and args else origin.__value__
    if hasattr(ann, "__value__") and hasattr(ann, "__type_params__"):
        return ann.__value__
    return ann


def _ndarray(ann):
    shape, dtype = map(_unalias, (typing.get_args(ann) + (typing.Any, typing.Any))[:2])
    ndim = None
    if typing.get_origin(shape) is tuple:
        dims = typing.get_args(shape)
        if dims and dims[-1] is not Ellipsis:
            ndim = len(dims)
    elif shape is not typing.Any:
        raise TypeError(f"annotation {_show(ann)}: its shape type must be tuple[int, ...] "
                        f"or Any")
    elem = None
    if typing.get_origin(dtype) is np.dtype:
        dtype = (typing.get_args(dtype) or (typing.Any,))[0]
    if dtype is not typing.Any and not isinstance(dtype, typing.TypeVar):
        try:
            elem = T.scalar(dtype)
        except TypeError as e:
            raise TypeError(f"annotation {_show(ann)}: {e}") from None
    text = "np.ndarray" if elem is None else f"{elem}[{', '.join(':' * (ndim or 1))}]"
    if ndim is None and elem is not None:
        text = f"npt.NDArray[np.{elem}]"
    return ArrayAnn(elem, ndim, text)


def _show(ann):
    return getattr(ann, "__name__", None) if isinstance(ann, type) else repr(ann)


def of_function(fn) -> dict:
    """{parameter: Scalar or ArrayAnn} of ``fn``'s annotated parameters; a CompileError
    at the def for one that cannot be read."""
    import inspect
    import linecache

    from ..errors import CompileError
    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.annotation is inspect.Parameter.empty:
            continue
        try:
            out[p.name] = parse(p.annotation, fn.__globals__)
        except TypeError as e:
            file, line = fn.__code__.co_filename, fn.__code__.co_firstlineno
            raise CompileError(f"{fn.__name__}: parameter {p.name!r}: {e}", file, line,
                               linecache.getline(file, line)) from None
    return out


def check(kernel, pname, ann, t):
    """The type parameter ``pname`` takes for an argument of type ``t``: the annotation's
    for a scalar; a TypeError where an argument does not match its annotation."""
    if ann is None:
        return t
    if isinstance(ann, T.Scalar):
        if isinstance(t, T.Scalar):
            return ann
        want = f"the scalar type {ann}"
    elif ann.accepts(t):
        return t
    else:
        want = ann.text
    raise TypeError(f"{kernel}(): parameter {pname!r} is annotated {want} but gets "
                    f"{_passed(t)}")


def _passed(t):
    if isinstance(t, T.Array):
        return f"a {t.ndim}-d {t.elem} array"
    return f"a {t} scalar"
