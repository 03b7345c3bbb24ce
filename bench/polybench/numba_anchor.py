"""Numba as an anchor (optional): each kernel's Python function as a Numba user writes it,
``@njit(parallel=True)`` with ``prange``.

The function's source is rewritten, not copied by hand: ``omp.parallel_range(...)``
becomes ``prange(...)`` (its ``collapse=`` dropped: Numba parallelizes the outer loop),
or a plain ``range`` where it reduces into an array (``reduction="+:y"``), which
``prange`` would race on.  Scalar reductions are Numba's own.  `available` is False
without Numba; run.py then leaves the column out.
"""
from __future__ import annotations

import ast
import inspect
import math
import textwrap

import numpy as np

try:
    import numba
except ImportError:         # the anchor is optional
    numba = None

available = numba is not None


class _Rewrite(ast.NodeTransformer):
    def __init__(self, arrays):
        self.arrays = arrays        # the parameters that are arrays

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if not (isinstance(f, ast.Attribute) and f.attr == "parallel_range"):
            return node
        red = next((k.value.value for k in node.keywords if k.arg == "reduction"), "")
        names = {v.strip() for group in red.split(";") for v in group.split(":")[-1].split(",")}
        fn = "range" if names & self.arrays else "prange"
        return ast.copy_location(ast.Call(ast.Name(fn, ast.Load()), node.args, []), node)


def njit_kernel(bench, data):
    """The Numba version of ``bench``'s kernel, called with ``data`` by names (compiled
    at its first call)."""
    fn = bench.kernel.py_func
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    tree.body[0].decorator_list = []
    arrays = {p for p in bench.kernel.param_names if isinstance(data[p], np.ndarray)}
    tree = ast.fix_missing_locations(_Rewrite(arrays).visit(tree))
    scope = {"np": np, "math": math, "prange": numba.prange}
    exec(compile(tree, inspect.getsourcefile(fn), "exec"), scope)
    return numba.njit(parallel=True)(scope[fn.__name__])
