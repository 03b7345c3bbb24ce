"""Python kernels on every device, checked against numpy."""
import math
import os
import sys

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp

sys.path.insert(0, os.path.dirname(__file__))
import kernels_reduce  # noqa: E402

RED_TYPES = [np.int32, np.int64, np.float32, np.float64]
G, C = 37, 53
LEVELS = ["gang", "worker", "vector", "parallel_range", "gang>vector", "gang>worker"]


# -- kernels (module level: each compiles once a signature) ---------------------------

@omp.target(map={"x": "to", "y": "tofrom"})
def saxpy(a: float, x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@omp.target
def dot(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * y[i]
    return s


@omp.target(map={"A": "to", "x": "to", "y": "from"})
def matvec(A, x, y):
    for i in omp.gang(A.shape[0]):
        s = 0.0
        for j in omp.vector(A.shape[1], reduction="+:s"):
            s += A[i, j] * x[j]
        y[i] = s


@omp.target
def amax(x):
    m = -math.inf
    for i in omp.parallel_range(x.shape[0], reduction="max:m"):
        m = max(m, x[i])
    return m


@omp.target
def all_positive(x):
    ok = True
    for i in omp.parallel_range(x.shape[0], reduction="and:ok"):
        ok = ok and x[i] > 0
    return ok


@omp.declare_target
def clamp(v, lo, hi):
    if v < lo:
        return lo
    elif v > hi:
        return hi
    return v


@omp.declare_target
def row_sum(a, i):
    s = 0.0
    for j in range(a.shape[1]):
        s += a[i, j]
    return s


@omp.target
def control(x, out):
    """if/elif/else, while, break, continue, conditional expressions, helpers."""
    for i in omp.gang(x.shape[0]):
        v = x[i]
        k = 0
        while k < 100:
            k += 1
            if k % 3 == 0:
                continue
            if k > int(abs(v)):
                break
        t = v * 2 if v > 0 else -v
        if v > 5:
            r = 1.0
        elif v > 0:
            r = 2.0
        else:
            r = 3.0
        out[i, 0] = k
        out[i, 1] = t
        out[i, 2] = r
        out[i, 3] = clamp(v, -1.0, 1.0)
        out[i, 4] = min(v, 0.5, t)
        out[i, 5] = max(abs(v), 2)


@omp.target
def mathfns(x, out):
    for i in omp.parallel_range(x.shape[0]):
        v = x[i]
        out[i, 0] = math.sqrt(v)
        out[i, 1] = np.exp(-v)
        out[i, 2] = math.log(v) + np.log2(v) + math.log10(v)
        out[i, 3] = math.sin(v) * np.cos(v) + math.tanh(v)
        out[i, 4] = math.atan2(v, 2.0) + np.arctan(v)
        out[i, 5] = v ** 2 + v ** 0.5 + math.pow(v, 1.5)
        out[i, 6] = math.floor(v) + np.ceil(v) + math.pi
        out[i, 7] = (v // 0.3) + (v % 0.3) + np.hypot(v, 1.0)


@omp.target
def intops(a, b, out):
    for i in omp.parallel_range(a.shape[0]):
        out[i, 0] = a[i] // b[i]
        out[i, 1] = a[i] % b[i]
        out[i, 2] = a[i] * b[i] - (a[i] << 2) + (a[i] >> 1)
        out[i, 3] = (a[i] & b[i]) | (a[i] ^ 5)
        out[i, 4] = -a[i] if a[i] < b[i] else ~a[i]


@omp.target
def python_ints(a, b, s, out):
    """Python's meaning of // % << >> ** on every integer type."""
    for i in omp.parallel_range(a.shape[0]):
        out[i, 0] = a[i] // b[i]
        out[i, 1] = a[i] % b[i]
        out[i, 2] = a[i] << s[i]
        out[i, 3] = a[i] >> s[i]
        out[i, 4] = a[i] ** (b[i] & 7)
        out[i, 5] = a[i] // 3 + a[i] % -3


@omp.target
def python_floats(a, b, out):
    for i in omp.parallel_range(a.shape[0]):
        out[i, 0] = a[i] // b[i]
        out[i, 1] = a[i] % b[i]
        out[i, 2] = a[i] / b[i]
        out[i, 3] = np.maximum(a[i], b[i])
        out[i, 4] = max(a[i], b[i])


@omp.target
def products_then_sums(x, y, z, out):
    for i in omp.parallel_range(x.shape[0]):
        out[i, 0] = x[i] * y[i] + z[i]
        out[i, 1] = z[i] - x[i] * y[i]


@omp.target
def ranks(a3, b1, out):
    """A 3-d array, shapes, a private local array, len()."""
    n0, n1, n2 = a3.shape
    for i in omp.gang(n0):
        acc = np.zeros(4, np.float64)
        for j in range(n1):
            for k in range(n2):
                acc[(j + k) % 4] += a3[i, j, k]
        for q in range(4):
            out[i, q] = acc[q] + b1[len(b1) - 1]


@omp.target
def typed(u8, bl, i64, f32, out):
    for i in omp.parallel_range(u8.shape[0]):
        out[i] = f32[i] * 2.0 + u8[i] + (1 if bl[i] else 0) + i64[i] // 2


@omp.target
def collapse2(a):
    for i in omp.parallel_range(a.shape[0], collapse=2):
        for j in range(a.shape[1]):
            a[i, j] = i * 1000 + j


@omp.target
def strided(a, out):
    for i in omp.gang(2, a.shape[0], 3):
        out[i] = a[i] + 1.0
    for j in range(a.shape[0] - 1, -1, -2):
        out[j] += 10.0


@omp.target
def private_clause(a, out):
    t = 0.0
    for i in omp.parallel_range(a.shape[0], private="t"):
        t = a[i] * 2
        out[i] = t + 1


@omp.target(map={"x": "to", "hist": "tofrom"})
def histogram(x, hist):
    nb = hist.shape[0]
    for i in omp.parallel_range(x.shape[0]):
        omp.atomic_add(hist, x[i] % nb, 1)


@omp.target
def atomic_float(x, acc):
    for i in omp.parallel_range(x.shape[0]):
        omp.atomic_add(acc, 0, x[i])


@omp.target(map={"a": "to", "b": "from"})
def transpose(a, b):
    n, m = a.shape
    tn, tm = (n + 7) // 8, (m + 7) // 8
    for t in omp.gang(tn * tm):
        i0, j0 = (t // tm) * 8, (t % tm) * 8
        tile = omp.shared_array((8, 9), np.float64)
        for r in omp.worker(8):
            for c in omp.vector(8):
                if i0 + r < n and j0 + c < m:
                    tile[r, c] = a[i0 + r, j0 + c]
        omp.barrier()
        for c in omp.worker(8):
            for r in omp.vector(8):
                if i0 + r < n and j0 + c < m:
                    b[j0 + c, i0 + r] = tile[r, c]


@omp.target
def ids(out):
    for g in omp.gang(out.shape[0]):
        out[g, 0] = omp.gang_id()
        out[g, 1] = omp.num_gangs()
        out[g, 2] = omp.worker_id()
        out[g, 3] = omp.num_workers()
        out[g, 4] = omp.vector_id()
        out[g, 5] = omp.vector_length()


@omp.target
def count_int(x, t: int):
    c = 0
    for i in omp.parallel_range(x.shape[0], reduction="+:c"):
        if x[i] > t:
            c += 1
    return c


@omp.target(map={"y": "tofrom"})
def inc(y):
    for i in omp.parallel_range(y.shape[0]):
        y[i] += 1.0


@omp.target(num_gangs=2, num_workers=1)
def fill_sized(y, v: float):
    for i in omp.parallel_range(y.shape[0]):
        y[i] = v


@omp.declare_target
def total(a, n):
    s = 0.0
    for k in range(n):
        s += a[k]
    return s


@omp.target
def helper_spaces(x, out):
    """One helper called with a global and a team-shared array: two specializations."""
    for g in omp.gang(out.shape[0]):
        tile = omp.shared_array(8, np.float64)
        for w in omp.worker(8):
            tile[w] = x[g * 8 + w] * 2.0
        omp.barrier()
        out[g] = total(tile, 8) - total(x, 8)


@omp.target
def scalars(out, a: np.int32, b: np.uint64, c: np.float32, d: bool, e: np.int8, f: float):
    for i in omp.gang(1):
        out[0] = a
        out[1] = b
        out[2] = c
        out[3] = 1 if d else 0
        out[4] = e
        out[5] = f


# -- tests ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_saxpy(device, dtype):
    rng = np.random.default_rng(0)
    x, y = rng.random(10007).astype(dtype), rng.random(10007).astype(dtype)
    ref = dtype(2.5) * x + y
    saxpy.on(device)(2.5, x, y)
    np.testing.assert_allclose(y, ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_gang_sum(device, dtype):
    rng = np.random.default_rng(1)
    x, y = rng.random(100003).astype(dtype), rng.random(100003).astype(dtype)
    r = dot.on(device)(x, y)
    assert isinstance(r, float)
    assert r == pytest.approx(float(np.dot(x.astype(np.float64), y)), rel=1e-4)


def test_matvec_vector_sum_in_gangs(device):
    rng = np.random.default_rng(2)
    A, x = rng.random((301, 257)), rng.random(257)
    y = np.zeros(301)
    matvec.on(device)(A, x, y)
    np.testing.assert_allclose(y, A @ x, rtol=1e-12)


def test_max_and_logical_and(device):
    x = np.random.default_rng(3).normal(size=50001)
    assert amax.on(device)(x) == x.max()
    assert all_positive.on(device)(np.abs(x) + 1) is True
    assert all_positive.on(device)(x) is False


@pytest.mark.parametrize("dtype", RED_TYPES, ids=lambda t: np.dtype(t).name)
def test_reductions_every_op_and_level(device, dtype):
    x, p = kernels_reduce.inputs(G, C, dtype, np.random.default_rng(4))
    out = np.zeros((6, 6), dtype)
    kernels_reduce.reduce_all.on(device)(x, p, G, C, out)
    ref = [x.sum(dtype=dtype), p.prod(dtype=dtype), x.max(), x.min(), 0, 1]
    for lv, name in enumerate(LEVELS):
        for k, op in enumerate(["+", "*", "max", "min", "and", "or"]):
            assert out[lv, k] == ref[k], f"{np.dtype(dtype).name} {op} at level {name}"


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=lambda t: np.dtype(t).name)
def test_bitwise_reductions_every_level(device, dtype):
    x = (np.random.default_rng(5).integers(0, 1 << 20, G * C) | 0x50000).astype(dtype)
    out = np.zeros((6, 3), dtype)
    kernels_reduce.reduce_bits.on(device)(x, G, C, out)
    ref = [np.bitwise_and.reduce(x), np.bitwise_or.reduce(x), np.bitwise_xor.reduce(x)]
    for lv, name in enumerate(LEVELS):
        for k, op in enumerate("&|^"):
            assert out[lv, k] == ref[k], f"{op} at level {name}"


def test_control_flow_and_helpers(device):
    x = np.array([-3.5, -0.2, 0.0, 0.7, 4.2, 9.9, 25.0])
    out = np.zeros((x.size, 6))
    control.on(device)(x, out)
    for i, v in enumerate(x):
        k = 0
        while k < 100:
            k += 1
            if k % 3 == 0:
                continue
            if k > int(abs(v)):
                break
        t = v * 2 if v > 0 else -v
        r = 1.0 if v > 5 else 2.0 if v > 0 else 3.0
        assert list(out[i]) == [k, t, r, min(max(v, -1), 1), min(v, 0.5, t), max(abs(v), 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_functions(device, dtype):
    x = np.linspace(0.1, 5.0, 333).astype(dtype)
    out = np.zeros((x.size, 8), dtype)
    mathfns.on(device)(x, out)
    v = x.astype(np.float64)
    ref = np.stack([np.sqrt(v), np.exp(-v), np.log(v) + np.log2(v) + np.log10(v),
                    np.sin(v) * np.cos(v) + np.tanh(v), np.arctan2(v, 2.0) + np.arctan(v),
                    v ** 2 + v ** 0.5 + v ** 1.5, np.floor(v) + np.ceil(v) + np.pi,
                    v // 0.3 + v % 0.3 + np.hypot(v, 1.0)], axis=1)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


INT_TYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: np.dtype(t).name)
def test_integer_ops_mean_what_numpy_means(device, dtype):
    info = np.iinfo(dtype)
    if info.min < 0:
        a = [7, -7, 7, -7, 0, 5, info.min, info.min, info.max, -1, 100, -100, info.min]
        b = [2, 2, -2, -2, 0, 0, -1, 1, -1, 0, 7, 7, 0]
    else:
        a = [7, 0, 5, info.max, info.max, 1, 200, 3, 0, 9, 100, 2, info.max]
        b = [2, 0, 0, 1, info.max, 3, 7, 0, 5, 4, 7, 1, 2]
    s = [0, 1, 3, 7, 8, 9, 31, 32, 63, 64, 65, 127, 1]
    if info.min < 0:
        s[-1] = -1
    a, b, s = (np.array(v, dtype) for v in (a, b, s))
    out = np.zeros((a.size, 6), dtype)
    python_ints.on(device)(a, b, s, out)
    minus3 = dtype(-3) if info.min < 0 else dtype(info.max - 2)  # wrapped if unsigned
    with np.errstate(all="ignore"):
        ref = [a // b, a % b, a << s, a >> s, a ** (b & dtype(7)), a // dtype(3) + a % minus3]
    for k, want in enumerate(ref):
        np.testing.assert_array_equal(out[:, k], want, err_msg=f"column {k}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_division_means_what_numpy_means(device, dtype):
    v = [5.0, -5.0, 5.0, -5.0, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1.0, 1e30,
         7.0, -1.0, 1.0, 0.0, 2.5]
    w = [3.0, 3.0, -3.0, -3.0, 3.0, 3.0, 0.0, 0.0, 2.0, 2.0, 1.0, np.inf, 1e-30, -np.inf,
         np.inf, -0.0, -0.0, np.nan]
    a, b = np.array(v, dtype), np.array(w, dtype)
    out = np.zeros((a.size, 5), dtype)
    python_floats.on(device)(a, b, out)
    with np.errstate(all="ignore"):
        ref = np.stack([a // b, a % b, a / b, np.maximum(a, b),
                        [max(x, y) for x, y in zip(a, b)]], axis=1)
    np.testing.assert_array_equal(out, ref)
    num = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(out[num]), np.signbit(ref[num]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_is_rounded_before_the_sum(device, dtype):
    """No device fuses ``x * y + z`` into an fma, whose single rounding differs from
    numpy's two in about a quarter of these."""
    rng = np.random.default_rng(5)
    x, y, z = (rng.random(4096).astype(dtype) for _ in range(3))
    out = np.zeros((x.size, 2), dtype)
    products_then_sums.on(device)(x, y, z, out)
    np.testing.assert_array_equal(out, np.stack([x * y + z, z - x * y], axis=1))


def test_int32_overflow_wraps(device):
    a = np.array([2**31 - 1, -2**31], np.int32)
    b = np.array([1, -1], np.int32)
    out = np.zeros((2, 5), np.int32)
    intops.on(device)(a, b, out)
    with np.errstate(over="ignore"):
        assert list(out[:, 2]) == list(a * b - (a << 2) + (a >> 1))


def test_ranks_shapes_private_arrays(device):
    a3 = np.arange(5 * 6 * 7, dtype=np.float64).reshape(5, 6, 7)
    b1 = np.array([0.0, 0.0, 0.5])
    out = np.zeros((5, 4))
    ranks.on(device)(a3, b1, out)
    j, k = np.meshgrid(range(6), range(7), indexing="ij")
    ref = np.stack([[a3[i][(j + k) % 4 == q].sum() + 0.5 for q in range(4)] for i in range(5)])
    np.testing.assert_allclose(out, ref)


def test_dtypes_uint8_bool_int64_float32(device):
    n = 1000
    u8 = (np.arange(n) % 256).astype(np.uint8)
    bl = np.arange(n) % 3 == 0
    i64 = np.arange(n, dtype=np.int64) - 500
    f32 = np.linspace(-1, 1, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    typed.on(device)(u8, bl, i64, f32, out)
    ref = f32 * np.float32(2) + u8 + bl + i64 // 2
    np.testing.assert_allclose(out, ref.astype(np.float32), rtol=1e-6)


def test_collapse_and_strided_loops(device):
    a = np.zeros((13, 17))
    collapse2.on(device)(a)
    i, j = np.meshgrid(range(13), range(17), indexing="ij")
    np.testing.assert_array_equal(a, i * 1000 + j)
    x = np.arange(20.0)
    out = np.zeros(20)
    strided.on(device)(x, out)
    ref = np.zeros(20)
    ref[2::3] = x[2::3] + 1
    ref[19::-2] += 10
    np.testing.assert_array_equal(out, ref)


def test_private_clause(device):
    a = np.arange(100.0)
    out = np.zeros(100)
    private_clause.on(device)(a, out)
    np.testing.assert_array_equal(out, a * 2 + 1)


def test_atomics_histogram(device):
    x = np.random.default_rng(6).integers(0, 1000, 200000)
    hist = np.zeros(16, np.int64)
    histogram.on(device)(x, hist)
    np.testing.assert_array_equal(hist, np.bincount(x % 16, minlength=16))
    acc = np.zeros(1)
    atomic_float.on(device)(np.full(10000, 0.5), acc)
    assert acc[0] == 5000.0


def test_shared_array_barrier_transpose(device):
    a = np.random.default_rng(7).random((37, 29))
    b = np.zeros((29, 37))
    transpose.on(device)(a, b)
    np.testing.assert_array_equal(b, a.T)


@omp.target
def worker_ids(out):
    for g in omp.gang(out.shape[0]):
        for w in omp.worker(out.shape[1]):
            out[g, w, 0] = omp.worker_id()
            out[g, w, 1] = omp.num_workers()
            out[g, w, 2] = omp.gang_id()


def test_thread_numbers_in_range(device):
    out = np.zeros((64, 6), np.int64)
    ids.on(device)(out)
    assert (out[:, 0] >= 0).all() and (out[:, 0] < out[:, 1]).all()
    assert (out[:, 2] >= 0).all() and (out[:, 2] < out[:, 3]).all()
    assert (out[:, 4] >= 0).all() and (out[:, 4] < out[:, 5]).all()
    # one launch has one geometry, and the gang loop's 64 iterations are shared by
    # gangs numbered from 0 (a dialect answering constants cannot pass)
    gangs = out[0, 1]
    assert (out[:, 1] == gangs).all() and (out[:, 3] == out[0, 3]).all()
    assert (out[:, 5] == out[0, 5]).all()
    used = set(out[:, 0].tolist())
    assert used == set(range(len(used)))
    if (os.cpu_count() or 1) > 1:
        assert gangs > 1 and len(used) > 1
    # inside a worker loop: the gang's number stays, workers number their iterations
    w = np.zeros((8, 32, 3), np.int64)
    worker_ids.on(device)(w)
    workers = w[0, 0, 1]
    assert (w[:, :, 1] == workers).all() and (w[:, :, 0] < workers).all()
    used = set(w[0, :, 0].tolist())
    assert used == set(range(len(used))) and (workers == 1 or len(used) > 1)
    assert all(len(set(w[g, :, 2].tolist())) == 1 for g in range(8))


def test_scalar_return_types(device):
    x = np.arange(1000, dtype=np.int32)
    r = count_int.on(device)(x, 900)
    assert r == 99 and isinstance(r, int)


def test_launch_sizes(device):
    y = np.zeros(1001)
    fill_sized.on(device)(y, 3.0)
    assert (y == 3.0).all()


def test_present_data_is_not_copied(offload_device):
    y = np.zeros(1000)
    with pygomp.target_data(offload_device, tofrom=[y]):
        y[:] = 100.0                      # host only: the device keeps its copy
        inc.on(offload_device)(y)         # present: nothing is copied in or out
        assert (y == 100.0).all()
    assert (y == 1.0).all()               # the end of target_data copies back


def test_default_device_call(device):
    old = pygomp.omp_get_default_device()
    pygomp.omp_set_default_device(device)
    try:
        y = np.zeros(10)
        inc(y)
        assert (y == 1.0).all()
    finally:
        pygomp.omp_set_default_device(old)


def test_on_none_follows_the_default_device(offload_device):
    """kernel.on(None) reads the default-device ICV at each call."""
    k = inc.on(None)
    old = pygomp.omp_get_default_device()
    y = np.zeros(10)
    try:
        with pygomp.target_data(offload_device, alloc=[y]):
            pygomp.omp_set_default_device(offload_device)
            k(y)                                  # on the device's copy: y is stale
            assert (y == 0.0).all()
            pygomp.omp_set_default_device(pygomp.omp_get_initial_device())
            k(y)                                  # on the host itself
            assert (y == 1.0).all()
    finally:
        pygomp.omp_set_default_device(old)


def test_repeated_plain_calls_follow_the_default_device_of_each_thread(offload_device):
    """A plain call repeated with the same array reads the default-device ICV at each
    call, in the calling thread (a task's thread has its own)."""
    import threading
    old = pygomp.omp_get_default_device()
    host = pygomp.omp_get_initial_device()
    y = np.zeros(10)
    try:
        with pygomp.target_data(offload_device, alloc=[y]):
            pygomp.omp_set_default_device(offload_device)
            for _ in range(3):
                inc(y)                            # on the device's copy: y is stale
            assert (y == 0.0).all()
            pygomp.omp_set_default_device(host)
            inc(y)                                # on the host itself
            assert (y == 1.0).all()
            pygomp.omp_set_default_device(offload_device)
            inc(y, nowait=True).wait()            # its task runs on the offload device
            assert (y == 1.0).all()

            def on_host():
                pygomp.omp_set_default_device(host)
                inc(y)
            for _ in range(2):                    # another thread's default: the host
                t = threading.Thread(target=on_host)
                t.start()
                t.join()
                inc(y)                            # this thread's: the offload device
            assert (y == 3.0).all()
    finally:
        pygomp.omp_set_default_device(old)


def test_nowait_and_depend(device):
    y = np.zeros(100000)
    k = inc.on(device)
    futures = [k(y, nowait=True, depend={"inout": [y]}) for _ in range(5)]
    for f in futures:
        assert f.wait() is None
    assert (y == 5.0).all()
    x = np.ones(1000)
    f = dot.on(device, nowait=True)(x, x)
    assert f.wait() == 1000.0


def test_bad_arguments(device):
    with pytest.raises(TypeError, match="C-contiguous"):
        inc.on(device)(np.zeros((10, 10))[:, 0])
    with pytest.raises(TypeError, match=r"^inc\(\): too many positional arguments$"):
        inc.on(device)(np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match=r"^saxpy\(\): missing a required argument: 'y'$"):
        saxpy.on(device)(2.0, x=np.zeros(3))
    with pytest.raises(TypeError, match="unsupported kernel argument of type list"):
        saxpy.on(device)(2.0, [1.0], np.zeros(1))


@omp.target
def axpb(x, y, a: float = 2.0, b=1):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + b


def test_keyword_arguments_and_defaults(device):
    x = np.arange(5.0)
    for call, a, b in [(lambda y: saxpy.on(device)(a=3.0, x=x, y=y), 3.0, None),
                       (lambda y: saxpy.on(device)(3.0, y=y, x=x), 3.0, None),
                       (lambda y: axpb.on(device)(x, y), 2.0, 1),
                       (lambda y: axpb.on(device)(x, y, b=5), 2.0, 5),
                       (lambda y: axpb.on(device)(y=y, x=x, a=0.5), 0.5, 1),
                       (lambda y: axpb.on(device)(x, y, 4.0, 7), 4.0, 7)]:
        y = np.ones(5)
        call(y)
        assert np.array_equal(y, a * x + (1.0 if b is None else b))
    y = np.ones(5)
    f = axpb.on(device)(x, y=y, b=3, nowait=True)
    assert f.wait() is None and np.array_equal(y, 2.0 * x + 3)


def test_array_likes_as_arguments(device, tmp_path):
    import array
    import ctypes
    mm = np.memmap(tmp_path / "y.bin", dtype=np.float64, mode="w+", shape=(6,))
    mm[:] = 1.0
    saxpy.on(device)(2.0, np.arange(6.0), mm)             # np.memmap, an ndarray subclass
    mm.flush()
    assert np.array_equal(np.fromfile(tmp_path / "y.bin"), 2.0 * np.arange(6.0) + 1.0)
    ro = np.memmap(tmp_path / "y.bin", dtype=np.float64, mode="r", shape=(6,))
    assert dot.on(device)(ro, ro) == float(np.dot(ro, ro))  # read-only: nothing copied back
    y = np.zeros(6)
    saxpy.on(device)(1.0, ro, y)
    assert np.array_equal(y, ro)
    x = array.array("d", [1.0, 2.0, 3.0])                  # the buffer protocol
    c = (ctypes.c_double * 3)(10.0, 20.0, 30.0)

    class Iface:                                          # only __array_interface__
        def __init__(self, a):
            self.a, self.__array_interface__ = a, a.__array_interface__
    z = np.zeros(3)
    saxpy.on(device)(2.0, x, c)
    saxpy.on(device)(1.0, Iface(np.array(c)), Iface(z))
    assert list(c) == [12.0, 24.0, 36.0] and z.tolist() == [12.0, 24.0, 36.0]


def test_python_fallback_runs_sequentially():
    x, y = np.ones(5), np.ones(5)
    saxpy.py_func(2.0, x, y)
    assert (y == 3.0).all()
    assert dot.py_func(x, x) == 5.0


def test_helper_with_global_and_shared_arrays(device):
    x = np.arange(40.0)
    out = np.zeros(5)
    helper_spaces.on(device)(x, out)
    ref = [2 * x[g * 8:g * 8 + 8].sum() - x[:8].sum() for g in range(5)]
    np.testing.assert_allclose(out, ref)


def test_scalar_arguments_of_every_kind(device):
    out = np.zeros(6)
    scalars.on(device)(out, -7, 2**40, 1.5, True, -3, -2.25)
    assert list(out) == [-7, 2**40, 1.5, 1, -3, -2.25]
    scalars.on(device)(out, np.int32(5), np.uint64(3), np.float32(0.25), False, np.int8(4), 1)
    assert list(out) == [5, 3, 0.25, 0, 4, 1.0]


def test_empty_and_one_element_arrays(device):
    assert dot.on(device)(np.zeros(0), np.zeros(0)) == 0.0
    assert dot.on(device)(np.full(1, 3.0), np.full(1, 2.0)) == 6.0
    y = np.zeros(0)
    saxpy.on(device)(2.0, np.zeros(0), y)
    assert y.shape == (0,)
    y = np.ones(1)
    saxpy.on(device)(2.0, np.full(1, 3.0), y)
    assert y.tolist() == [7.0]


def test_concurrent_calls_from_threads(device):
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(8)
    data = [(rng.random(5000), rng.random(5000)) for _ in range(8)]
    k = dot.on(device)

    def work(i):
        x, y = data[i % 8]
        return k(x, y), float(np.dot(x, y))

    with ThreadPoolExecutor(4) as pool:
        for got, want in pool.map(work, range(40)):
            assert got == pytest.approx(want, rel=1e-12)


def test_repeated_calls_follow_the_map(device):
    from pygomp.runtime import devices
    initial = devices.all_devices()[device].is_initial
    y, z = np.zeros(8), np.zeros(8)
    k = inc.on(device)
    with pygomp.target_data(device, tofrom=[y]):
        k(y)
        k(y)                                # present: the device's copy changes
        assert (y == (2 if initial else 0)).all()
        with pygomp.target_data(device, to=[z]):      # the map changes meanwhile
            k(y)
    assert (y == 3).all()
    k(y)
    k(y)                                    # not present: mapped and copied back each time
    assert (y == 5).all()
    k(z)
    assert (z == 1).all() and (y == 5).all()


def test_calls_while_another_thread_maps_the_same_array(offload_device):
    """One thread calls a kernel on an array over and over while another maps it (enter
    data), looks and unmaps it (exit data, from) over and over: no call's increment is
    lost, the array is present while the other thread holds it, and what it sees then
    on the host is whole calls' work (every element the same) that only grows."""
    import threading
    x = np.zeros(1 << 16)
    k = inc.on(offload_device)
    stop, seen, failed = threading.Event(), [], []

    def mapper():
        try:
            while not stop.is_set():
                pygomp.target_enter_data(offload_device, to=[x])
                assert pygomp.omp_target_is_present(x, offload_device)
                seen.append(x.copy())   # no one copies back while this thread holds x
                pygomp.target_exit_data(offload_device, from_=[x])
        except BaseException as e:      # noqa: BLE001  (reported below)
            failed.append(e)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    t = threading.Thread(target=mapper)
    t.start()
    calls = 0
    try:
        while (calls < 400 or len(seen) < 40) and calls < 20000 and not failed:
            k(x)
            calls += 1
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(switch)
    assert failed == []
    assert not pygomp.omp_target_is_present(x, offload_device)
    assert (x == calls).all()
    firsts = [v[0] for v in seen]
    assert len(seen) >= 40 and all((v == v[0]).all() for v in seen)
    assert firsts == sorted(firsts) and firsts[-1] <= calls


@omp.declare_target
def put(a, i, v):
    a[i] = v


@omp.target
def writes_through_helper(x, y):
    for i in omp.parallel_range(x.shape[0]):
        put(y, i, x[i] * 2.0)


def test_read_only_array_written_by_the_kernel_is_refused(device):
    x, y = np.arange(5.0), np.zeros(5)
    saxpy.on(device)(1.0, x, y)          # x is read only: a read-only x is fine
    x.flags.writeable = False
    saxpy.on(device)(1.0, x, y)
    y.flags.writeable = False
    for call in (lambda: saxpy.on(device)(1.0, x, y), lambda: inc.on(device)(y),
                 lambda: writes_through_helper.on(device)(x, y),
                 lambda: histogram.on(device)(np.zeros(3, np.int64), _ro(np.zeros(4, np.int64)))):
        with pytest.raises(ValueError, match=r"argument '(y|hist)' is read-only .* the kernel "
                                             r"writes it \(.*test_kernels.py:\d+\)"):
            call()
    assert (y == np.arange(5.0) * 2).all()       # nothing ran
    y.flags.writeable = True
    writes_through_helper.on(device)(x, y)
    assert (y == np.arange(5.0) * 2).all()
    k = inc.on(device)
    for _ in range(3):                  # the repeated-call path checks it too
        k(y)
    y.flags.writeable = False
    with pytest.raises(ValueError, match="argument 'y' is read-only"):
        k(y)
    assert (y == np.arange(5.0) * 2 + 3).all()


def _ro(a):
    a.flags.writeable = False
    return a


def test_a_nowait_call_that_does_not_compile_raises_at_the_call(device):
    """On every device (with a queue or not), as a plain call would."""
    @omp.target
    def broken(y):
        for i in omp.parallel_range(y.shape[0]):
            y[i] = sorted(y)
    y = np.zeros(4)
    for options in ({"nowait": True}, {"nowait": True, "depend": {"inout": [y]}}):
        with pytest.raises(omp.CompileError, match=r"sorted \(builtin_function_or_method\) "
                                                   r"cannot be called in a kernel"):
            broken.on(device)(y, **options)
    pygomp.taskwait()                   # nothing was left to fail there
    assert not y.any()


@omp.target
def fill_rows(a, v):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = v * (i + 1)
    return a.shape[0] * 100 + a.shape[1]


@omp.target
def times(z, w):
    for i in range(z.shape[0]):
        z[i] = z[i] * w


def test_repeated_calls_see_shapes_scalar_types_and_new_arrays(device):
    """What the repeated-call path reuses is checked at each call: the array itself (a
    new one in its place), its shape (reshaped in place), the scalars' types."""
    k = fill_rows.on(device)
    a = np.zeros((2, 6))
    for v in (1, 2, 3):                             # repeats: an int scalar each time
        assert k(a, v) == 206
        assert (a == v * np.array([[1], [2]])).all() and a.dtype == np.float64
    a.shape = (3, 4)                                # in place: the same object
    assert k(a, 5) == 304
    assert (a == 5 * np.array([[1], [2], [3]])).all()
    assert k(a, 0.5) == 304                         # a float now: another specialization
    assert (a[2] == 1.5).all()
    z = np.ones(3, np.complex128)
    for w in (1j, 2 + 1j):                          # a complex scalar: two words
        times.on(device)(z, w)
    assert (z == 1j * (2 + 1j)).all()
    for n in range(1, 4):                           # fresh arrays, maybe at old addresses
        del a
        a = np.zeros((n, 2))
        assert k(a, 1) == n * 100 + 2
        assert (a[:, 0] == np.arange(1, n + 1)).all()
