"""Every function of the kernel language's registry (`compiler.callables`), called in a
small kernel on the initial device, computes what the kernel's ``py_func`` computes on
numpy.  One case an entry (`CASES`, and `ARGS` for the math functions): a new entry
without one fails here.  The cases of a group share one kernel (one compilation), each
writing its own row of ``out`` (``ROW`` in a case is its row number, also in its names)."""
import functools
import importlib.util
import re

import numpy as np
import pytest

import pygomp as omp
from pygomp.compiler.callables import ENTRIES, GROUPS

CASES = {
    # parallel loops
    "omp.gang": "for iROW in omp.gang(8):\n    out[ROW, iROW] = x[iROW] * 2",
    "omp.worker": "for iROW in omp.worker(8):\n    out[ROW, iROW] = x[iROW] + y[iROW]",
    "omp.vector": "for iROW in omp.vector(8):\n    out[ROW, iROW] = x[iROW] - y[iROW]",
    "omp.parallel_range": "sROW = 0.0\n"
                          "for iROW in omp.parallel_range(8, reduction=\"+:sROW\"):\n"
                          "    sROW += x[iROW]\nout[ROW, 0] = sROW",
    # sequential loops
    "range": "for iROW in range(1, 8, 2):\n    out[ROW, iROW] = x[iROW]",
    "enumerate": "for iROW, vROW in enumerate(y, 1):\n    out[ROW, iROW - 1] = vROW * iROW",
    "zip": "for aROW, bROW in zip(x, y):\n    out[ROW, 0] += aROW * bROW",
    # thread numbers (what holds on every device and in Python)
    "omp.gang_id": "for iROW in omp.gang(8):\n"
                   "    out[ROW, iROW] = omp.gang_id() < omp.num_gangs()",
    "omp.worker_id": "for gROW in omp.gang(2):\n    for iROW in omp.worker(4):\n"
                     "        out[ROW, gROW * 4 + iROW] = omp.worker_id() < 1024",
    "omp.vector_id": "for iROW in omp.vector(8):\n"
                     "    out[ROW, iROW] = omp.vector_id() < omp.vector_length()",
    "omp.num_gangs": "out[ROW, 0] = omp.num_gangs() >= 1",
    "omp.num_workers": "for gROW in omp.gang(2):\n    out[ROW, gROW] = omp.num_workers() >= 1",
    "omp.vector_length": "out[ROW, 0] = omp.vector_length() >= 1",
    # memory and synchronization
    "omp.shared_array": "for gROW in omp.gang(2):\n"
                        "    sROW = omp.shared_array(4, np.float64)\n"
                        "    for iROW in omp.worker(4):\n"
                        "        sROW[iROW] = x[iROW] * (gROW + 1)\n"
                        "    omp.barrier()\n"
                        "    for iROW in omp.worker(4):\n"
                        "        out[ROW, gROW * 4 + iROW] = sROW[3 - iROW]",
    "omp.barrier": "for gROW in omp.gang(1):\n"
                   "    sROW = omp.shared_array(8, np.float64)\n"
                   "    for iROW in omp.worker(8):\n        sROW[iROW] = y[iROW]\n"
                   "    omp.barrier()\n"
                   "    for iROW in omp.worker(8):\n        out[ROW, iROW] = sROW[7 - iROW]",
    "np.zeros": "tROW = np.zeros(3)\ntROW[1] = x[0]\nout[ROW, 0] = tROW[0] + tROW[1] + tROW[2]",
    "np.empty": "tROW = np.empty(2)\ntROW[0] = x[1]\ntROW[1] = 2.0\n"
                "out[ROW, 0] = tROW[0] * tROW[1]",
    # atomics
    "omp.atomic_add": "for iROW in omp.parallel_range(8):\n"
                      "    omp.atomic_add(out, (ROW, 0), x[iROW])",
    "omp.atomic_max": "for iROW in omp.parallel_range(8):\n"
                      "    omp.atomic_max(out, (ROW, 0), x[iROW])",
    "omp.atomic_min": "out[ROW, 0] = 10.0\nfor iROW in omp.parallel_range(8):\n"
                      "    omp.atomic_min(out, (ROW, 0), y[iROW])",
    # (an old value is captured in a parallel loop: a gang's work-items run code outside
    # one redundantly, and the GPU dialects refuse such a capture there)
    "omp.atomic_exchange": "out[ROW, 1] = 4.0\nfor iROW in omp.parallel_range(1):\n"
                           "    oROW = omp.atomic_exchange(out, (ROW, 1), x[2])\n"
                           "    out[ROW, 0] = oROW",
    "omp.atomic_cas": "out[ROW, 1] = 3.0\nfor iROW in omp.parallel_range(1):\n"
                      "    oROW = omp.atomic_cas(out, (ROW, 1), 3.0, x[0])\n"
                      "    pROW = omp.atomic_cas(out, (ROW, 1), 3.0, y[0])\n"
                      "    out[ROW, 0] = oROW\n    out[ROW, 2] = pROW",
    # the scan directive
    "omp.inclusive": "sROW = 0.0\n"
                     "for iROW in omp.parallel_range(8, reduction=\"inscan,+:sROW\"):\n"
                     "    sROW += x[iROW]\n    omp.inclusive(sROW)\n    out[ROW, iROW] = sROW",
    "omp.exclusive": "sROW = 1.0\n"
                     "for iROW in omp.parallel_range(8, reduction=\"inscan,+:sROW\"):\n"
                     "    out[ROW, iROW] = sROW\n    omp.exclusive(sROW)\n    sROW += y[iROW]",
    # conversions
    "int": "out[ROW, 0] = int(x[0] * 7) + int(-y[1] * 5)",
    "float": "out[ROW, 0] = float(xi[0]) / 3",
    "bool": "out[ROW, 0] = bool(x[0] > 1) + 2 * bool(xi[2])",
    "complex": "out[ROW, 0] = abs(complex(x[0], y[0]))\ncout[ROW, 0] = complex(x[1])",
    "np.bool_": "out[ROW, 0] = np.bool_(x[1] > 1)",
    "np.int8": "out[ROW, 0] = np.int8(xi[0]) * np.int8(2)",
    "np.int16": "out[ROW, 0] = np.int16(xi[1]) * np.int16(300)",
    "np.int32": "out[ROW, 0] = np.int32(x[0] * 1000)",
    "np.int64": "out[ROW, 0] = np.int64(xi[3]) // 7",
    "np.uint8": "out[ROW, 0] = np.uint8(xi[0] + 60)",
    "np.uint16": "out[ROW, 0] = np.uint16(xi[1] + 60) * np.uint16(3)",
    "np.uint32": "out[ROW, 0] = np.uint32(xi[2] + 60) % np.uint32(7)",
    "np.uint64": "out[ROW, 0] = np.uint64(0x9E3779B97F4A7C15) % np.uint64(1000)",
    "np.float32": "out[ROW, 0] = np.float32(x[3]) * np.float32(0.1)",
    "np.float64": "out[ROW, 0] = np.float64(xi[4]) / 7",
    "np.complex64": "cout[ROW, 0] = np.complex64(z[0]) * np.complex64(z[1])",
    "np.complex128": "cout[ROW, 0] = np.complex128(x[2]) + np.complex128(z[1])",
    # min, max, abs
    "min": "out[ROW, 0] = min(x[0], y[0])\nout[ROW, 1] = min(x[1], y[1], 0.9)",
    "max": "out[ROW, 0] = max(x[0], y[0])\nout[ROW, 1] = max(x[1], y[1], 1.1)",
    "np.minimum": "out[ROW, :] = np.minimum(x, y)",
    "np.maximum": "out[ROW, :] = np.maximum(x, y)",
    "abs": "out[ROW, 0] = abs(x[0] - 1.2) + abs(xi[1])\nout[ROW, 1] = abs(z[0])",
    "np.abs": "out[ROW, :] = np.abs(x - 1)",
    "np.absolute": "out[ROW, :] = np.absolute(z)",
    # complex numbers
    "np.conj": "cout[ROW, :] = np.conj(z)",
    "np.conjugate": "cout[ROW, :] = np.conjugate(z) * 2",
    "np.real": "out[ROW, :] = np.real(z)",
    "np.imag": "out[ROW, :] = np.imag(z)",
    "cmath.exp": "cout[ROW, 0] = cmath.exp(z[0])",
    "cmath.sqrt": "cout[ROW, 0] = cmath.sqrt(z[1])",
    ".conjugate()": "cout[ROW, 0] = z[1].conjugate()",
    # reductions
    "np.sum": "out[ROW, 0] = np.sum(x)\nout[ROW, 1] = np.sum(xi)",
    "np.prod": "out[ROW, 0] = np.prod(x)",
    "np.min": "out[ROW, 0] = np.min(x)",
    "np.max": "out[ROW, 0] = np.max(A)",
    "np.amin": "out[ROW, 0] = np.amin(y)",
    "np.amax": "out[ROW, 0] = np.amax(y)",
    "np.dot": "out[ROW, 0] = np.dot(x, y)",
    "np.matmul": "out[ROW, :] = np.matmul(A, x)",
    "np.argmin": "out[ROW, 0] = np.argmin(x)",
    "np.argmax": "out[ROW, 0] = np.argmax(A)",
    "np.linalg.norm": "out[ROW, 0] = np.linalg.norm(x) + np.linalg.norm(A)",
    ".sum()": "out[ROW, 0] = x.sum()",
    ".prod()": "out[ROW, 0] = A.prod()",
    ".min()": "out[ROW, 0] = x.min()",
    ".max()": "out[ROW, 0] = y.max()",
    ".argmin()": "out[ROW, 0] = x.argmin()",
    ".argmax()": "out[ROW, 0] = A.argmax()",
    # array functions
    "np.where": "out[ROW, :] = np.where(x > 1, x, y)",
    "np.clip": "out[ROW, :] = np.clip(x, 0.7, 1.2)",
    "np.outer": "M[:, :] = np.outer(x, y[::-1])",
    "np.cumsum": "out[ROW, :] = np.cumsum(x)",
    "np.cumprod": "out[ROW, :] = np.cumprod(y)",
    # other builtins
    "len": "out[ROW, 0] = len(x) + len(A)",
    "print": "print(\"\", end=\"\")",
}

# the math functions' arguments: x and y in [0.5, 1.5), v holding NaN and infinities
ARGS = {
    "sqrt": "x", "exp": "x", "log": "x", "log2": "x", "log10": "x", "sin": "x", "cos": "x",
    "tan": "x", "asin": "x / 2", "arcsin": "x / 2", "acos": "x / 2", "arccos": "x / 2",
    "atan": "x", "arctan": "x", "sinh": "x", "cosh": "x", "tanh": "x", "asinh": "x",
    "arcsinh": "x", "acosh": "x + 1", "arccosh": "x + 1", "atanh": "x / 2",
    "arctanh": "x / 2", "erf": "x - 1", "erfc": "x", "expm1": "x - 1", "log1p": "x - 1",
    "fabs": "x - 1", "atan2": "x, y - 1", "arctan2": "x, y - 1", "pow": "x, y * 2",
    "power": "x, y * 2", "hypot": "x, y", "fmod": "x * 3, y", "copysign": "x, 1 - y",
    "gamma": "x", "lgamma": "x", "floor": "x * 3 - 2", "ceil": "x * 3 - 2",
    "trunc": "x * 3 - 2", "isnan": "v", "isinf": "v", "isfinite": "v",
}
MATH_ARGS = {f"{p}.{n}": a for n, a in ARGS.items() for p in ("math", "np")}

KERNEL = """import cmath
import math

import numpy as np
import pygomp as omp


@omp.target
def k(x, y, v, z, xi, A, M, out, cout):
{body}
"""
NAMES = "x y v z xi A M out cout".split()


def case(e):
    """The statements of entry ``e``'s case (None: it has none)."""
    if e.group == "math":
        args = MATH_ARGS.get(e.name)
        if args is None:
            return None
        if e.name.startswith("np."):                # numpy's: on arrays, elementwise
            return f"out[ROW, :] = {e.name}({args})"
        scalar = re.sub(r"\b([xyv])\b", r"\1[iROW]", args)
        return f"for iROW in range(8):\n    out[ROW, iROW] = {e.name}({scalar})"
    return CASES.get(e.name)


def group_of(name):
    return next(e.group for e in ENTRIES if e.name == name)


def inputs(rows):
    rng = np.random.default_rng(7)
    return [0.5 + rng.random(8), 0.5 + rng.random(8),
            np.array([1.0, np.nan, np.inf, -np.inf, 0.5, -2.0, np.nan, 3.0]),
            (rng.random(8) - 0.5) + 1j * (rng.random(8) - 0.5),
            rng.integers(-50, 50, 8), rng.random((8, 8)), np.zeros((8, 8)),
            np.zeros((rows, 8)), np.zeros((rows, 8), np.complex128)]


@functools.lru_cache(maxsize=None)
def results(group, folder):
    """{entry name: (its row of the kernel's outputs, of py_func's)} of ``group``, and the
    other arrays of both, from one kernel holding every case of the group."""
    entries = [e for e in ENTRIES if e.group == group and case(e) is not None]
    lines = []
    for row, e in enumerate(entries):
        text = case(e).replace("ROW", str(row))
        lines += [f"    {s}" for s in text.splitlines()]
    path = folder / f"callables_{group}.py"
    path.write_text(KERNEL.format(body="\n".join(lines)))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    got, want = inputs(len(entries)), inputs(len(entries))
    with np.errstate(all="ignore"):
        mod.k.py_func(*want)
    mod.k.on(omp.omp_get_initial_device())(*got)
    return {e.name: row for row, e in enumerate(entries)}, got, want


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("callables")


def test_every_case_names_an_entry():
    names = {e.name for e in ENTRIES}
    assert sorted(set(CASES) - names) == []
    assert sorted(n for n in ARGS if f"math.{n}" not in names and f"np.{n}" not in names) == []
    assert set(GROUPS) == {e.group for e in ENTRIES}


@pytest.mark.parametrize("name", [e.name for e in ENTRIES])
def test_entry_computes_its_py_func(name, folder):
    e = next(e for e in ENTRIES if e.name == name)
    text = case(e)
    assert text is not None, f"no test case for {name}: add one to CASES in {__file__}"
    called = re.escape(name.rstrip("()")) + r"\("
    assert re.search(("" if name.startswith(".") else r"(?<![\w.])") + called, text), \
        f"the case of {name} does not call it"
    rows, got, want = results(e.group, folder)
    row = rows[name]
    for n, a, b in zip(NAMES, got, want):
        if n in ("out", "cout"):
            a, b = a[row], b[row]
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=f"{name}: {n}")
