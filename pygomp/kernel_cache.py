"""Generated kernel source on disk: what a kernel's first call in a new process loads
instead of running the compiler (which it then never imports).

The compiler turns a kernel's Python function, for one signature and one target
dialect, into source text and a KernelInfo per kernel.  An entry keeps that result in the
runtime's disk cache, keyed by

- the function's file (its path and a hash of its text), first line and name;
- the signature and the plugin whose dialect wrote it;
- the files of the compiler and of the plugin's package, the dialect's home (path,
  size, mtime), so that an edited compiler misses.

The compiler also reads what the function's free names stand for (globals, closure
cells, builtins: constants are folded in, helpers compiled, ``np.float32`` resolved).
An entry lists every name and dotted name the function reads but never assigns, with
a fingerprint of its value then, and is used only when they all still match; a helper's
fingerprint is its own file, line and names, checked the same way.  A value without a
stable fingerprint (an arbitrary object) leaves the kernel out of the cache.

An entry is a pickle, so it is unpickled only as the bytes `cache.get` gives: an entry
this user wrote (its MAC checked) or one of a directory the configuration trusts.
"""
from __future__ import annotations

import ast
import builtins
import functools
import linecache
import os
import pickle
import sys
import textwrap
import types

import numpy as np

from .frozen import Frozen
from .runtime import cache


class Unit(Frozen):
    """A kernel's generated source for one target and its KernelInfo (what `emit.Unit`
    holds, without the IR), and the parameters and result it was built for.  A record,
    not a namedtuple: making a namedtuple class costs a new process 0.2 ms."""
    __slots__ = _fields = ("source", "entry", "words", "ret", "kernels", "written")

_ABSENT = ("absent",)


def load(fn, name, argtypes, plugin):
    """``(unit, params)`` cached for this function, signature and plugin, or None."""
    k = _key(fn, name, argtypes, plugin)
    blob = k and cache.get(k, ".unit")
    if not blob:
        return None
    try:
        manifest, unit, params = pickle.loads(blob)     # authenticated by cache.get
        unit = Unit(*unit)
    except Exception:               # an entry of another layout: rebuilt, not trusted
        return None
    return (unit, params) if _matches(_namespace(fn), manifest) else None


def store(fn, name, argtypes, plugin, unit, params) -> None:
    """Keep ``unit`` (an `emit.Unit`) for later processes, if the function can be."""
    k = _key(fn, name, argtypes, plugin)
    manifest = k and _manifest(fn)
    if manifest is None:
        return
    record = (manifest, (unit.source, unit.entry, unit.words, unit.ret, unit.kernels,
                        unit.written), params)
    try:
        cache.put(k, pickle.dumps(record), ".unit")
    except OSError:
        pass                        # a read-only cache is no error


def _key(fn, name, argtypes, plugin):
    code = getattr(fn, "__code__", None)
    text = code and _file_text(code.co_filename)
    if not text:
        return None                 # no file (an interactive session): not cached
    cls = type(plugin)
    return cache.key("kernel-unit", code.co_filename, cache.digest(text),
                     code.co_firstlineno, name, [str(t) for t in argtypes],
                     cls.__module__, cls.__qualname__, plugin.target,
                     _compiler_files(cls.__module__))


def checked(fn) -> bool:
    """Whether ``fn``'s source passed `precheck` in an earlier process (its file's text,
    its first line, the compiler and Python's version the same): then the decorator
    need not import the check or read the source again."""
    k = _checked_key(fn)
    return bool(k) and cache.get(k, ".checked") is not None


def mark_checked(fn) -> None:
    """Note that ``fn``'s source passed `precheck` (after it raised nothing)."""
    k = _checked_key(fn)
    if k:
        try:
            cache.put(k, b"", ".checked")
        except OSError:
            pass                    # a read-only cache is no error


def _checked_key(fn):
    code = fn.__code__
    text = _file_text(code.co_filename)
    return text and cache.key("precheck", code.co_filename, cache.digest(text),
                              code.co_firstlineno, code.co_name, sys.version_info[:2],
                              _compiler_files(""))


def _file_text(path):
    lines = linecache.getlines(path)
    return "".join(lines).encode() if lines else None


def _compiler_files(plugin_module):
    """Path, size and mtime of every file of the compiler and of the plugin's package."""
    dirs = [os.path.join(os.path.dirname(__file__), "compiler")]
    mod = sys.modules.get(plugin_module)
    if getattr(mod, "__file__", None):
        dirs.append(os.path.dirname(mod.__file__))
    return "|".join(map(_py_files, dirs))


@functools.lru_cache(maxsize=None)
def _py_files(d):
    """Path, size and mtime of the .py files of directory ``d`` (listed once a process)."""
    out = []
    for f in sorted(os.listdir(d)):
        if f.endswith(".py"):
            st = os.stat(os.path.join(d, f))
            out.append(f"{d}/{f}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(out)


# -- the names a function reads, and what they stand for -------------------------------

def _namespace(fn):
    """What the function's free names resolve in: globals, closure cells, builtins."""
    fn = getattr(fn, "py_func", fn)
    ns = dict(fn.__globals__)
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            ns[var] = cell.cell_contents
        except ValueError:
            pass
    return ns


def _resolve(ns, dotted):
    head, *rest = dotted.split(".")
    v = ns[head] if head in ns else getattr(builtins, head, _ABSENT)
    for attr in rest:
        if v is _ABSENT:
            break
        v = getattr(v, attr, _ABSENT)
    return v


def _free_names(fn):
    """Every name and dotted name (``np.float32``) the function reads and never binds."""
    lines, _ = _source(fn)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    node = tree.body[0]
    bound = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
    read = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (read if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.Attribute):
            parts = []
            while isinstance(n, ast.Attribute):
                parts.append(n.attr)
                n = n.value
            if isinstance(n, ast.Name):
                read.add(".".join([n.id] + parts[::-1]))
    return sorted(d for d in read if d.split(".")[0] not in bound)


def _source(fn):
    import inspect
    return inspect.getsourcelines(getattr(fn, "py_func", fn))


def _manifest(fn, seen=()):
    """``((name, fingerprint), ...)`` of the function's free names, or None."""
    ns = _namespace(fn)
    out = []
    for dotted in _free_names(fn):
        fp = _fingerprint(_resolve(ns, dotted), seen + (fn,))
        if fp is None:
            return None
        out.append((dotted, fp))
    return tuple(out)


def _fingerprint(v, seen):
    if v is _ABSENT:
        return _ABSENT
    if isinstance(v, np.generic):
        return ("n", v.dtype.str, repr(v.item()))
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return ("v", type(v).__name__, repr(v))
    if isinstance(v, tuple):
        parts = tuple(_fingerprint(x, seen) for x in v)
        return None if None in parts else ("t", parts)
    if isinstance(v, types.ModuleType):
        return ("m", v.__name__)
    if isinstance(v, type):
        return ("c", v.__module__, v.__qualname__)
    if isinstance(v, np.dtype):
        return ("d", v.str)
    if isinstance(v, (types.BuiltinFunctionType, np.ufunc)):
        return ("b", getattr(v, "__module__", None), v.__name__)
    f = getattr(v, "py_func", v)            # helpers (declare_target), kernels, functions
    if isinstance(f, types.FunctionType):
        if f.__module__.split(".")[0] == "pygomp":      # the kernel language itself
            return ("p", f.__module__, f.__qualname__)
        if f in seen:
            return ("r", f.__qualname__)                # recursion: checked above
        text = _file_text(f.__code__.co_filename)
        nested = text and _manifest(f, seen)
        if nested is None:
            return None
        return ("f", type(v).__name__, f.__code__.co_filename, f.__code__.co_firstlineno,
                cache.digest(text), nested)
    return None


def _matches(ns, manifest, seen=()):
    """Whether every name still stands for what the manifest says."""
    for dotted, fp in manifest:
        v = _resolve(ns, dotted)
        if fp[0] == "f":
            f = getattr(v, "py_func", v)
            text = isinstance(f, types.FunctionType) and _file_text(f.__code__.co_filename)
            if not text or (type(v).__name__, f.__code__.co_filename,
                            f.__code__.co_firstlineno, cache.digest(text)) \
                    != fp[1:5] or (f not in seen and not _matches(_namespace(f), fp[5],
                                                                  seen + (f,))):
                return False
        elif fp[0] == "r":
            if getattr(getattr(v, "py_func", v), "__qualname__", None) != fp[1]:
                return False
        elif _fingerprint(v, seen) != fp:
            return False
    return True
