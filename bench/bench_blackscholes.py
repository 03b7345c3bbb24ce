"""Black-Scholes on float32 options: pygomp's devices against numpy and C, in one run.

    python bench/bench_blackscholes.py [--n 1000000] [--repeat 5]

One loop of exp, log and sqrt per option (the normal CDF by the usual polynomial).
pygomp runs with its data present (inside target_data on an offload device: nothing is
copied).  "C scalar" is the same loop in C (gcc -O3 -march=native -fopenmp
-fno-math-errno) calling libm one element at a time; "C libmvec" adds the declarations
and -fno-trapping-math that let gcc call glibc's vector math; "C fast" is -ffast-math.
Each row: the best of ``--repeat`` runs, measured in alternation, and its ratio to numpy.
The results of every variant are checked against numpy first (rtol 1e-5).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack

import cffi
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pygomp as omp  # noqa: E402
from bench.timing import duel  # noqa: E402
from pygomp.runtime import devices  # noqa: E402

A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
RSQRT2PI = 0.3989422804014327


def numpy_bs(S, X, T, r, v):
    r, v = np.float32(r), np.float32(v)
    sq = np.sqrt(T)
    d1 = (np.log(S / X) + (r + np.float32(0.5) * v * v) * T) / (v * sq)
    d2 = d1 - v * sq
    e = np.exp(-r * T)
    c1, c2 = _cnd(d1), _cnd(d2)
    return S * c1 - X * e * c2, X * e * (np.float32(1) - c2) - S * (np.float32(1) - c1)


def _cnd(d):
    k = np.float32(1) / (np.float32(1) + np.float32(0.2316419) * np.abs(d))
    poly = k * (np.float32(A1) + k * (np.float32(A2) + k * (np.float32(A3) + k * (
        np.float32(A4) + k * np.float32(A5)))))
    w = np.float32(1) - np.float32(RSQRT2PI) * np.exp(np.float32(-0.5) * d * d) * poly
    return np.where(d > 0, w, np.float32(1) - w)


@omp.target
def black_scholes(S, X, T, r: np.float32, v: np.float32, call, put):
    for i in omp.parallel_range(S.shape[0]):
        sq = np.sqrt(T[i])
        d1 = (np.log(S[i] / X[i]) + (r + 0.5 * v * v) * T[i]) / (v * sq)
        d2 = d1 - v * sq
        e = np.exp(-r * T[i])
        k1 = 1 / (1 + 0.2316419 * abs(d1))
        k2 = 1 / (1 + 0.2316419 * abs(d2))
        w1 = 1 - RSQRT2PI * np.exp(-0.5 * d1 * d1) * k1 * (
            A1 + k1 * (A2 + k1 * (A3 + k1 * (A4 + k1 * A5))))
        w2 = 1 - RSQRT2PI * np.exp(-0.5 * d2 * d2) * k2 * (
            A1 + k2 * (A2 + k2 * (A3 + k2 * (A4 + k2 * A5))))
        c1 = w1 if d1 > 0 else 1 - w1
        c2 = w2 if d2 > 0 else 1 - w2
        call[i] = S[i] * c1 - X[i] * e * c2
        put[i] = X[i] * e * (1 - c2) - S[i] * (1 - c1)


C_SOURCE = r"""
#include <math.h>
#include <stdint.h>
#ifdef LIBMVEC
__attribute__((simd("notinbranch"))) float expf(float);
__attribute__((simd("notinbranch"))) float logf(float);
#endif
static inline float cnd(float d)
{
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float w = 1.0f - 0.3989422804014327f * expf(-0.5f * d * d) * k * (0.31938153f
        + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f))));
    return d > 0 ? w : 1.0f - w;
}
void bs(const float *S, const float *X, const float *T, float r, float v, float *call,
        float *put, int64_t n)
{
    #pragma omp parallel for simd
    for (int64_t i = 0; i < n; i++) {
        float sq = sqrtf(T[i]);
        float d1 = (logf(S[i] / X[i]) + (r + 0.5f * v * v) * T[i]) / (v * sq);
        float d2 = d1 - v * sq, e = expf(-r * T[i]);
        float c1 = cnd(d1), c2 = cnd(d2);
        call[i] = S[i] * c1 - X[i] * e * c2;
        put[i] = X[i] * e * (1.0f - c2) - S[i] * (1.0f - c1);
    }
}
"""
C_VARIANTS = {"C scalar": [], "C libmvec": ["-DLIBMVEC", "-fno-trapping-math"],
              "C fast": ["-ffast-math"]}


def c_functions(tmp):
    ffi = cffi.FFI()
    ffi.cdef("void bs(const float *, const float *, const float *, float, float, float *,"
             " float *, int64_t);")
    src = os.path.join(tmp, "bs.c")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    out = {}
    for name, flags in C_VARIANTS.items():
        so = os.path.join(tmp, f"bs{len(out)}.so")
        subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared",
                        "-fno-math-errno", "-ffp-contract=off", *flags, src, "-o", so, "-lm"],
                       check=True)
        out[name] = (ffi, ffi.dlopen(so))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    n = args.n
    S = rng.uniform(5, 30, n).astype(np.float32)
    X = rng.uniform(1, 100, n).astype(np.float32)
    T = rng.uniform(0.25, 10, n).astype(np.float32)
    r, v = np.float32(0.02), np.float32(0.30)
    want = numpy_bs(S, X, T, r, v)
    runs = {"numpy": lambda: numpy_bs(S, X, T, r, v)}
    outs = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        for name, (ffi, lib) in c_functions(tmp).items():
            call, put = np.empty(n, np.float32), np.empty(n, np.float32)
            p = [ffi.from_buffer("float[]", a) for a in (S, X, T, call, put)]
            runs[name] = (lambda lib, p: lambda: lib.bs(p[0], p[1], p[2], r, v, p[3], p[4], n))(
                lib, p)
            outs[name] = (call, put, None)
        for d in devices.all_devices():
            call, put = np.empty(n, np.float32), np.empty(n, np.float32)
            arrays = [S.copy(), X.copy(), T.copy(), call, put]
            if not d.is_initial:
                stack.enter_context(omp.target_data(d.number, tofrom=arrays))
            k = black_scholes.on(d.number)
            kind = "initial" if d.is_initial else d.plugin.name
            runs[f"dev{d.number} {kind}"] = (lambda k, a: lambda: k(a[0], a[1], a[2], r, v,
                                                                   a[3], a[4]))(k, arrays)
            outs[f"dev{d.number} {kind}"] = (call, put, None if d.is_initial else d.number)
        for name, (call, put, num) in outs.items():
            runs[name]()
            if num is not None:
                omp.target_update(num, from_=[call, put])
            for got, w in zip((call, put), want):
                if not np.allclose(got, w, rtol=1e-5, atol=1e-4):
                    bad = np.argmax(np.abs(got - w))
                    raise SystemExit(f"{name}: element {bad} is {got[bad]}, numpy's {w[bad]}")
        best = duel(runs, args.repeat)
    print(f"Black-Scholes, {n} float32 options, {os.cpu_count()} cpus, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', '-')}, load average {os.getloadavg()[0]:.1f}; "
          f"best of {args.repeat}")
    for name, t in best.items():
        print(f"  {name:<16}{t * 1e3:9.2f} ms  {t / best['numpy']:6.2f}x numpy")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
