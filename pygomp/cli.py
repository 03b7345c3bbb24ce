"""``python -m pygomp compile FILE.py --target TARGET [--signature ...]``

Prints the generated source of every ``@target`` kernel defined in FILE, in the dialect
of the installed plugin whose target is TARGET (host, opencl, cuda, or a third party's:
plugins are found through the entry-point group ``pygomp.plugins``).  Parameter types
come from annotations, then from ``--signature NAME=T1,T2,...`` (one a kernel, may repeat;
a type is ``float32``, ``int64``, ... for a scalar and ``float32[:]``, ``float64[:,:]``
for an array); a parameter with neither is taken as a float64 array of the rank it is indexed with.
"""
from __future__ import annotations

import argparse
import runpy
import sys

from .compiler import types as T


def parse_type(text: str):
    text = text.strip()
    if text.endswith("]") and "[" in text:
        name, dims = text[:-1].split("[", 1)
        return T.Array(T.scalar(name.strip()), dims.count(":") or 1)
    return T.scalar(text)


def parse_signatures(specs):
    out = {}
    for spec in specs or ():
        name, sep, types = spec.partition("=")
        if not sep:
            raise SystemExit(f"--signature {spec!r}: write NAME=T1,T2,...")
        parts, depth, cur = [], 0, ""
        for ch in types:
            depth += ch == "["
            depth -= ch == "]"
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        out[name.strip()] = [parse_type(p) for p in parts if p.strip()]
    return out


def guess_ndim(fn, name: str) -> int:
    """The rank a parameter is used with in fn's source (indices, .shape[k]), else 1."""
    import ast
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
        raise SystemExit(f"no compiler dialect for target {target!r}: {e}") from None


def main(argv=None) -> int:
    from .errors import CompileError
    from .kernels import Kernel
    p = argparse.ArgumentParser(prog="python -m pygomp compile",
                                description="print the generated source of the kernels in FILE")
    p.add_argument("file")
    p.add_argument("--target", default="host",
                   help="the target of an installed plugin: host, opencl, cuda, ... "
                        "(default host)")
    p.add_argument("--signature", action="append", metavar="NAME=T1,T2,...",
                   help="argument types of kernel NAME, e.g. saxpy=float64,float32[:],float32[:]")
    p.add_argument("--kernel", action="append", help="only these kernels")
    args = p.parse_args(argv)
    d = dialect(args.target)
    sigs = parse_signatures(args.signature)
    ns = runpy.run_path(args.file, run_name="__pygomp_compile__")
    kernels = [(n, k) for n, k in ns.items() if isinstance(k, Kernel)]
    if args.kernel:
        kernels = [(n, k) for n, k in kernels if n in args.kernel]
    if not kernels:
        print(f"no @target kernels in {args.file}", file=sys.stderr)
        return 1
    status = 0
    for name, k in kernels:
        types = sigs.get(name) or sigs.get(k.__name__)
        guessed = []
        if types is None:
            types = []
            for pname in k.param_names:
                t = k.annotations.get(pname)
                if t is None:
                    t = T.Array(T.FLOAT64, guess_ndim(k.py_func, pname))
                    guessed.append(pname)
                types.append(t)
        if len(types) != len(k.param_names):
            print(f"{name}: the signature has {len(types)} types for "
                  f"{len(k.param_names)} parameters", file=sys.stderr)
            status = 1
            continue
        try:
            spec = k.specialize(*types)     # annotations win over a signature's scalars
            source = spec.unit(d).source
        except CompileError as e:
            print(f"error: {e}", file=sys.stderr)
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
