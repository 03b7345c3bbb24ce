"""Error messages as a user reads them: each says what is wrong, at the kernel's line.

Host-only: kernels are compiled (``Kernel.source``), not run."""
import inspect
import os

import numpy as np
import pytest

import pygomp.kernels as omp
from pygomp.errors import CompileError

HERE = os.path.abspath(__file__)


class Foo:
    pass


def where(fn, marker="# MARK"):
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if marker in text:
            return f"{HERE}:{start + k}", text.strip()
    raise AssertionError(marker)


def message(fn, *args):
    """The first line of the error of decorating ``fn`` and compiling it for ``args``,
    after its place, which must be the marked line."""
    with pytest.raises(CompileError) as info:
        omp.target(fn).source(*args)
    place, src = where(fn)
    first, _, rest = str(info.value).partition("\n")
    assert first.startswith(place + ": ") and rest.strip() == src
    return first[len(place) + 2:]


def k_complex(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] = complex(1.0, 2.0)  # MARK


def k_cumsum(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] = np.cumsum(x[i])  # MARK


def k_class(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] = Foo()  # MARK


def k_yield(x):
    for i in omp.parallel_range(x.shape[0]):
        yield x[i]  # MARK


def k_rank_2_for_1(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = x[i] * 2.0  # MARK


def k_unpack_2(x):
    n, m = x.shape  # MARK
    for i in omp.parallel_range(n):
        for j in range(m):
            x[i, j] = 1.0


def k_index_2(x):
    for i in omp.parallel_range(4):
        x[i, 0] = 1.0  # MARK


def k_avg(x):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="avg:s"):  # MARK
        s += x[i]
    return s


V, M = np.zeros(4), np.zeros((4, 4))
CASES = [
    (k_complex, (V,), "a complex128 value cannot become float64: take its .real, .imag "
                      "or abs()"),
    (k_cumsum, (V,), "np.cumsum() makes an array: a kernel takes it only as the whole "
                     "right side of an assignment to a sub-array (y[:] = np.cumsum(x[i]))"),
    (k_class, (V,), "Foo is a class: kernels cannot create objects"),
    (k_yield, (V,), "yield is not supported in kernels"),
    (k_rank_2_for_1, (M, V), "x[i] is an array: x has 2 dimensions and x[i] gives 1 "
                             "index: a kernel computes array arithmetic only into a "
                             "sub-array (out[:] = ...); it makes no array of its own"),
    (k_unpack_2, (V,), "x has 1 dimension and the kernel unpacks 2 from its shape"),
    (k_index_2, (V,), "x has 1 dimension and the kernel indexes it with 2"),
    (k_avg, (V,), "bad reduction 'avg:s': 'avg' is not a reduction operator; the "
                  "operators allowed are + * max min & | ^ and or"),
]


@pytest.mark.parametrize("fn,args,text", CASES, ids=[c[0].__name__ for c in CASES])
def test_compile_messages(fn, args, text):
    assert message(fn, *args) == text


# -- what @omp.target reports at once ------------------------------------------------

def k_try(x):
    try:  # MARK
        x[0] = 1.0
    except ValueError:
        pass


def k_break(x):
    for i in omp.parallel_range(x.shape[0]):
        if x[i] > 0:
            break  # MARK


def k_lambda(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] = max(lambda v: v, 1.0)  # MARK


def k_reduction_text(x):
    s = 0.0
    for i in omp.gang(4, reduction="s"):  # MARK
        s += x[i]


def k_args(*xs):  # MARK
    pass


class Box:
    def k_method(self, x):
        for i in omp.parallel_range(4):
            x[i] = sum([v for v in range(3)])  # MARK


EARLY = [k_try, k_break, k_lambda, k_reduction_text, k_args, k_yield, k_avg, Box.k_method]


@pytest.mark.parametrize("fn", EARLY, ids=[f.__name__ for f in EARLY])
def test_decoration_reports_what_needs_no_types_as_the_first_call_did(fn):
    from pygomp.compiler import frontend, types as T
    with pytest.raises(CompileError) as early:
        omp.target(fn)
    with pytest.raises(CompileError) as first_call:   # the front end's own check
        frontend.compile_function(fn, [T.Array(T.FLOAT64, 1)] * fn.__code__.co_argcount)
    assert str(early.value) == str(first_call.value)
    assert str(early.value).startswith(where(fn)[0] + ": ")


def k_types_needed(x):
    x[0] = nothere  # noqa: F821  (defined after the kernel, or never)
    for i in omp.parallel_range(x.shape[0], reduction=f"+:{x}"):
        x[i, 0, 1] = 1


def test_decoration_leaves_what_needs_types_or_names_to_the_call():
    k = omp.target(k_types_needed)          # no error yet: a global may come later
    with pytest.raises(CompileError, match="name 'nothere' is not defined"):
        k.source(V)


NO_SOURCE = ("cannot compile sq: it is defined in {}, and Python keeps no source of code "
             "run by python -c, from standard input or by exec; define kernels in a file, "
             "a notebook or IPython")
SQ = """import pygomp as omp
@omp.target
def sq(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] *= x[i]
print("decorated")
"""


def test_a_kernel_without_source_is_refused_when_decorated():
    with pytest.raises(CompileError) as info:
        exec(compile(SQ, "<string>", "exec"), {})
    assert str(info.value) == NO_SOURCE.format("<string>")
    import subprocess
    import sys
    for argv, stdin, where in [(["-c", SQ], None, "<string>"), ([], SQ, "<stdin>")]:
        r = subprocess.run([sys.executable, *argv], input=stdin, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 1 and "decorated" not in r.stdout
        assert r.stderr.splitlines()[-1] == \
            f"pygomp.errors.CompileError: {NO_SOURCE.format(where)}"


def test_present_names_the_kernel_and_the_argument(offload_device):
    @omp.target(map={"x": "present,tofrom"})
    def needs_x(x):
        for i in omp.parallel_range(x.shape[0]):
            x[i] = 1.0
    from pygomp import MappingError
    x = np.zeros(10)
    a = x.ctypes.data
    with pytest.raises(MappingError) as info:
        needs_x.on(offload_device)(x)
    assert str(info.value) == (
        f"device {offload_device}: needs_x: argument 'x': present: [{a:#x}..{a + 80:#x}) "
        f"(80 bytes at host address {a:#x}) is not present on the device")
