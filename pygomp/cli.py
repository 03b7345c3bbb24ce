"""``python -m pygomp compile FILE.py --target TARGET [--signature ...]``

Prints the generated source of every ``@target`` kernel defined in FILE, in the dialect
of the installed plugin whose target is TARGET (host, opencl, cuda, or a third party's:
plugins are found through the entry-point group ``pygomp.plugins``).  See `HELP` for how
FILE is run and where parameter types come from.
"""
from __future__ import annotations

import __future__
import argparse
import ast
import contextlib
import os
import sys
import types

from .compiler import annotate
from .errors import PygompError
from .compiler import types as T

HELP = """\
How FILE is run: as a module named __pygomp_compile__ (so its
'if __name__ == "__main__":' block does not run), with sys.argv = [FILE] and
whatever it prints sent to stderr.  Its top-level statements run one by one; one
that raises (say, it reads sys.argv[1]) is reported with its line and skipped, and
the kernels defined by the others are still compiled.

Parameter types, for each parameter, the first that applies: the kernel's
--signature; the parameter's annotation (a scalar type: float, int, np.float32,
...); the type of its default value (n=10: int64, a=2.0: float64); else a float64
array of the rank the kernel indexes it with.  A type is bool, int8, int16, int32,
int64, uint8, uint16, uint32, uint64, float32, float64, complex64 or complex128 for a
scalar, and the same with [:], [:,:], ... for an array of that rank, e.g.
  --signature saxpy=float32,float32[:],float32[:]
"""

TYPE_NAMES = ("bool, int8..int64, uint8..uint64, float32, float64, complex64, complex128, "
              "or an array of one such as float64[:] or float32[:,:]")


class UsageError(PygompError):
    """A command-line value that cannot be used (printed as one line)."""


def parse_type(text: str):
    try:
        t = annotate.parse_text(text)
    except TypeError:
        raise UsageError(f"unknown type {text.strip()!r}; a type is {TYPE_NAMES}") from None
    return t.type if isinstance(t, annotate.ArrayAnn) else t


def parse_signatures(specs):
    out = {}
    for spec in specs or ():
        name, sep, types_ = spec.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--signature {spec!r}: write NAME=T1,T2,... (a type is "
                             f"{TYPE_NAMES})")
        parts, depth, cur = [], 0, ""
        for ch in types_:
            depth += ch == "["
            depth -= ch == "]"
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        try:
            out[name.strip()] = [parse_type(p) for p in parts if p.strip()]
        except UsageError as e:
            raise UsageError(f"--signature {spec!r}: {e}") from None
    return out


def guess_ndim(fn, name: str) -> int:
    """The rank a parameter is used with in fn's source (indices, .shape[k]), else 1."""
    import inspect
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return 1
    nd = 1
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            v = node.value
            if isinstance(v, ast.Name) and v.id == name:
                nd = max(nd, len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1)
            elif (isinstance(v, ast.Attribute) and v.attr == "shape"
                  and isinstance(v.value, ast.Name) and v.value.id == name
                  and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)):
                nd = max(nd, node.slice.value + 1)
    return nd


def dialect(target: str):
    """The dialect of the installed plugin (entry point) whose target this is."""
    from .kernels import dialect_for
    try:
        return dialect_for(target)
    except (ValueError, NotImplementedError) as e:
        raise UsageError(f"--target {target}: no compiler dialect ({e})") from None


def run_file(path: str):
    """FILE's namespace after running its top-level statements as `HELP` says, and one
    line for each statement that failed."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    try:
        tree = ast.parse(source, path)
    except SyntaxError as e:
        raise UsageError(f"{path}:{e.lineno}: {e.msg}") from None
    flags = 0                   # `from __future__ import ...` holds for every statement
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                flags |= getattr(__future__, alias.name).compiler_flag
    name = "__pygomp_compile__"
    module = types.ModuleType(name)
    module.__file__ = path
    failures = []
    saved = sys.argv, list(sys.path), sys.modules.get(name)
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    sys.modules[name] = module
    try:
        with contextlib.redirect_stdout(sys.stderr):
            for node in tree.body:
                code = compile(ast.Module([node], []), path, "exec", flags=flags,
                               dont_inherit=True)
                try:
                    exec(code, module.__dict__)
                except (Exception, SystemExit) as e:
                    failures.append(f"{path}:{node.lineno}: the file's own code failed "
                                    f"({type(e).__name__}: {e}); that statement is skipped")
    finally:
        sys.argv, sys.path[:] = saved[0], saved[1]
        if saved[2] is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved[2]
    return module.__dict__, failures


def kernel_types(k, given):
    """Each parameter's type as `HELP` says, and the names of those guessed."""
    out, guessed = [], []
    for pname in k.param_names:
        t = k.annotations.get(pname)
        if isinstance(t, annotate.ArrayAnn):      # np.ndarray, npt.NDArray[...]: guessed
            if t.type is None:
                guessed.append(pname)
            t = t.type or T.Array(t.elem or T.FLOAT64, t.ndim or guess_ndim(k.py_func, pname))
        if t is None and pname in k.defaults:
            try:
                t = T.of_value(k.defaults[pname])
            except TypeError:
                pass
        if t is None:
            t = T.Array(T.FLOAT64, guess_ndim(k.py_func, pname))
            guessed.append(pname)
        out.append(t)
    return (given, []) if given is not None else (out, guessed)


def _spelling(t):
    """A type as --signature writes it."""
    return f"{t.elem}[{','.join(':' * t.ndim)}]" if isinstance(t, T.Array) else str(t)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pygomp compile", epilog=HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="print the generated source of the kernels in FILE")
    p.add_argument("file")
    p.add_argument("--target", default="host",
                   help="the target of an installed plugin: host, opencl, cuda, ... "
                        "(default host)")
    p.add_argument("--signature", action="append", metavar="NAME=T1,T2,...",
                   help="argument types of kernel NAME (may repeat), e.g. "
                        "saxpy=float64,float32[:],float32[:]")
    p.add_argument("--kernel", action="append", help="only these kernels")
    args = p.parse_args(argv)
    try:
        return _compile(args)
    except (UsageError, OSError) as e:
        print(f"python -m pygomp compile: error: {e}", file=sys.stderr)
        return 2


def _compile(args) -> int:
    from .errors import CompileError
    from .kernels import Kernel
    d = dialect(args.target)
    sigs = parse_signatures(args.signature)
    ns, failures = run_file(args.file)
    for line in failures:
        print(line, file=sys.stderr)
    kernels = [(n, k) for n, k in ns.items() if isinstance(k, Kernel)]
    names = {n for n, _ in kernels} | {k.__name__ for _, k in kernels}
    for name in sigs:
        if name not in names:
            raise UsageError(f"--signature names {name!r}, which is no kernel of "
                             f"{args.file} (kernels: {', '.join(sorted(names)) or 'none'})")
    if args.kernel:
        kernels = [(n, k) for n, k in kernels if n in args.kernel]
    if not kernels:
        print(f"no @target kernels in {args.file}", file=sys.stderr)
        return 1
    status = 0
    for name, k in kernels:
        types_, guessed = kernel_types(k, sigs.get(name) or sigs.get(k.__name__))
        if len(types_) != len(k.param_names):
            print(f"{name}: the signature has {len(types_)} types for the "
                  f"{len(k.param_names)} parameters ({', '.join(k.param_names)})",
                  file=sys.stderr)
            status = 1
            continue
        try:
            spec = k.specialize(*types_)     # annotations win over a signature's scalars
            source = spec.unit(d).source
        except CompileError as e:
            print(f"error: {e}", file=sys.stderr)
            if guessed:
                print(f"note: {', '.join(guessed)} had no type and were taken as float64 "
                      f"arrays; give the types with --signature, e.g. --signature "
                      f"{name}={','.join(map(_spelling, types_))}", file=sys.stderr)
            status = 1
            continue
        params = ", ".join(f"{n}: {t}" for n, (_, t) in zip(k.param_names, spec.params))
        print(f"// ---- kernel {name}({params}) target {args.target}")
        if guessed:
            print(f"// (taken as float64 arrays: {', '.join(guessed)}; see --signature)")
        print(source)
    return status


if __name__ == "__main__":
    sys.exit(main())
