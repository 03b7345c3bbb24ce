"""OpenMP's scan directive: a parallel loop with ``reduction="inscan,OP:s"`` and
``omp.inclusive(s)`` or ``omp.exclusive(s)`` in its body.  Each operator, inclusive and
exclusive, on every device and under the CUDA emulation of test_cuda_emu, against the
kernel's ``py_func`` (integers exactly, floats within the rounding of another order of
the sums); and the refusals, each with the rule it breaks."""
import os
import sys

import numpy as np
import pytest

import pygomp.kernels as omp

sys.path.insert(0, os.path.dirname(__file__))
from test_array_exprs import refused_at_mark  # noqa: E402


@omp.target
def scan_in(x, p, ya, yb, yc, yd):
    a, b, c, d = 5, 2, 0, 0                 # the prefix starts from these
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:a,*:b,max:c,min:d"):
        a += x[i]
        b = b * p[i]
        c = max(c, x[i])
        d = min(x[i], d)
        omp.inclusive(a, b, c, d)
        ya[i] = a
        yb[i] = b
        yc[i] = c
        yd[i] = d
    return a, b, c, d


@omp.target
def scan_ex(x, p, ya, yb, yc, yd):
    a, b, c, d = 5, 2, 0, 0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:a,*:b,max:c,min:d"):
        ya[i] = a
        yb[i] = b
        yc[i] = c
        yd[i] = d
        omp.exclusive(d, c, b, a)
        v = x[i]
        if v > 0:                           # a conditional update is still a scan
            a += v
        else:
            a += 2 * v
        b *= p[i]
        c = max(c, v)
        d = min(d, v)
    return a, b, c, d


@omp.target
def bits_in(x, ya, yb, yc):
    a, b, c = 0, -1, 0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,|:a,&:b,^:c"):
        a |= x[i] & 0x1FFFF
        b &= x[i] | 0x7FFF0
        c ^= x[i]
        omp.inclusive(a, b, c)
        ya[i] = a
        yb[i] = b
        yc[i] = c
    return a, b, c


@omp.target
def bits_ex(x, ya, yb, yc):
    a, b, c = 0, -1, 0
    for i in omp.parallel_range(1, x.shape[0], 2, reduction="inscan,|:a;&:b;^:c"):
        ya[i] = a                           # odd iterations only: a step of 2
        yb[i] = b
        yc[i] = c
        omp.exclusive(a, b, c)
        a = a | x[i] & 0x1FFFF
        b = (x[i] | 0x7FFF0) & b
        c = c ^ x[i]
    return a, b, c


@omp.target
def rounds(x, y, m):
    t = 0.0
    for r in range(m):                      # a loop of launches on work-group targets
        s = 1.0 * r
        for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
            y[i] = s
            omp.exclusive(s)
            s += x[i] * 2.0
        t += s
    return t


FLOATS, INTS = (np.float32, np.float64), (np.int32, np.int64)
LENGTHS = (0, 1, 7, 1025, 100_003)


def inputs(kernel, dtype, n, seed=0):
    rng = np.random.default_rng(seed + n)
    if kernel is rounds:
        return rng.random(n), np.zeros(n), 3
    if kernel in (bits_in, bits_ex):
        x = rng.integers(-2**20, 2**20, n).astype(dtype)
        return (x,) + tuple(np.zeros(n, dtype) for _ in range(3))
    if np.dtype(dtype).kind == "f":
        x = (rng.random(n) - 0.4).astype(dtype)
        p = (1 + (rng.random(n) - 0.5) * 1e-3).astype(dtype)
    else:
        x = rng.integers(-1000, 1000, n).astype(dtype)
        p = rng.choice(np.array([-3, -1, 1, 2, 3], dtype), n)   # wraps around: exact
    return (x, p) + tuple(np.zeros(n, dtype) for _ in range(4))


def check(kernel, args, run):
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(over="ignore"):
        expect = kernel.py_func(*want)
    got = run(kernel, args)
    exact = args[0].dtype.kind == "i"
    rtol = 1e-3 if args[0].dtype == np.float32 else 1e-9
    arrays = [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]
    for a, w in zip([args[k] for k in arrays] + [got],
                    [want[k] for k in arrays] + [expect]):
        a, w = np.asarray(a), np.asarray(w, dtype=np.asarray(a).dtype)
        if exact:
            assert np.array_equal(a, w), (kernel.py_func.__name__, a, w)
        else:
            np.testing.assert_allclose(a, w, rtol=rtol, atol=rtol,
                                       err_msg=kernel.py_func.__name__)


@pytest.mark.parametrize("kernel, dtype", [(scan_in, t) for t in FLOATS + INTS]
                         + [(scan_ex, np.float32), (scan_ex, np.int64)],
                         ids=lambda c: getattr(c, "__name__", None) or np.dtype(c).name)
def test_scans_mean_their_py_func(device, kernel, dtype):
    for n in LENGTHS:
        check(kernel, inputs(kernel, dtype, n), lambda k, a: k.on(device)(*a))


@pytest.mark.parametrize("dtype", INTS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("kernel", [bits_in, bits_ex], ids=lambda k: k.py_func.__name__)
def test_bitwise_scans(device, kernel, dtype):
    for n in LENGTHS:
        check(kernel, inputs(kernel, dtype, n), lambda k, a: k.on(device)(*a))


def test_scans_in_a_loop(device):
    for n in (0, 5000):
        check(rounds, inputs(rounds, np.float64, n), lambda k, a: k.on(device)(*a))


@omp.target
def complex_sum(x, y):
    s = 1j
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        s += x[i]
        omp.inclusive(s)
        y[i] = s


def test_complex_scans(device):
    x = np.random.default_rng(3).random(10007) * (1 - 2j)
    y, want = np.zeros_like(x), np.zeros_like(x)
    complex_sum.on(device)(x, y)
    complex_sum.py_func(x, want)
    np.testing.assert_allclose(y, want, rtol=1e-9)


CUDA_CASES = [(scan_in, np.float64), (scan_ex, np.int32), (bits_in, np.int64),
              (bits_ex, np.int32), (rounds, np.float64)]


@pytest.fixture(scope="module")
def emu():
    import test_cuda_emu
    return test_cuda_emu, test_cuda_emu.emulator(
        [(k, inputs(k, t, 1)) for k, t in CUDA_CASES])


@pytest.mark.parametrize("gangs, workers, vector", [(3, 2, 8), (1, 1, 32)])
def test_scans_in_cuda_c(emu, gangs, workers, vector):
    mod, lib = emu
    for kernel, dtype in CUDA_CASES:
        for n in (0, 5, 3001):
            check(kernel, inputs(kernel, dtype, n),
                  lambda k, a: mod.run(lib, k, a, gangs, workers, vector))


# -- the rules of the directive, each refusal naming the one broken ---------------------

def k_no_directive(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):  # MARK
        s += x[i]
        y[i] = s


def k_two_directives(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):  # MARK
        s += x[i]
        omp.inclusive(s)
        y[i] = s
        omp.inclusive(s)


def k_nested_directive(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        s += x[i]
        if i > 0:
            omp.inclusive(s)  # MARK
        y[i] = s


def k_stray_directive(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i]
        omp.inclusive(s)  # MARK


def k_wrong_names(x, y):
    s, t = 0.0, 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        s += x[i]
        omp.inclusive(t)  # MARK
        y[i] = s


def k_collapse(A, y):
    s = 0.0
    for i in omp.parallel_range(A.shape[0], reduction="inscan,+:s", collapse=2):  # MARK
        for j in range(A.shape[1]):
            s += A[i, j]
            omp.inclusive(s)
            y[i] = s


def k_in_gang(A, y):
    for g in omp.gang(A.shape[0]):
        s = 0.0
        for i in omp.vector(A.shape[1], reduction="inscan,+:s"):  # MARK
            s += A[g, i]
            omp.inclusive(s)
            y[i] = s


def k_operator(x, y):
    s = True
    for i in omp.parallel_range(x.shape[0], reduction="inscan,and:s"):  # MARK
        s = s and x[i] > 0
        omp.inclusive(s)
        y[i] = s


def k_reads_in_input(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        s += x[i] * s  # MARK
        omp.inclusive(s)
        y[i] = s


def k_writes_in_scan(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        s += x[i]
        omp.inclusive(s)
        s = 0.0  # MARK
        y[i] = s


def k_stores_in_input(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        y[i] = s
        omp.exclusive(s)
        x[i] = 1.0  # MARK
        s += x[i]


def k_exclusive_reads_scan_store(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        x[i] = s
        omp.exclusive(s)
        s += x[i]  # MARK


def k_array(x, y):
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:y"):  # MARK
        y[0] += x[i]
        omp.inclusive(y)


def k_continue(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s"):
        if x[i] < 0:
            continue  # MARK
        s += x[i]
        omp.inclusive(s)
        y[i] = s


def k_twice(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="inscan,+:s;max:s"):  # MARK
        s += x[i]
        omp.inclusive(s)
        y[i] = s


V = (np.zeros(4), np.zeros(4))
REFUSED = [
    (k_no_directive, V, "a loop with an inscan reduction takes one scan directive, "
                        "omp.inclusive(s) or omp.exclusive(s), in its body; it has 0"),
    (k_two_directives, V, "takes one scan directive, omp.inclusive(s) or "
                          "omp.exclusive(s), in its body; it has 2"),
    (k_nested_directive, V, "the scan directive (omp.inclusive or omp.exclusive) must "
                            "stand directly in the body of the loop with the inscan "
                            "reduction, not inside an if or an inner loop"),
    (k_stray_directive, V, "omp.inclusive() is the scan directive: it stands directly in "
                           "the body of a parallel loop with an inscan reduction"),
    (k_wrong_names, V, "omp.inclusive(t) must name the inscan reduction variables of its "
                       "loop, s, each once"),
    (k_collapse, (np.zeros((2, 2)), np.zeros(2)),
     "collapse= cannot be combined with an inscan reduction"),
    (k_in_gang, (np.zeros((2, 2)), np.zeros(2)),
     "omp.vector(...) with an inscan reduction must stand at the kernel's top level"),
    (k_operator, (np.zeros(4), np.zeros(4, bool)),
     "inscan reduction and:s: a scan takes the operators + * max min & | ^"),
    (k_reads_in_input, V, "in the input phase of a scan (the statements before "
                          "omp.inclusive) 's' may only be updated as s += e, with e not "
                          "reading 's'"),
    (k_writes_in_scan, V, "'s' is assigned in the scan phase (the statements after "
                          "omp.inclusive), which may only read it"),
    (k_stores_in_input, V, "the input phase of a scan (the statements after "
                           "omp.exclusive) runs twice in the parallel scan, so it may only "
                           "compute values and update the inscan variables; here it stores "
                           "into 'x'"),
    (k_exclusive_reads_scan_store, V, "with omp.exclusive the input phase (after it) reads "
                                      "'x', which the scan phase (before it) writes"),
    (k_array, V, "inscan reduction on 'y', an array: a scan reduces scalars"),
    (k_continue, V, "continue in a loop with a scan directive is not supported"),
    (k_twice, V, "inscan reduction: 's' is listed twice"),
]


@pytest.mark.parametrize("fn, args, text", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_refused_naming_the_rule(fn, args, text):
    refused_at_mark(fn, args, text)


def test_inscan_modifier_comes_first():
    from pygomp.errors import CompileError
    with pytest.raises(CompileError, match="the inscan modifier comes first, once, and "
                                           "applies to every variable"):
        @omp.target
        def k(x):
            s = 0.0
            for i in omp.parallel_range(x.shape[0], reduction="+:s,inscan"):
                s += x[i]
                omp.inclusive(s)
