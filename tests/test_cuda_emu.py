"""The CUDA C of the reduction kernels, the examples, test_regions' kernels (several
launches, run in the order of their program) and the array reductions and run-time
sized private arrays of test_language, run on the CPU under a small emulation of CUDA's
execution model, against numpy.  No GPU runs here, so this is what checks the logic of
the dialect (partials combined by the next launch, carried scalars, trees, shuffles,
private scratch) before bench/gpu_check.sh runs the real thing.

The emulation (g++ -std=c++20): one OS thread a CUDA thread; the blocks of a grid one
after another, in a shuffled order (no kernel may need its blocks resident at once);
``__syncthreads`` a barrier of the block, ``__syncwarp`` and the shuffles a barrier of
one worker's lanes (the dialect keeps them in one warp); ``__shared__`` memory one
arena, filled with a pattern for each block.  A barrier that not every thread reaches
within seconds is reported, not waited for.
"""
import ctypes
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import kernels_reduce  # noqa: E402
import test_cuda  # noqa: E402
import test_language  # noqa: E402
import test_regions  # noqa: E402
import test_kernels_examples as tke  # noqa: E402
from pygomp.compiler.argwords import arg_words  # noqa: E402
import pygomp.kernels as omp  # noqa: E402
from pygomp.kernels import _word  # noqa: E402
from pygomp.runtime.plugin import program  # noqa: E402

target = pytest.importorskip("pygomp.plugins.cuda.target")
if not shutil.which("g++"):
    pytest.skip("g++ is needed to emulate CUDA kernels", allow_module_level=True)

PREFIX_ROWS = (test_language.prefix_rows, test_language.prefix_rows_while,
               test_language.even_prefix_rows)

HEADER = r"""
#include <math.h>
#include <string.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#undef INFINITY
#undef NAN
struct pyg_dim3 { unsigned int x, y, z; };
static thread_local pyg_dim3 threadIdx, blockIdx;
static pyg_dim3 blockDim, gridDim;
static std::atomic<int> pyg_stuck{0};

struct pyg_barrier {                    // gives up (and says so) after 5 s
    std::mutex m; std::condition_variable cv; unsigned n, waiting = 0, gen = 0;
    explicit pyg_barrier(unsigned n) : n(n) {}
    void wait() {
        std::unique_lock<std::mutex> l(m);
        unsigned g = gen;
        if (++waiting == n) { waiting = 0; ++gen; cv.notify_all(); return; }
        if (!cv.wait_for(l, std::chrono::seconds(5), [&] { return gen != g || pyg_stuck; }))
            pyg_stuck = 1;
    }
};
static pyg_barrier *pyg_block;
static std::vector<pyg_barrier *> pyg_lanes;        // one per worker
static unsigned long long pyg_slots[4096];
unsigned long long pyg_tree[4096];
static unsigned char pyg_arena[16][8192];        // __shared__ variables, refilled a block

#define __global__
#define __device__
#define __forceinline__ inline
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline void __syncthreads() { __threadfence(); pyg_block->wait(); }
static inline void __syncwarp(unsigned) { __threadfence(); pyg_lanes[threadIdx.y]->wait(); }
template <class T> static T __shfl_xor_sync(unsigned, T v, int o) {
    unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
    memcpy(&pyg_slots[t], &v, sizeof v);
    __syncwarp(0);
    T r;
    memcpy(&r, &pyg_slots[t ^ o], sizeof r);
    __syncwarp(0);
    return r;
}
template <class T> static T atomicAdd(T *p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> static T atomicExch(T *p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <class T> static T atomicCAS(T *p, T e, T v)
{ std::atomic_ref<T>(*p).compare_exchange_strong(e, v); return e; }
template <class T> static T atomicMax(T *p, T v)
{ std::atomic_ref<T> r(*p); T o = r.load(); while (v > o && !r.compare_exchange_weak(o, v)); return o; }
template <class T> static T atomicMin(T *p, T v)
{ std::atomic_ref<T> r(*p); T o = r.load(); while (v < o && !r.compare_exchange_weak(o, v)); return o; }
#define PYG_CAST(name, from, to) \
    static inline to name(from v) { to r; memcpy(&r, &v, sizeof r); return r; }
PYG_CAST(__int_as_float, int, float)
PYG_CAST(__uint_as_float, unsigned int, float)
PYG_CAST(__float_as_uint, float, unsigned int)
PYG_CAST(__longlong_as_double, long long, double)
PYG_CAST(__double_as_longlong, double, long long)
"""

LAUNCH = r"""
extern "C" int pyg_launch_N(const unsigned long long *w, unsigned gx, unsigned bx,
                            unsigned by, const unsigned *order)
{
    blockDim = {bx, by, 1};
    gridDim = {gx, 1, 1};
    pyg_stuck = 0;
    for (unsigned i = 0; i < gx; ++i) {
        pyg_barrier block(bx * by);
        std::vector<pyg_barrier *> lanes;
        for (unsigned y = 0; y < by; ++y)
            lanes.push_back(new pyg_barrier(bx));
        memset(pyg_arena, 0xa5, sizeof pyg_arena);      // what a block finds there
        pyg_block = &block;
        pyg_lanes = lanes;
        std::vector<std::thread> threads;
        for (unsigned y = 0; y < by; ++y)
            for (unsigned x = 0; x < bx; ++x)
                threads.emplace_back([=] {
                    threadIdx = {x, y, 0};
                    blockIdx = {order[i], 0, 0};
                    CALL;
                });
        for (auto &t : threads)
            t.join();
        for (auto *l : lanes)
            delete l;
    }
    return pyg_stuck;
}
"""


def _team(src):
    """Each ``__shared__`` variable a reference into the block's arena."""
    slots = iter(range(16))

    def one(m):
        t, name, n = m.groups()
        return (f"{t} (&{name})[{n}] = *({t} (*)[{n}])pyg_arena[{next(slots)}];" if n else
                f"{t} &{name} = *({t} *)pyg_arena[{next(slots)}];")
    return re.sub(r"__shared__ ([\w ]+?) (\w+)(?:\[(\d+)\])?;", one, src)


def emulator(cases):
    """One library of the given (kernel, args) specializations: {kernel spec's entry:
    (ctypes launch function, KernelInfo)}."""
    specs = {}
    for kernel, args in cases:
        spec = kernel.spec(tuple(args))
        specs.setdefault(spec.unit(target.HOOKS).entry, spec)
    pre = target.HOOKS.preamble(None)
    parts = [HEADER, pre]
    for i, spec in enumerate(specs.values()):
        unit = spec.unit(target.HOOKS)
        info = unit.kernels[0]
        src = unit.source[len(pre):].replace('extern "C" __global__', "__global__")
        src = re.sub(r"extern __shared__ [^;]*;", "", src)      # the global pyg_tree
        src = _team(src)
        words = [f"w[{k}]" for k in range(len(info.args))]
        for _ in range(info.has_scratch + bool(info.private)):    # scratch, private
            words.append(f"(unsigned long long *)w[{len(words)}]")
        parts.append(f"namespace pyg_u{i} {{\n{src}\n}}")
        for e, entry in enumerate(info.entries):
            call = f"pyg_u{i}::{entry}({', '.join(words)})"
            parts.append(LAUNCH.replace("pyg_launch_N", f"pyg_launch_{i}_{e}")
                         .replace("CALL", call))
    d = pathlib.Path(tempfile.mkdtemp(prefix="pyg-emu-"))
    (d / "k.cpp").write_text("\n".join(parts))
    r = subprocess.run(["g++", "-std=c++20", "-O0", "-w", "-shared", "-fPIC", "-pthread",
                        str(d / "k.cpp"), "-o", str(d / "k.so")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:3000]
    lib = ctypes.CDLL(str(d / "k.so"))
    out = {}
    for i, (entry, spec) in enumerate(specs.items()):
        fs = []
        for e in range(len(spec.unit(target.HOOKS).kernels[0].entries)):
            fs.append(getattr(lib, f"pyg_launch_{i}_{e}"))
            fs[-1].argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 3 + [ctypes.c_void_p]
        out[entry] = (fs, spec)
    shutil.rmtree(d)
    return out


def run(lib, kernel, args, gangs, workers, vector, seed=0, forced=False):
    """Run ``kernel(*args)`` under the emulation (arrays in place); its result.
    ``forced``: sizes a user gave (num_gangs, ...), which the plugin gives every entry
    that partitions a level, whether it partitions that one or not."""
    unit = kernel.spec(tuple(args)).unit(target.HOOKS)
    f, spec = lib[unit.entry]
    info = unit.kernels[0]
    words, keep, rets = [], [], []
    it = iter(args)
    for name, t, role in arg_words(unit.fn):
        if role == "array":
            a = next(it, None)
            if name.startswith("pyg_ret"):          # a tuple's value (forms.Tuples)
                a = np.zeros(1, t.elem.dtype)
                rets.append(a)
            words.append(a.ctypes.data)
            shape = list(a.shape)
        elif role == "shape":
            words.append(shape.pop(0))
        elif role == "scalar":
            words.append(_word(t)(next(it)))
        elif role == "real":                    # a complex: two words
            z = complex(next(it))
            words.append(_word(t)(z.real))
        elif role == "imag":
            words.append(_word(t)(z.imag))
        else:
            keep.append(np.zeros(1, spec.ret_dtype))
            words.append(keep[-1].ctypes.data)
    scratch = np.zeros(max(info.scratch_size(gangs), 8) // 8, np.uint64)
    if info.has_scratch:
        words.append(scratch.ctypes.data)
    per = -(-info.private_size(words) // 8)          # words per thread
    private = np.zeros(per * gangs * workers * vector + 1, np.uint64)
    if info.private:
        words.append(private.ctypes.data)
    w = np.array(words, np.uint64)
    rng = np.random.default_rng(seed)
    ops = program(info.program, lambda word: int(scratch.view(np.int64)[word])) \
        if info.program else range(len(info.entries))
    for e in ops:                           # the plugin's order of the entries
        lv = info.levels[e]
        gx = gangs if "g" in lv or forced and lv else 1
        bx, by = (vector if "v" in lv or forced and lv else 1), \
            (workers if "w" in lv or forced and lv else 1)
        order = rng.permutation(gx).astype(np.uint32)
        stuck = f[e](w.ctypes.data, gx, bx, by, order.ctypes.data)
        assert not stuck, f"{kernel}: a barrier was not reached by every thread of a block"
    if rets:
        return tuple(r[0] for r in rets)
    return keep[0][0] if keep else None


GEOMETRIES = [(5, 2, 8), (3, 4, 4), (1, 1, 32)]
INTS, FLOATS = (np.int32, np.int64), (np.float32, np.float64)
G, C = 6, 40


def reduce_inputs(dtype):
    rng = np.random.default_rng(4)
    x, p = kernels_reduce.inputs(G, C, dtype, rng)
    bits = (rng.integers(0, 1 << 20, G * C) | 0x50000).astype(dtype)
    return x, p, bits


@omp.target
def counters_named(x, out):
    """Variables named as the CUDA dialect once named its first loop's counters."""
    tot1 = 2.0
    P1 = 3.0
    k1 = 5.0
    for i in omp.parallel_range(x.shape[0]):
        out[i] = x[i] * tot1 + P1 * k1


@pytest.fixture(scope="module")
def lib():
    f8 = np.zeros(4)
    cases = [(kernels_reduce.reduce_all, (np.zeros(1, t), np.zeros(1, t), 1, 1,
                                          np.zeros((1, 1), t))) for t in INTS + FLOATS]
    cases += [(kernels_reduce.reduce_bits, (np.zeros(1, t), 1, 1, np.zeros((1, 1), t)))
              for t in INTS]
    cases += [(test_cuda.own_arrays, (f8, f8)),
              (test_cuda.scale_by_total, (f8, f8)), (test_cuda.steps, (f8, f8, 1)),
              (tke.load("dot").dot, (f8, f8)), (tke.load("pi").pi, (1,)),
              (tke.load("jacobi").sweep, (np.zeros((2, 2)), np.zeros((2, 2)))),
              (tke.load("matvec").matvec, (np.zeros((2, 2)), f8, f8)),
              (tke.load("histogram").histogram, (f8, 0.0, 1.0, np.zeros(2, np.int64))),
              (tke.load("transpose").transpose, (np.zeros((2, 2), np.float32),) * 2),
              (test_regions.cholesky, (np.zeros((2, 2)),)),
              (test_regions.stencil, (f8, f8, 1)),
              (test_regions.converge, (f8, 1.0, 1, f8)),
              (test_regions.widths, (np.zeros((2, 3), np.int64), 1)),
              (test_language.scratch_rows, (np.zeros((2, 2)), f8, 1)),
              (test_language.array_sums, (np.zeros((2, 2)), f8, f8, np.zeros(2, np.int64))),
              (test_language.bump_once, (f8, f8)),
              (test_language.bump_a_gang, (f8, np.zeros((2, 2)))),
              (counters_named, (f8, f8))]
    cases += [(omp.target(f), (np.zeros((2, 2)), f8))
              for f in test_language.COLUMN_SUMS + test_language.COUNTED_SUMS]
    cases += [(k, (np.zeros((2, 2)), np.zeros((2, 2)))) for k in PREFIX_ROWS]
    return emulator(cases)


@pytest.mark.parametrize("gangs, workers, vector", GEOMETRIES)
@pytest.mark.parametrize("dtype", INTS + FLOATS, ids=lambda t: np.dtype(t).name)
def test_every_reduction_at_every_level(lib, dtype, gangs, workers, vector):
    x, p, bits = reduce_inputs(dtype)
    out = np.zeros((6, 6), dtype)
    run(lib, kernels_reduce.reduce_all, (x, p, G, C, out), gangs, workers, vector)
    ref = [x.sum(dtype=dtype), p.prod(dtype=dtype), x.max(), x.min(), 0, 1]
    np.testing.assert_array_equal(out, np.array([ref] * 6, dtype))
    if dtype in INTS:
        out = np.zeros((6, 3), dtype)
        run(lib, kernels_reduce.reduce_bits, (bits, G, C, out), gangs, workers, vector)
        ref = [np.bitwise_and.reduce(bits), np.bitwise_or.reduce(bits),
               np.bitwise_xor.reduce(bits)]
        np.testing.assert_array_equal(out, np.array([ref] * 6, dtype))


@pytest.mark.parametrize("gangs, workers, vector", GEOMETRIES)
def test_gang_loops_and_examples(lib, gangs, workers, vector):
    x = np.arange(64.0)
    y = np.zeros_like(x)
    run(lib, test_cuda.own_arrays, (x, y), gangs, workers, vector)
    np.testing.assert_array_equal(y, 3 * x + np.repeat(x[::8], 8))
    x = np.arange(1.0, 301.0)
    y = np.zeros_like(x)
    run(lib, test_cuda.scale_by_total, (x, y), gangs, workers, vector)
    np.testing.assert_allclose(y, x / x.sum())
    want = x.copy()
    for _ in range(3):
        want = np.roll(np.roll(want, -1) + 1.0, -3)
    assert run(lib, test_cuda.steps, (x, y, 3), gangs, workers, vector) == want.sum()
    np.testing.assert_array_equal(x, want)

    a, b = np.linspace(0, 1, 1001), np.linspace(2, 3, 1001)
    assert np.isclose(run(lib, tke.load("dot").dot, (a, b), gangs, workers, vector), a @ b)
    jacobi = tke.load("jacobi")
    u = jacobi.grid(17)
    v = u.copy()
    err = run(lib, jacobi.sweep, (u, v), gangs, workers, vector)
    ref = jacobi.reference(u, 1)
    np.testing.assert_allclose(v, ref)
    assert np.isclose(err, np.abs(ref - u).max())


@pytest.mark.parametrize("gangs, workers, vector", GEOMETRIES)
def test_more_examples(lib, gangs, workers, vector):
    """A vector reduction in a gang loop, atomics, a team-shared tile and a barrier."""
    assert np.isclose(run(lib, tke.load("pi").pi, (1000,), gangs, workers, vector), np.pi)
    rng = np.random.default_rng(1)
    A, x, y = rng.random((37, 53)), rng.random(53), np.zeros(37)
    run(lib, tke.load("matvec").matvec, (A, x, y), gangs, workers, vector)
    np.testing.assert_allclose(y, A @ x)
    h = tke.load("histogram")
    v, hist = rng.normal(0.0, 1.0, 999), np.zeros(h.BINS, np.int64)
    run(lib, h.histogram, (v, -3.0, 3.0, hist), gangs, workers, vector)
    ref, _ = np.histogram(v[(v >= -3.0) & (v < 3.0)], bins=h.BINS, range=(-3.0, 3.0))
    np.testing.assert_array_equal(hist, ref)
    a = rng.random((45, 70)).astype(np.float32)
    b = np.zeros((70, 45), np.float32)
    run(lib, tke.load("transpose").transpose, (a, b), gangs, workers, vector)
    np.testing.assert_array_equal(b, a.T)


@pytest.mark.parametrize("gangs, workers, vector", GEOMETRIES)
def test_regions_of_several_launches(lib, gangs, workers, vector):
    """test_regions' kernels: a store before parallel loops, a time loop, a while loop
    with break, continue, if and return around gang loops, every gang loop at full width."""
    rng = np.random.default_rng(0)
    M = rng.random((12, 12))
    A = M @ M.T + 12 * np.eye(12)
    got = A.copy()
    run(lib, test_regions.cholesky, (got,), gangs, workers, vector)
    np.testing.assert_allclose(np.tril(got), np.linalg.cholesky(A), rtol=1e-10)

    a, b = rng.random(101), np.zeros(101)
    ra, rb = a.copy(), b.copy()
    test_regions.stencil.py_func(ra, rb, 7)
    run(lib, test_regions.stencil, (a, b, 7), gangs, workers, vector)
    np.testing.assert_allclose(a, ra, rtol=1e-13)
    np.testing.assert_allclose(b, rb, rtol=1e-13)

    for limit in (4, 1000):
        a, out = rng.random(77) * 100, np.zeros(2)
        ra, rout = a.copy(), out.copy()
        want = test_regions.converge.py_func(ra, 1e-3, limit, rout)
        assert run(lib, test_regions.converge, (a, 1e-3, limit, out),
                   gangs, workers, vector) == want
        np.testing.assert_array_equal(out, rout)
        np.testing.assert_allclose(a, ra, rtol=1e-13)

    out = np.zeros((50, 3), np.int64)
    run(lib, test_regions.widths, (out, 50), gangs, workers, vector)
    assert out[0, 2] == 50 * 49 // 2
    assert (out[:, :2] == gangs).all()


def test_private_arrays_sized_at_run_time(lib):
    A, out = np.random.default_rng(3).random((17, 11)), np.zeros(17)
    run(lib, test_language.scratch_rows, (A, out, 5), 3, 2, 4)
    ref = [(A[i, ::-1] * 2 * np.arange(1, 12)).sum() + 4 + i + 4 * (A[i] ** 2).sum()
           for i in range(17)]
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_kernel_variables_keep_their_values_in_loops(lib):
    x, out = np.arange(40.0), np.zeros(40)
    run(lib, counters_named, (x, out), 3, 2, 4)
    np.testing.assert_array_equal(out, x * 2 + 15)


@pytest.mark.parametrize("gangs, workers, vector", GEOMETRIES)
def test_array_reductions(lib, gangs, workers, vector):
    rng = np.random.default_rng(5)
    A, x = rng.normal(size=(29, 13)), rng.random(29)
    y = np.zeros(13 + 1 + 13)
    y[13] = -np.inf
    h = np.zeros(2, np.int64)
    run(lib, test_language.array_sums, (A, x, y, h), gangs, workers, vector)
    np.testing.assert_allclose(y[:13], A.T @ x, rtol=1e-12)
    assert y[13] == A.max()
    np.testing.assert_allclose(y[14:], A.sum(axis=0), rtol=1e-12)
    assert h.tolist() == [(A <= 0).sum(), (A > 0).sum()]


@pytest.mark.parametrize("gangs, workers, vector", GEOMETRIES)
def test_helper_stores_once_in_sequential_code(lib, gangs, workers, vector):
    for kernel, x, y in ((test_language.bump_once, np.zeros(1), np.zeros(50)),
                         (test_language.bump_a_gang, np.zeros(6), np.zeros((6, 9)))):
        want_x, want_y = x.copy(), y.copy()
        kernel.py_func(want_x, want_y)
        run(lib, kernel, (x, y), gangs, workers, vector)
        np.testing.assert_array_equal(x, want_x)
        np.testing.assert_array_equal(y, want_y)


@pytest.mark.parametrize("gangs, workers, vector", [(3, 4, 4), (2, 2, 8), (5, 1, 1)])
def test_array_reductions_with_launch_sizes(lib, gangs, workers, vector):
    A = np.random.default_rng(7).random((13, 11))
    for f in test_language.COLUMN_SUMS:
        y = np.ones(11)
        run(lib, omp.target(f), (A, y), gangs, workers, vector, forced=True)
        np.testing.assert_allclose(y, 1 + A.sum(axis=0), rtol=1e-12, err_msg=f.__name__)


@pytest.mark.parametrize("gangs, workers, vector", [(3, 4, 4), (2, 2, 8), (5, 1, 1)])
def test_array_reductions_updated_outside_the_inner_loop(lib, gangs, workers, vector):
    A = np.random.default_rng(9).random((13, 11))
    for f in test_language.COUNTED_SUMS:
        y, want = np.ones(11), np.ones(11)
        f(A, want)
        run(lib, omp.target(f), (A, y), gangs, workers, vector, forced=True)
        np.testing.assert_allclose(y, want, rtol=1e-12, err_msg=f.__name__)


@pytest.mark.parametrize("gangs, workers, vector", GEOMETRIES)
def test_prefix_rows_of_workers_in_vector_lanes(lib, gangs, workers, vector):
    """Each worker's lanes sync alone (__syncwarp), however many trips its loop has."""
    A = np.random.default_rng(8).random((9, 11))
    for kernel in PREFIX_ROWS:
        y, want = np.zeros((9, 11)), np.zeros((9, 11))
        kernel.py_func(A, want)
        run(lib, kernel, (A, y), gangs, workers, vector)
        np.testing.assert_allclose(y, want, rtol=1e-12, err_msg=kernel.py_func.__name__)
