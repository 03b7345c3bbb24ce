"""Python forms in kernels, each against the kernel's ``py_func`` (numpy 2) on every
device and under the CUDA emulation: for over arrays, ``enumerate``, ``zip``, range
steps in every loop, tuple returns, nested def/lambda and closures, NEP 50's weak Python
scalars; and parameter annotations, followed or refused."""
import os
import subprocess
import sys
import textwrap
import typing

import numpy as np
import numpy.typing as npt
import pytest

import pygomp.kernels as omp
from pygomp.errors import CompileError

SCALE = 0.25                                    # a module constant


@omp.target
def iterate(x, y, A, out):
    s = 0.0
    for i, v in enumerate(x):
        s += i * v
    for a, b in zip(x, y):
        s += a - b
    for i, (a, b) in enumerate(zip(range(10, 0, -3), y), 2):
        s += i * a * b
    for v in x:
        s += v
    for row in A:
        for j, e in enumerate(row, start=1):
            s += e * j
    m = 3
    for t in range(m, 1, -1):
        s += t
    for p, q in zip(range(1, 20, m), range(m)):
        s += p * q
    out[0] = s
    for i in omp.parallel_range(A.shape[0]):
        acc = 0.0
        for j, e in enumerate(A[i]):
            acc += e * j
        out[i + 1] = acc
    return t, v, q, p


@omp.target
def steps(x, A, st):
    for i in omp.parallel_range(1, x.shape[0], 3):
        x[i] += 1.0
    for i in omp.parallel_range(x.shape[0] - 1, 0, -2):
        x[i] *= 2.0
    for i in omp.parallel_range(0, A.shape[0], 2, collapse=2):
        for j in range(A.shape[1] - 1, -1, -3):
            A[i, j] += i * 10 + j
    for g in omp.gang(0, A.shape[0], st):
        for w in omp.worker(A.shape[1] - 1, 0, -st):
            t = 0.0                     # the lanes run at once: A[g, w] += in them races
            for v in omp.vector(0, 4, st, reduction="+:t"):
                t += 0.5 + v
            A[g, w] += t
    s = 0.0
    for i in omp.parallel_range(x.shape[0] - 1, -1, -st, reduction="+:s"):
        s += x[i]
    return s


@omp.declare_target
def extremes(x):
    lo = x[0]
    hi = x[0]
    for v in x:
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@omp.target
def summary(x, A, out):
    for i in omp.parallel_range(A.shape[0]):
        lo, hi = extremes(A[i])
        out[i] = hi - lo
    s = 0.0
    n = 0
    for v in x:
        s += v
        if v > 0.5:
            n += 1
    lo, hi = extremes(x)
    return s, n, lo * hi


@omp.target
def passes_on(x):
    return extremes(x)


def make_nested(c):
    @omp.target
    def nested(x, out):
        sq = lambda v: v * v                            # noqa: E731
        def shifted(v, d):                              # noqa: E306
            return sq(v) + d * c + SCALE
        def both(v):                                    # noqa: E306
            return v + 1, v - 1
        t = 0.5
        def reads_kernel_variables(v):                  # noqa: E306
            return v * t + x[0]
        for i in omp.parallel_range(x.shape[0]):
            a, b = both(x[i])
            out[i] = shifted(x[i], i) + a * b + reads_kernel_variables(x[i])
        u, _ = both(c)
        return sq(x[1]), u
    return nested


nested = make_nested(2.0)


@omp.target
def weak(dx, out):
    inv = 0.5
    for i in omp.parallel_range(dx.shape[0]):
        ax = 0.0
        ax += dx[i] * inv
        out[i] = ax * 3.1 + i * 0.1
    acc = 0.0
    for v in dx:
        acc += v * inv
    s = 0
    for i in range(dx.shape[0]):
        s += dx[i] > 0.5
    m = 0
    m += dx[0]
    return acc, s, m


F32 = np.float32


def rng_arrays(dtype, seed=3):
    rng = np.random.default_rng(seed)
    return (rng.random(6).astype(dtype), rng.random(5).astype(dtype),
            rng.random((3, 4)).astype(dtype))


def cases(dtype):
    x, y, A = rng_arrays(dtype)
    return [(iterate, (x, y, A, np.zeros(4, dtype))),
            (steps, (x, A, 2)),
            (summary, (x, A, np.zeros(3, dtype))),
            (passes_on, (x,)),
            (nested, (x, np.zeros(6, dtype))),
            (weak, (x, np.zeros(6, np.float64)))]


def same(got, want, dtype):
    """The same values, and for a tuple the same numpy types."""
    tol = dict(rtol=1e-5 if dtype == F32 else 1e-12)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert np.result_type(g) == np.result_type(w), (got, want)
            np.testing.assert_allclose(g, w, **tol)
    else:
        np.testing.assert_allclose(got, want, **tol)


def run_both(kernel, args, run):
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    return run(kernel, mine), kernel.py_func(*theirs), mine, theirs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(6), ids=lambda k: cases(F32)[k][0].__name__)
def test_forms_mean_their_py_func(device, dtype, case):
    kernel, args = cases(dtype)[case]
    got, want, mine, theirs = run_both(kernel, args, lambda k, a: k.on(device)(*a))
    same(got, want, dtype)
    for a, b in zip(mine, theirs):
        if isinstance(a, np.ndarray):
            same(a, b, dtype)


@pytest.mark.parametrize("gangs, workers, vector", [(3, 2, 4), (1, 1, 32)])
def test_forms_under_the_cuda_emulation(gangs, workers, vector):
    emu = pytest.importorskip("test_cuda_emu")
    every = cases(F32) + cases(np.float64)
    lib = emu.emulator(every)
    for kernel, args in every:
        got, want, mine, theirs = run_both(
            kernel, args, lambda k, a: emu.run(lib, k, a, gangs, workers, vector))
        dtype = args[0].dtype
        if isinstance(want, tuple):
            same(got, want, dtype)
        elif want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5)
        for a, b in zip(mine, theirs):
            if isinstance(a, np.ndarray):
                same(a, b, dtype)


def test_nep50_weak_python_scalars(device):
    """``acc = 0.0; acc += dx[i] * inv`` with float32 dx is float32, as numpy 2 makes
    it; a Python int counter that adds bools becomes int64; a loop index is a Python
    int (``i * 0.1`` is a Python float, which leaves float32 ``ax * 3.1`` float32)."""
    dx = np.random.default_rng(1).random(9).astype(F32)
    out, out_py = np.zeros(9), np.zeros(9)
    got = weak.on(device)(dx, out)
    want = weak.py_func(dx, out_py)
    assert [type(v) for v in got] == [type(v) for v in want] == [F32, np.int64, F32]
    assert got == want
    np.testing.assert_allclose(out, out_py, rtol=1e-6)     # (OpenCL may fuse a*b+c)


@omp.target
def scaled(a, n, x, out):
    for i in omp.parallel_range(x.shape[0]):
        out[i] = a * x[i]
    return x[0] * n


@pytest.mark.parametrize("a, n", [(1 / 3, 3), (np.float64(1 / 3), np.int64(3))],
                         ids=["python", "numpy"])
def test_nep50_weak_scalar_arguments(device, a, n):
    """A Python float or int passed to a kernel is weak, as in numpy 2: ``a * x[i]``
    with float32 ``x`` is float32 for ``a = 1/3`` and float64 for ``np.float64(1/3)``
    (stored into a float64 array, the two differ); a Python int times float32 stays
    float32, an int64 makes it float64."""
    x = np.full(5, 1 / 3, F32)
    out, out_py = np.zeros(5), np.zeros(5)
    got, want = scaled.on(device)(a, n, x, out), scaled.py_func(a, n, x, out_py)
    assert np.array_equal(out, out_py), (out, out_py)
    assert float(got) == float(want)        # 1.0 in float32, 1.0000000298 in float64


def test_tuple_returns_nowait(device):
    x, _, A = rng_arrays(np.float64)
    f = summary.on(device)(x, A, np.zeros(3), nowait=True)
    assert f.wait() == summary.py_func(x, A, np.zeros(3))


# -- annotations -------------------------------------------------------------------


@omp.target
def annotated(x: "float32[:]", y: npt.NDArray[np.float64],
              z: np.ndarray[tuple[int, int], np.dtype[np.int32]], w: np.ndarray,
              a: np.float32):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = x[i] * a + z[0, 0] + w[0]


def annotated_args():
    return [np.ones(4, F32), np.zeros(4), np.ones((2, 2), np.int32), np.ones(3, np.int8),
            2.5]


def test_annotations_are_followed(device):
    args = annotated_args()
    annotated.on(device)(*args)
    want = np.zeros(4)
    annotated.py_func(args[0], want, *args[2:])
    assert np.array_equal(args[1], want)
    spec = annotated.spec(tuple(args))
    assert str(spec.argtypes[-1]) == "float32"          # the scalar annotation wins


@pytest.mark.parametrize("pos, value, text", [
    (0, np.ones(4), "parameter 'x' is annotated float32[:] but gets a 1-d float64 array"),
    (0, np.ones((2, 2), F32), "parameter 'x' is annotated float32[:] but gets a 2-d "
                              "float32 array"),
    (1, np.zeros(4, F32), "parameter 'y' is annotated npt.NDArray[np.float64] but gets a "
                          "1-d float32 array"),
    (2, np.ones(4, np.int32), "parameter 'z' is annotated int32[:, :] but gets a 1-d "
                              "int32 array"),
    (3, 1.0, "parameter 'w' is annotated np.ndarray but gets a float64 scalar"),
    (4, np.ones(1, F32), "parameter 'a' is annotated the scalar type float32 but gets a "
                         "1-d float32 array"),
])
def test_annotations_refuse_other_arguments(device, pos, value, text):
    args = annotated_args()
    args[pos] = value
    with pytest.raises(TypeError) as info:
        annotated.on(device)(*args)
    assert str(info.value) == f"annotated(): {text}"


def test_type_aliases_read_as_what_they_stand_for():
    """numpy 2.5 makes npt.NDArray a type alias (``type NDArray[T] = ...``)."""
    te = pytest.importorskip("typing_extensions")
    from pygomp.compiler import annotate
    T = typing.TypeVar("T", bound=np.generic)
    shape = te.TypeAliasType("_AnyShape", tuple[typing.Any, ...])
    alias = te.TypeAliasType("NDArray", np.ndarray[shape, np.dtype[T]], type_params=(T,))
    vec = te.TypeAliasType("Vec", np.ndarray[tuple[int], np.dtype[np.float32]])
    assert annotate.parse(alias[np.float64]).text == "npt.NDArray[np.float64]"
    assert annotate.parse(vec).text == "float32[:]"


def test_unreadable_annotations_fail_at_decoration():
    def listed(x: list):
        pass

    def misspelt(x: "flot32[:]"):       # noqa: F821
        pass
    for fn, text in ((listed, "annotation list is not a kernel type: use a scalar type"),
                     (misspelt, "not a kernel scalar type: 'flot32'")):
        with pytest.raises(CompileError) as info:
            omp.target(fn)
        first = str(info.value).splitlines()[0]
        line = fn.__code__.co_firstlineno
        assert first.startswith(f"{__file__}:{line}: {fn.__name__}: parameter 'x': {text}")


def test_compile_command_reads_the_same_annotations(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(textwrap.dedent("""
        import numpy as np, numpy.typing as npt, pygomp as omp

        @omp.target
        def scale(x: npt.NDArray[np.float32], a: np.float32):
            for i in omp.parallel_range(x.shape[0]):
                x[i] *= a
    """))
    r = subprocess.run([sys.executable, "-m", "pygomp", "compile", str(src)],
                       capture_output=True, text=True, cwd=os.path.dirname(__file__))
    assert r.returncode == 0, r.stderr
    assert "float *x" in r.stdout and "float a" in r.stdout


# -- what is refused -------------------------------------------------------------


def k_unbound_lambda(x):
    x[0] = (lambda v: v)(1.0)


def k_default(x):
    def f(v, c=2.0):
        return v * c
    x[0] = f(x[0])


def k_parallel_enumerate(x):
    for i, v in enumerate(omp.parallel_range(x.shape[0])):
        x[i] = v


def k_unpacks_three(x, y):
    for a, b, c in zip(x, y):
        x[0] = a


def k_tuple_as_value(x):
    x[0] = extremes(x)


def k_tuple_and_scalar(x):
    if x[0] > 0:
        return x[0], x[1]
    return x[0]


@pytest.mark.parametrize("fn, text", [
    (k_unbound_lambda, "a lambda must be bound to a name (f = lambda v: ...) and called "
                       "by it"),
    (k_default, "a nested function takes plain parameters (no defaults, *args or "
                "**kwargs) and no decorators"),
    (k_parallel_enumerate, "omp.parallel_range(x.shape[0]): omp loops are index-based; "
                           "loop over the index (for i in omp.parallel_range(x.shape[0])) "
                           "and read the elements"),
    (k_unpacks_three, "the loop unpacks 3 values and zip(x, y) gives 2"),
    (k_tuple_as_value, "extremes returns a tuple: unpack it (a, b = extremes(x))"),
    (k_tuple_and_scalar, "return of a tuple and of something else in the same function"),
])
def test_forms_refused_with_their_reason(fn, text):
    args = [np.zeros(4)] * (fn.__code__.co_argcount)
    with pytest.raises(CompileError) as info:
        omp.target(fn).source(*args)
    assert str(info.value).splitlines()[0].endswith(": " + text)
