"""The kernel language as numpy users write it, on every device, against numpy:
chained indexing and sub-arrays, continue in parallel loops, Python's scoping of
enclosing variables, non-rectangular collapse, reduction clause separators."""
import numpy as np
import pytest

import pygomp.kernels as omp


# -- chained indexing and sub-arrays ---------------------------------------------------

@omp.declare_target
def dot_row(a, x):
    s = 0.0
    for k in range(a.shape[0]):
        s += a[k] * x[k]
    return s


@omp.target
def gemm_chained(alpha: float, A, B, C):
    for i in omp.parallel_range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(A.shape[1]):
                C[i][j] += alpha * A[i][k] * B[k][j]


@omp.target
def views(A, T3, x, out):
    for i in omp.parallel_range(A.shape[0]):
        row = A[i]                       # a sub-array bound to a name
        plane = T3[i]
        acc = np.zeros((2, 3))
        for j in range(len(row)):
            acc[j % 2][j % 3] += row[j]
        out[i][0] = dot_row(A[i], x)     # a sub-array passed to a helper
        out[i][1] = plane[1][2] + T3[i][0][-1] + plane.shape[0] * 100 + row.size
        out[i][2] = acc[1][2] + acc[0][0]
        out[i][3] = row[-1] + A[i][row.shape[0] - 2]


def test_chained_indexing_gemm(device):
    rng = np.random.default_rng(0)
    A, B, C = rng.random((19, 23)), rng.random((23, 17)), rng.random((19, 17))
    ref = C + 1.5 * A @ B
    gemm_chained.on(device)(1.5, A, B, C)
    np.testing.assert_allclose(C, ref, rtol=1e-12)


def test_sub_arrays_as_arrays(device):
    rng = np.random.default_rng(1)
    A, T3, x = rng.random((11, 7)), rng.random((11, 4, 5)), rng.random(7)
    out = np.zeros((11, 4))
    views.on(device)(A, T3, x, out)
    ref = np.zeros((11, 4))
    for i in range(11):
        acc = np.zeros((2, 3))
        for j in range(7):
            acc[j % 2][j % 3] += A[i][j]
        ref[i] = [A[i] @ x, T3[i][1][2] + T3[i][0][-1] + 400 + 7, acc[1][2] + acc[0][0],
                  A[i][-1] + A[i][5]]
    np.testing.assert_allclose(out, ref, rtol=1e-12)


# -- negative indices count from the end, as in numpy ------------------------------

@omp.target
def periodic(x, out):
    n = x.shape[0]
    for i in omp.parallel_range(n):
        out[i] = x[i - 1] + x[(i + 1) % n] - x[i - n]


def test_negative_index_at_run_time(device):
    x = np.arange(10.0) ** 2
    out = np.zeros(10)
    periodic.on(device)(x, out)
    np.testing.assert_array_equal(out, np.roll(x, 1) + np.roll(x, -1) - x)


@omp.target
def from_lo(x, out, start: int):
    n = x.shape[0]
    lo = max(1, start)                  # assigned once: i - 1 >= 0 below, no wrap needed
    for i in omp.parallel_range(lo, n):
        out[i] = x[i - 1] + x[start - n]      # start - n may be negative: it wraps


def test_index_bounds_of_names_assigned_once(device):
    x, out = np.arange(6.0), np.zeros(6)
    from_lo.on(device)(x, out, 2)
    assert out.tolist() == [0, 0, 1 + 2, 2 + 2, 3 + 2, 4 + 2]
    src = from_lo.source(x, out, 2)
    assert "x[(i - 1L)]" in src and "(((start - n) < 0L) ?" in src


# -- continue in a parallel loop ---------------------------------------------------

@omp.target
def skip_odd(x, out):
    for i in omp.parallel_range(x.shape[0]):
        if x[i] % 2 == 1:
            continue
        out[i] = x[i] * 10


@omp.target
def skip_rows(A, out):
    """continue before a nested parallel loop (its barriers), at the gang and worker
    levels, and inside a vector loop."""
    for i in omp.gang(A.shape[0]):
        if A[i, 0] < 0:
            continue
        s = 0.0
        for j in omp.vector(A.shape[1], reduction="+:s"):
            if A[i, j] > 5:
                continue
            s += A[i, j]
        out[i, 0] = s
    for g in omp.gang(1):
        for i in omp.worker(A.shape[0]):
            if A[i, 1] < 0:
                continue
            elif A[i, 2] < 0:
                out[i, 1] = -1.0
                continue
            t = 0.0
            for j in omp.vector(A.shape[1], reduction="+:t"):
                t += A[i, j]
            out[i, 1] = t


def test_continue_in_parallel_loops(device):
    x = np.arange(1000, dtype=np.int64)
    out = np.zeros(1000, np.int64)
    skip_odd.on(device)(x, out)
    np.testing.assert_array_equal(out, np.where(x % 2 == 1, 0, x * 10))
    A = np.random.default_rng(2).integers(-3, 9, (37, 29)).astype(np.float64)
    out = np.zeros((37, 2))
    skip_rows.on(device)(A, out)
    ref0 = np.where(A[:, 0] < 0, 0, np.where(A > 5, 0, A).sum(axis=1))
    ref1 = np.where(A[:, 1] < 0, 0, np.where(A[:, 2] < 0, -1, A.sum(axis=1)))
    np.testing.assert_array_equal(out[:, 0], ref0)
    np.testing.assert_array_equal(out[:, 1], ref1)


# -- Python's scoping of enclosing variables -----------------------------------------

@omp.target
def reuse_names(A, B, C, r):
    """C habits: k and s reused in several loops, t written in both branches."""
    n, m = C.shape
    s = 0.0
    for k in range(n):
        s += r[k]
    r[0] = s
    for i in omp.parallel_range(n):
        for j in range(m):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            if s > 5.0:
                t = s - 5.0
            else:
                t = -s
            C[i, j] = t
    for k in range(n):
        r[k] += 1.0


def test_enclosing_scalars_written_first_are_private(device):
    rng = np.random.default_rng(3)
    A, B, r = rng.random((13, 9)), rng.random((9, 11)) * 2, rng.random(13)
    C = np.zeros((13, 11))
    r0 = r.copy()
    reuse_names.on(device)(A, B, C, r)
    P = A @ B
    np.testing.assert_allclose(C, np.where(P > 5, P - 5, -P), rtol=1e-12)
    ref = r0 + 1
    ref[0] = r0.sum() + 1
    np.testing.assert_allclose(r, ref, rtol=1e-12)


# -- non-rectangular collapse (OpenMP 5.0) -------------------------------------------

@omp.target
def triangles(a, b, c):
    n = a.shape[0]
    for i in omp.parallel_range(n, collapse=2):
        for j in range(i + 1):
            a[i, j] = i * 1000 + j
    for i in omp.gang(n, collapse=2):
        for j in range(i - 3, n, 2):
            b[i, j] += 1.0
    count = 0
    for i in omp.parallel_range(1, n, collapse=3, reduction="+:count"):
        for j in range(i, n):
            for k in range(j - i):
                c[i, j, k] = i + 10 * j + 100 * k
                count += 1
    return count


def test_non_rectangular_collapse(device):
    n = 23
    a, b, c = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n, n))
    count = triangles.on(device)(a, b, c)
    ra, rb, rc = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n, n))
    rcount = 0
    for i in range(n):
        for j in range(i + 1):
            ra[i, j] = i * 1000 + j
        for j in range(i - 3, n, 2):
            rb[i, j] += 1.0
    for i in range(1, n):
        for j in range(i, n):
            for k in range(j - i):
                rc[i, j, k] = i + 10 * j + 100 * k
                rcount += 1
    np.testing.assert_array_equal(a, ra)
    np.testing.assert_array_equal(b, rb)
    np.testing.assert_array_equal(c, rc)
    assert count == rcount


# -- reduction clauses: ',' or ';' between groups ----------------------------------------

@omp.target
def and_max(x):
    a, m, s = -1, x[0], 0
    for i in omp.parallel_range(x.shape[0], reduction="&:a,max:m;+:s"):
        a &= x[i]
        m = max(m, x[i])
        s += x[i]
    return a * 0 + m + s * 1000 + (a & 1) * 7


def test_reduction_groups_with_commas_and_semicolons(device):
    x = np.random.default_rng(4).integers(1, 50, 999) | 1
    assert and_max.on(device)(x) == x.max() + x.sum() * 1000 + 7


# -- array reductions (OpenMP 4.5) and private arrays sized at run time ----------------

@omp.target
def array_sums(A, x, y, h):
    """y = A.T @ x with y reduced over the rows; a histogram of A's signs; the same in
    a gang loop around a vector loop (y is the gang's copy there)."""
    n, m = A.shape
    for i in omp.parallel_range(n, reduction="+:y"):
        for j in range(m):
            y[j] += A[i, j] * x[i]
    for i in omp.parallel_range(n, collapse=2, reduction="+:h;max:y"):
        for j in range(m):
            h[int(A[i, j] > 0)] += 1
            y[m] = max(y[m], A[i, j])
    for i in omp.gang(n, reduction="+:y"):
        for j in omp.vector(m, reduction="+:y"):
            y[m + 1 + j] += A[i, j]


@omp.target
def scratch_rows(A, out, m: int):
    n, k = A.shape                       # names of the arguments' values may size arrays
    for i in omp.parallel_range(n):
        s = np.zeros(k)                  # sized at run time, one per thread
        t = np.empty((m, 2), np.int64)
        for j in range(k):
            s[j] = A[i, j] * 2.0
        for q in range(m):
            t[q, 0] = q
            t[q, 1] = i
        acc = 0.0
        for j in range(k):
            acc += s[k - 1 - j] * (j + 1)
        out[i] = acc + t[m - 1, 0] + t[0, 1] + dot_row(s, s)     # passed to a helper


def test_array_reductions(device):
    rng = np.random.default_rng(5)
    A, x = rng.normal(size=(29, 13)), rng.random(29)
    y = np.zeros(13 + 1 + 13)
    y[13] = -np.inf
    h = np.zeros(2, np.int64)
    array_sums.on(device)(A, x, y, h)
    np.testing.assert_allclose(y[:13], A.T @ x, rtol=1e-12)
    assert y[13] == A.max()
    np.testing.assert_allclose(y[14:], A.sum(axis=0), rtol=1e-12)
    assert h.tolist() == [(A <= 0).sum(), (A > 0).sum()]


def test_private_arrays_sized_at_run_time(device):
    A = np.random.default_rng(6).random((17, 11))
    out = np.zeros(17)
    scratch_rows.on(device)(A, out, 5)
    ref = [(A[i, ::-1] * 2 * np.arange(1, 12)).sum() + 4 + i + 4 * (A[i] ** 2).sum()
           for i in range(17)]
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_private_arrays_that_cannot_fit(device):
    from pygomp.runtime.plugin import PluginError
    A, out = np.ones((3, 4)), np.zeros(3)
    with pytest.raises(PluginError, match=r"\d+ bytes"):
        scratch_rows.on(device)(A, out, 10**11)
    scratch_rows.on(device)(A, out, 2)           # the device is still usable
    assert out.tolist() == [37.0, 38.0, 39.0]


# -- loads read once before a loop (OpenCL) ----------------------------------------------

@omp.target
def row_updates(A, B):
    """Loads that a loop's stores miss (read once, before it, on OpenCL) and one they hit."""
    n = A.shape[0]
    for k in range(n - 1):
        for i in omp.parallel_range(k + 1, n):
            for j in range(k + 1, n):          # A[i, k]: the stores start after it
                A[i, j] -= A[i, k] * A[k, j]
            for j in range(k, n):              # B[i, k]: stored when j == k
                B[i, j] -= B[i, k] * 0.5 + B[k, j]
            for j in range(k):                 # B[i, k]: the stores stop before it
                B[i, j] += B[i, k]


def test_loads_hoisted_only_where_no_store_reaches(device):
    rng = np.random.default_rng(8)
    A, B = rng.random((9, 9)) + 9 * np.eye(9), rng.random((9, 9))
    want_a, want_b = A.copy(), B.copy()
    row_updates.py_func(want_a, want_b)
    row_updates.on(device)(A, B)
    np.testing.assert_allclose(A, want_a, rtol=1e-12)
    np.testing.assert_allclose(B, want_b, rtol=1e-12)


# -- helpers that store, called in code that every thread of a level runs ----------------

@omp.declare_target
def bump(x, k: int, by: float):
    x[k] += by


@omp.target
def bump_once(x, y):
    """A helper's store in sequential code (once, as in Python), then a worker loop."""
    bump(x, 0, 1.0)
    for i in omp.worker(y.shape[0]):
        y[i] += x[0]


@omp.target
def bump_a_gang(x, y):
    """In a gang loop outside its vector loop: once a gang into x, every lane's own t."""
    for g in omp.gang(y.shape[0]):
        t = np.zeros(2)
        bump(t, 1, g + 1.0)
        bump(x, g, t[1])
        for j in omp.vector(y.shape[1]):
            y[g, j] += x[g] + t[1]


def test_helper_stores_once_in_sequential_code(device):
    for kernel, x, y in ((bump_once, np.zeros(1), np.zeros(50)),
                         (bump_a_gang, np.zeros(6), np.zeros((6, 9)))):
        want_x, want_y = x.copy(), y.copy()
        kernel.py_func(want_x, want_y)
        kernel.on(device)(x, y)
        np.testing.assert_array_equal(x, want_x)
        np.testing.assert_array_equal(y, want_y)


# -- array reductions where the launch has more threads than the loops use ---------------

def gang_rows(A, y):
    for i in omp.gang(A.shape[0], reduction="+:y"):
        for j in range(A.shape[1]):
            y[j] += A[i, j]


def gang_lanes(A, y):
    for i in omp.gang(A.shape[0], reduction="+:y"):
        for j in omp.vector(A.shape[1], reduction="+:y"):
            y[j] += A[i, j]


def worker_rows(A, y):
    for i in omp.worker(A.shape[0], reduction="+:y"):
        for j in range(A.shape[1]):
            y[j] += A[i, j]


def worker_lanes(A, y):
    for i in omp.worker(A.shape[0], reduction="+:y"):
        for j in omp.vector(A.shape[1], reduction="+:y"):
            y[j] += A[i, j]


def lanes_only(A, y):
    for i in range(A.shape[0]):
        for j in omp.vector(A.shape[1], reduction="+:y"):
            y[j] += A[i, j]


COLUMN_SUMS = (gang_rows, gang_lanes, worker_rows, worker_lanes, lanes_only)


@pytest.mark.parametrize("launch", [(3, 4, 4), (5, 1, 1)])
def test_array_reductions_with_launch_sizes(device, launch):
    """Sizes the user forces give threads that a loop does not partition: their copies
    count once."""
    A = np.random.default_rng(7).random((13, 11))
    for f in COLUMN_SUMS:
        y = np.ones(11)
        omp.target(f, num_gangs=launch[0], num_workers=launch[1],
                   vector_length=launch[2]).on(device)(A, y)
        np.testing.assert_allclose(y, 1 + A.sum(axis=0), rtol=1e-12, err_msg=f.__name__)


def gang_count_lanes(A, y):
    for i in omp.gang(A.shape[0], reduction="+:y"):
        y[0] += 1.0
        for j in omp.vector(A.shape[1], reduction="+:y"):
            y[j] += A[i, j]
        y[1] += 2.0


def worker_count_lanes(A, y):
    for i in omp.worker(A.shape[0], reduction="+:y"):
        y[0] += 1.0
        for j in omp.vector(A.shape[1], reduction="+:y"):
            y[j] += A[i, j]


def gang_count_workers(A, y):
    for i in omp.gang(A.shape[0], reduction="+:y"):
        y[0] += 1.0
        for j in omp.worker(A.shape[1], reduction="+:y"):
            y[j] += A[i, j]


def gang_bump_lanes(A, y):
    for i in omp.gang(A.shape[0], reduction="+:y"):
        bump(y, 0, 1.0)
        for j in omp.vector(A.shape[1], reduction="+:y"):
            y[j] += A[i, j]


COUNTED_SUMS = (gang_count_lanes, worker_count_lanes, gang_count_workers, gang_bump_lanes)


@pytest.mark.parametrize("launch", [None, (3, 4, 4), (5, 1, 1)])
def test_array_reductions_updated_outside_the_inner_loop(device, launch):
    """Code next to the inner loop that updates the reduced array counts once an
    iteration of the outer loop, however many threads run it redundantly."""
    A = np.random.default_rng(9).random((13, 11))
    sizes = dict(zip(("num_gangs", "num_workers", "vector_length"), launch or ()))
    for f in COUNTED_SUMS:
        y, want = np.ones(11), np.ones(11)
        f(A, want)
        omp.target(f, **sizes).on(device)(A, y)
        np.testing.assert_allclose(y, want, rtol=1e-12, err_msg=f.__name__)


# -- vector loops in a sequential loop whose trips differ between workers ---------------

@omp.target
def prefix_rows(A, y):
    for i in omp.worker(A.shape[0]):
        for k in range(i):
            for j in omp.vector(A.shape[1]):
                y[i, j] += A[k, j]


@omp.target
def prefix_rows_while(A, y):
    for i in omp.worker(A.shape[0]):
        k = 0
        while k < i:
            for j in omp.vector(A.shape[1]):
                y[i, j] += A[k, j]
            k += 1


@omp.target
def even_prefix_rows(A, y):
    for i in omp.worker(A.shape[0]):
        for k in range(A.shape[0]):
            if k == i:
                break
            if k % 2:
                continue
            for j in omp.vector(A.shape[1]):
                y[i, j] += A[k, j]


@pytest.mark.parametrize("kernel", [prefix_rows, prefix_rows_while, even_prefix_rows],
                         ids=lambda k: k.py_func.__name__)
def test_prefix_rows_of_workers_in_vector_lanes(device, kernel):
    A, y, want = np.random.default_rng(8).random((9, 11)), np.zeros((9, 11)), np.zeros((9, 11))
    kernel.py_func(A, want)
    kernel.on(device)(A, y)
    np.testing.assert_allclose(y, want, rtol=1e-12)
    if kernel is prefix_rows:
        np.testing.assert_allclose(y[1:], np.cumsum(A, 0)[:-1], rtol=1e-12)
