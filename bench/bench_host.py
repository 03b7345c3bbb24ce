"""Python kernels on the host device against numpy, hand-written C and PyOMP, in one run.

    python bench/bench_host.py [--quick] [--repeat N]

Rows: saxpy, dot, pi, matvec, stencil (one Jacobi sweep with a max reduction), at sizes
that leave the caches.  pygomp runs on the host offload device with its data present
(inside target_data: nothing is copied).  "C" is the same loops written by hand with
OpenMP pragmas (gcc -O3 -march=native -fopenmp, called through cffi); "PyOMP" is
numba.openmp if it is installed (``pip install pyomp``).  Times are the best of
``--repeat`` runs; ratios are time / pygomp time (above 1: pygomp is faster).
What one call costs (dispatch, a cached kernel in a new process): bench/bench_dispatch.py.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import cffi
import numpy as np

import pygomp
from pygomp.runtime import devices

# -- pygomp kernels: the examples' own ---------------------------------------------

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from examples.dot import dot  # noqa: E402
from examples.jacobi import sweep as stencil  # noqa: E402
from examples.matvec import matvec  # noqa: E402
from examples.pi import pi  # noqa: E402
from examples.saxpy import saxpy  # noqa: E402


# -- the same loops in C ----------------------------------------------------------

C_SOURCE = r"""
#include <stdint.h>
#include <math.h>
void saxpy(double a, const double *x, double *y, int64_t n) {
    #pragma omp parallel for simd
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
double dot(const double *x, const double *y, int64_t n) {
    double s = 0;
    #pragma omp parallel for simd reduction(+:s)
    for (int64_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}
double pi(int64_t n) {
    double h = 1.0 / n, s = 0;
    #pragma omp parallel for simd reduction(+:s)
    for (int64_t i = 0; i < n; i++) { double x = (i + 0.5) * h; s += 4.0 / (1.0 + x * x); }
    return s * h;
}
void matvec(const double *A, const double *x, double *y, int64_t n, int64_t m) {
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++) {
        double s = 0;
        #pragma omp simd reduction(+:s)
        for (int64_t j = 0; j < m; j++) s += A[i * m + j] * x[j];
        y[i] = s;
    }
}
double stencil(const double *u, double *v, int64_t n, int64_t m) {
    double err = 0;
    #pragma omp parallel for reduction(max:err)
    for (int64_t i = 1; i < n - 1; i++) {
        #pragma omp simd reduction(max:err)
        for (int64_t j = 1; j < m - 1; j++) {
            v[i*m+j] = 0.25 * (u[(i-1)*m+j] + u[(i+1)*m+j] + u[i*m+j-1] + u[i*m+j+1]);
            double d = fabs(v[i*m+j] - u[i*m+j]);
            err = d > err ? d : err;
        }
    }
    return err;
}
"""
C_DECLS = """
void saxpy(double, const double *, double *, int64_t);
double dot(const double *, const double *, int64_t);
double pi(int64_t);
void matvec(const double *, const double *, double *, int64_t, int64_t);
double stencil(const double *, double *, int64_t, int64_t);
"""


def build_c():
    d = tempfile.mkdtemp(prefix="pygomp-bench-")
    src, so = os.path.join(d, "hand.c"), os.path.join(d, "hand.so")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", src,
                    "-o", so, "-lm"], check=True)
    ffi = cffi.FFI()
    ffi.cdef(C_DECLS)
    return ffi, ffi.dlopen(so)


# -- PyOMP ---------------------------------------------------------------------

def pyomp_kernels():
    try:
        from numba.openmp import njit
        from numba.openmp import openmp_context as openmp
    except Exception as e:          # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"

    @njit
    def p_saxpy(a, x, y):
        with openmp("parallel for"):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]

    @njit
    def p_dot(x, y):
        s = 0.0
        with openmp("parallel for reduction(+:s)"):
            for i in range(x.shape[0]):
                s += x[i] * y[i]
        return s

    @njit
    def p_pi(n):
        h = 1.0 / n
        s = 0.0
        with openmp("parallel for reduction(+:s)"):
            for i in range(n):
                x = (i + 0.5) * h
                s += 4.0 / (1.0 + x * x)
        return s * h

    @njit
    def p_matvec(A, x, y):
        with openmp("parallel for"):
            for i in range(A.shape[0]):
                s = 0.0
                for j in range(A.shape[1]):
                    s += A[i, j] * x[j]
                y[i] = s

    @njit
    def p_stencil(u, v):            # PyOMP has no max reduction: a maximum per row
        n, m = u.shape
        rows = np.zeros(n)
        with openmp("parallel for"):
            for i in range(1, n - 1):
                e = 0.0
                for j in range(1, m - 1):
                    v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
                    e = max(e, abs(v[i, j] - u[i, j]))
                rows[i] = e
        return rows.max()

    return dict(saxpy=p_saxpy, dot=p_dot, pi=p_pi, matvec=p_matvec, stencil=p_stencil), None


# -- timing ------------------------------------------------------------------------

def per_call(fn, n, repeat=7):
    fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t) / n)
    return min(out)


def host_device():
    for d in devices.all_devices():
        if d.plugin.name == "host" and not d.is_initial:
            return d
    raise SystemExit("no host offload device (PYGOMP_DEVICES?)")


def kernels_table(args, dev):
    n_vec = 1 << (20 if args.quick else 24)
    n_pi = 1 << (22 if args.quick else 27)
    n_mat = 1024 if args.quick else 4096
    rng = np.random.default_rng(0)
    x, y = rng.random(n_vec), rng.random(n_vec)
    A, v = rng.random((n_mat, n_mat)), rng.random(n_mat)
    out = np.zeros(n_mat)
    u = rng.random((n_mat, n_mat))
    w = u.copy()
    ffi, lib = build_c()
    p = lambda a: ffi.cast("double *", a.ctypes.data)     # noqa: E731
    pk, why = pyomp_kernels()
    d = dev.number
    di = next(x.number for x in devices.all_devices() if x.is_initial)
    rows = [
        ("saxpy", f"n={n_vec}", lambda: saxpy.on(d)(2.0, x, y), lambda: saxpy.on(di)(2.0, x, y),
         lambda: y.__iadd__(2.0 * x),
         lambda: lib.saxpy(2.0, p(x), p(y), n_vec),
         pk and (lambda: pk["saxpy"](2.0, x, y))),
        ("dot", f"n={n_vec}", lambda: dot.on(d)(x, y), lambda: dot.on(di)(x, y),
         lambda: np.dot(x, y),
         lambda: lib.dot(p(x), p(y), n_vec), pk and (lambda: pk["dot"](x, y))),
        ("pi", f"n={n_pi}", lambda: pi.on(d)(n_pi), lambda: pi.on(di)(n_pi),
         lambda: np.sum(4.0 / (1.0 + ((np.arange(n_pi) + 0.5) / n_pi) ** 2)) / n_pi,
         lambda: lib.pi(n_pi), pk and (lambda: pk["pi"](n_pi))),
        ("matvec", f"{n_mat}^2", lambda: matvec.on(d)(A, v, out),
         lambda: matvec.on(di)(A, v, out), lambda: A @ v,
         lambda: lib.matvec(p(A), p(v), p(out), n_mat, n_mat),
         pk and (lambda: pk["matvec"](A, v, out))),
        ("stencil", f"{n_mat}^2", lambda: stencil.on(d)(u, w), lambda: stencil.on(di)(u, w),
         lambda: _np_stencil(u, w),
         lambda: lib.stencil(p(u), p(w), n_mat, n_mat),
         pk and (lambda: pk["stencil"](u, w))),
    ]
    # correctness first
    assert abs(dot.on(d)(x, y) - np.dot(x, y)) < 1e-6 * n_vec
    assert abs(pi.on(d)(1000) - np.pi) < 1e-6
    print(f"threads: {os.cpu_count()} cpus, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}"
          f"; best of {args.repeat}, interleaved; ratio = other time / pygomp time")
    if pk is None:
        print(f"PyOMP: not available ({why})")
    print(f"pygomp: host device {d} (separate memory, data present); 'init': the same "
          f"kernel on the initial device {di} (numpy's own memory)")
    head = f"{'kernel':<8} {'size':>10} {'pygomp ms':>10} {'init ms':>8} {'numpy ms':>9} " \
           f"{'C ms':>8} {'PyOMP ms':>9} | {'numpy/pg':>8} {'C/pg':>6} {'PyOMP/pg':>8}"
    print(head)
    print("-" * len(head))
    with pygomp.target_data(d, to=[x, A, v, u], tofrom=[y, out, w]):
        for name, size, *fns in rows:
            t_pg, t_in, t_np, t_c, t_po = interleaved(fns, args.repeat)
            print(f"{name:<8} {size:>10} {t_pg * 1e3:>10.2f} {t_in * 1e3:>8.2f} {t_np * 1e3:>9.2f} "
                  f"{t_c * 1e3:>8.2f} {t_po * 1e3:>9.2f} | {t_np / t_pg:>8.2f} "
                  f"{t_c / t_pg:>6.2f} {t_po / t_pg:>8.2f}")


def interleaved(fns, repeat):
    """Best time of each function, running them in turn ``repeat`` times, so that all
    see the same machine; a pause before each lets the thread pools of the previous one
    (libgomp, OpenBLAS, PyOMP's libomp) stop spinning."""
    best_ = [float("inf")] * len(fns)
    for f in fns:
        if f:
            f()
    for _ in range(repeat):
        for k, f in enumerate(fns):
            if f is None:
                best_[k] = float("nan")
                continue
            time.sleep(0.25)
            t = time.perf_counter()
            f()
            best_[k] = min(best_[k], time.perf_counter() - t)
    return best_


def _np_stencil(u, v):
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return np.abs(v[1:-1, 1:-1] - u[1:-1, 1:-1]).max()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    dev = host_device()
    print(f"pygomp host device {dev.number}: {dev.info.name}")
    kernels_table(args, dev)


if __name__ == "__main__":
    main()
