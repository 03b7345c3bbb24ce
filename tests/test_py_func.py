"""Every kernel of the examples and of the test-suite (those without a barrier or thread
numbers) computes what its ``py_func`` computes, run by Python on the same random
inputs (``omp.parallel_range`` and friends are ``range`` there), on every device."""
import importlib.util
import os
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pygomp.runtime import kinds

sys.path.insert(0, os.path.dirname(__file__))
import kernels_reduce as kr  # noqa: E402
import test_kernels as tk  # noqa: E402
import test_language as tl  # noqa: E402
import test_opencl_dialect as td  # noqa: E402
import test_regions as tr  # noqa: E402

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def example(name):
    spec = importlib.util.spec_from_file_location(f"pyfunc_examples.{name}",
                                                  EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ex = {n: example(n) for n in ("saxpy", "dot", "pi", "matvec", "jacobi", "histogram")}


# -- inputs ----------------------------------------------------------------------------

def arr(draw, dtype, shape, lo=-10, hi=10):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        el = st.floats(lo, hi, width=8 * dtype.itemsize)
    elif dtype.kind == "b":
        el = st.booleans()
    else:
        info = np.iinfo(dtype)
        el = st.integers(max(lo, info.min), min(hi, info.max))
    return draw(hnp.arrays(dtype, shape, elements=el))


def n(draw, lo=1, hi=40):
    return draw(st.integers(lo, hi))


def reduce_inputs(draw, dtype):
    g, c = n(draw, 1, 6), n(draw, 1, 9)
    x = arr(draw, dtype, g * c, 1, 60)
    p = draw(hnp.arrays(dtype, g * c, elements=st.sampled_from([1, 1, 1, -1, 2])))
    return x, p, g, c, np.zeros((6, 6), dtype)


def f8(draw, *shape, lo=-10, hi=10):
    return arr(draw, np.float64, shape, lo, hi)


CASES = {
    "saxpy": (tk.saxpy, lambda d: (d(st.floats(-4, 4)), f8(d, k := n(d)), f8(d, k))),
    "dot": (tk.dot, lambda d: (f8(d, k := n(d)), f8(d, k))),
    "matvec": (tk.matvec, lambda d: (f8(d, r := n(d), c := n(d)), f8(d, c), f8(d, r))),
    "amax": (tk.amax, lambda d: (f8(d, n(d)),)),
    "all_positive": (tk.all_positive, lambda d: (f8(d, n(d), lo=-1, hi=30),)),
    "control": (tk.control, lambda d: (f8(d, k := n(d), lo=-30, hi=30), f8(d, k, 6))),
    "mathfns": (tk.mathfns, lambda d: (f8(d, k := n(d), lo=0.01, hi=20), f8(d, k, 8))),
    "intops": (tk.intops, lambda d: (arr(d, np.int64, k := n(d), -99, 99),
                                     arr(d, np.int64, k, -9, 9), arr(d, np.int64, (k, 5)))),
    "python_ints": (tk.python_ints, lambda d: (
        arr(d, np.int32, k := n(d), -2**31, 2**31 - 1), arr(d, np.int32, k, -20, 20),
        arr(d, np.int32, k, -2, 40), arr(d, np.int32, (k, 6)))),
    "python_floats": (tk.python_floats, lambda d: (
        f8(d, k := n(d), lo=-1e6, hi=1e6), f8(d, k, lo=-3, hi=3), f8(d, k, 5))),
    "ranks": (tk.ranks, lambda d: (f8(d, a := n(d, 1, 6), n(d, 1, 6), n(d, 1, 6)),
                                   f8(d, n(d, 1, 5)), f8(d, a, 4))),
    "typed": (tk.typed, lambda d: (arr(d, np.uint8, k := n(d), 0, 255),
                                   arr(d, np.bool_, k), arr(d, np.int64, k, -999, 999),
                                   arr(d, np.float32, k), arr(d, np.float32, k))),
    "collapse2": (tk.collapse2, lambda d: (f8(d, n(d, 1, 9), n(d, 1, 9)),)),
    "strided": (tk.strided, lambda d: (f8(d, k := n(d)), f8(d, k))),
    "private_clause": (tk.private_clause, lambda d: (f8(d, k := n(d)), f8(d, k))),
    "histogram": (tk.histogram, lambda d: (arr(d, np.int64, n(d), -99, 99),
                                           arr(d, np.int64, n(d, 1, 9), 0, 9))),
    "atomic_float": (tk.atomic_float, lambda d: (f8(d, n(d)), f8(d, 1))),
    "count_int": (tk.count_int, lambda d: (arr(d, np.int32, n(d), -50, 50),
                                           d(st.integers(-50, 50)))),
    "inc": (tk.inc, lambda d: (f8(d, n(d)),)),
    "fill_sized": (tk.fill_sized, lambda d: (f8(d, n(d)), d(st.floats(-9, 9)))),
    "writes_through_helper": (tk.writes_through_helper, lambda d: (f8(d, k := n(d)),
                                                                   f8(d, k))),
    "reduce_all_i32": (kr.reduce_all, lambda d: reduce_inputs(d, np.int32)),
    "reduce_all_f64": (kr.reduce_all, lambda d: reduce_inputs(d, np.float64)),
    "reduce_bits": (kr.reduce_bits, lambda d: (lambda x: (x[0], x[2], x[3], x[4][:, :3]))(
        reduce_inputs(d, np.int64))),
    "mixed_levels": (td.mixed_levels, lambda d: (arr(d, np.int64, n(d), -50, 999),
                                                 arr(d, np.int64, 4))),
    "gemm_chained": (tl.gemm_chained, lambda d: (d(st.floats(-2, 2)), f8(d, a := n(d, 1, 9),
                                                 b := n(d, 1, 9)), f8(d, b, c := n(d, 1, 9)),
                                                 f8(d, a, c))),
    "views": (tl.views, lambda d: (f8(d, a := n(d, 1, 9), b := n(d, 2, 9)),
                                   f8(d, a, n(d, 2, 5), n(d, 3, 5)), f8(d, b), f8(d, a, 4))),
    "periodic": (tl.periodic, lambda d: (f8(d, k := n(d)), f8(d, k))),
    "skip_odd": (tl.skip_odd, lambda d: (arr(d, np.int64, k := n(d), -99, 99),
                                         arr(d, np.int64, k))),
    "skip_rows": (tl.skip_rows, lambda d: (f8(d, a := n(d, 3, 9), n(d, 3, 9), lo=-3, hi=9),
                                           f8(d, a, 2))),
    "reuse_names": (tl.reuse_names, lambda d: (f8(d, a := n(d, 1, 9), b := n(d, 1, 9)),
                                               f8(d, b, c := n(d, 1, 9)), f8(d, a, c),
                                               f8(d, a))),
    "triangles": (tl.triangles, lambda d: (f8(d, k := n(d, 3, 9), k), f8(d, k, k),
                                           f8(d, k, k, k))),
    "and_max": (tl.and_max, lambda d: (arr(d, np.int64, n(d), -99, 999),)),
    "array_sums": (tl.array_sums, lambda d: (f8(d, a := n(d, 1, 9), b := n(d, 1, 9)),
                                             f8(d, a), f8(d, 2 * b + 1),
                                             arr(d, np.int64, 2, 0, 9))),
    "scratch_rows": (tl.scratch_rows, lambda d: (f8(d, a := n(d, 1, 9), n(d, 1, 9)),
                                                 f8(d, a), n(d, 1, 5))),
    "cholesky": (tr.cholesky, lambda d: (lambda m: (m @ m.T + len(m) * np.eye(len(m)),))(
        f8(d, k := n(d, 1, 9), k, lo=0, hi=1))),
    "stencil": (tr.stencil, lambda d: (f8(d, k := n(d, 3, 40)), f8(d, k), n(d, 0, 5))),
    "converge": (tr.converge, lambda d: (f8(d, n(d), lo=0, hi=99), d(st.floats(1e-3, 1)),
                                         n(d, 1, 6), f8(d, 2))),
    "ex_saxpy": (ex["saxpy"].saxpy, lambda d: (d(st.floats(-4, 4)),
                                               arr(d, np.float32, k := n(d)),
                                               arr(d, np.float32, k))),
    "ex_dot": (ex["dot"].dot, lambda d: (f8(d, k := n(d)), f8(d, k))),
    "ex_pi": (ex["pi"].pi, lambda d: (n(d, 1, 500),)),
    "ex_matvec": (ex["matvec"].matvec, lambda d: (f8(d, r := n(d), c := n(d)), f8(d, c),
                                                  f8(d, r))),
    "ex_jacobi": (ex["jacobi"].sweep, lambda d: (f8(d, r := n(d, 1, 12), c := n(d, 1, 12)),
                                                 f8(d, r, c))),
    "ex_histogram": (ex["histogram"].histogram, lambda d: (
        f8(d, n(d), lo=-4, hi=4), -3.0, 3.0, arr(d, np.int64, n(d, 1, 9), 0, 9))),
}


# -- the comparison ----------------------------------------------------------------------

def returned(kernel, args):
    """The arrays a call gives back to the host (from/tofrom), and nothing else."""
    out = []
    for name, a in zip(kernel.param_names, args):
        if isinstance(a, np.ndarray):
            kind = kernel.kinds.get(name, kinds.TOFROM)
            if kind & kinds.FLAG_FROM:
                out.append((name, a))
    return out


def same(got, want, what):
    if np.asarray(want).dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = 1e-4 if getattr(want, "dtype", None) == np.float32 else 1e-9
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=what)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_kernel_means_its_py_func(device, case, data):
    kernel, make = CASES[case]
    args = make(data.draw)
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        want = kernel.py_func(*args)
    got = kernel.on(device)(*mine)
    if want is not None or got is not None:
        same(got, want, f"{case}: the returned value")
    for (name, a), (_, b) in zip(returned(kernel, mine), returned(kernel, args)):
        same(a, b, f"{case}: argument {name!r}")
