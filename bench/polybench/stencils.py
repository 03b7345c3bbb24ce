"""Stencils: jacobi-2d, heat-3d, fdtd-2d, and seidel-2d as a wavefront."""
import numpy as np

import pygomp as omp

from .harness import Bench


@omp.target
def jacobi_2d(tsteps: int, A, B):
    n = A.shape[0]
    for t in range(tsteps):
        for i in omp.parallel_range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in omp.parallel_range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


@omp.target
def heat_3d(tsteps: int, A, B):
    n = A.shape[0]
    for t in range(1, tsteps + 1):
        for i in omp.parallel_range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    B[i, j, k] = (0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                                  + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                                  + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                                  + A[i, j, k])
        for i in omp.parallel_range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    A[i, j, k] = (0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                                  + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                                  + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                                  + B[i, j, k])


@omp.target
def fdtd_2d(ex, ey, hz, fict):
    tmax, nx, ny = fict.shape[0], ex.shape[0], ex.shape[1]
    for t in range(tmax):
        for j in omp.parallel_range(ny):
            ey[0, j] = fict[t]
        for i in omp.parallel_range(1, nx):
            for j in range(ny):
                ey[i, j] -= 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in omp.parallel_range(nx):
            for j in range(1, ny):
                ex[i, j] -= 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in omp.parallel_range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] -= 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


@omp.target
def seidel_2d(tsteps: int, A):
    n = A.shape[0]
    for t in range(tsteps):
        for w in range(3, 3 * (n - 2) + 1):       # the front of the points with 2i + j = w
            lo = max(1, (w - n + 3) // 2)
            hi = min(n - 2, (w - 1) // 2)
            for i in omp.parallel_range(lo, hi + 1):
                j = w - 2 * i
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


def _grid(*shape):
    idx = np.indices(shape).sum(0) + np.indices(shape)[0] * 3
    return (idx % 17 + 2.0) / shape[0]


def _jacobi(tsteps, n):
    return dict(tsteps=tsteps, n=n, A=_grid(n, n), B=_grid(n, n) * 0.5)


def _heat(tsteps, n):
    return dict(tsteps=tsteps, n=n, A=_grid(n, n, n), B=_grid(n, n, n))


def _fdtd(tmax, nx, ny):
    return dict(tmax=tmax, nx=nx, ny=ny, ex=_grid(nx, ny), ey=_grid(nx, ny) * 0.7,
                hz=_grid(nx, ny) * 1.3, fict=np.arange(tmax, dtype=float))


def _seidel(tsteps, n):
    return dict(tsteps=tsteps, n=n, A=_grid(n, n))


def _jacobi_ref(d):
    A, B = d["A"].copy(), d["B"].copy()
    for _ in range(d["tsteps"]):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])
    return {"A": A, "B": B}


def _heat_step(a):
    c = a[1:-1, 1:-1, 1:-1]
    return (0.125 * (a[2:, 1:-1, 1:-1] - 2.0 * c + a[:-2, 1:-1, 1:-1])
            + 0.125 * (a[1:-1, 2:, 1:-1] - 2.0 * c + a[1:-1, :-2, 1:-1])
            + 0.125 * (a[1:-1, 1:-1, 2:] - 2.0 * c + a[1:-1, 1:-1, :-2]) + c)


def _heat_ref(d):
    A, B = d["A"].copy(), d["B"].copy()
    for _ in range(d["tsteps"]):
        B[1:-1, 1:-1, 1:-1] = _heat_step(A)
        A[1:-1, 1:-1, 1:-1] = _heat_step(B)
    return {"A": A, "B": B}


def _fdtd_ref(d):
    ex, ey, hz = d["ex"].copy(), d["ey"].copy(), d["hz"].copy()
    for t in range(d["tmax"]):
        ey[0, :] = d["fict"][t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return {"ex": ex, "ey": ey, "hz": hz}


def _seidel_ref(d):
    """The original loops, in their order (slow: plain Python)."""
    A = d["A"].copy()
    n = A.shape[0]
    for _ in range(d["tsteps"]):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = A[i - 1:i + 2, j - 1:j + 2].sum() / 9.0
    return {"A": A}


BENCHES = [
    Bench("jacobi-2d", jacobi_2d, _jacobi, {"tiny": dict(tsteps=3, n=14),
                                           "small": dict(tsteps=20, n=250),
                                           "medium": dict(tsteps=50, n=1000),
                                           "large": dict(tsteps=100, n=2000)},
          ("A", "B"), _jacobi_ref),
    Bench("heat-3d", heat_3d, _heat, {"tiny": dict(tsteps=3, n=9),
                                     "small": dict(tsteps=20, n=40),
                                     "medium": dict(tsteps=50, n=100),
                                     "large": dict(tsteps=100, n=180)},
          ("A", "B"), _heat_ref),
    Bench("fdtd-2d", fdtd_2d, _fdtd, {"tiny": dict(tmax=3, nx=11, ny=13),
                                     "small": dict(tmax=20, nx=200, ny=240),
                                     "medium": dict(tmax=50, nx=1000, ny=1200),
                                     "large": dict(tmax=100, nx=2000, ny=2200)},
          ("ex", "ey", "hz"), _fdtd_ref),
    Bench("seidel-2d", seidel_2d, _seidel, {"tiny": dict(tsteps=2, n=12),
                                           "small": dict(tsteps=5, n=200),
                                           "medium": dict(tsteps=10, n=1000),
                                           "large": dict(tsteps=20, n=2000)},
          ("A",), _seidel_ref, slow_reference=True),
]
