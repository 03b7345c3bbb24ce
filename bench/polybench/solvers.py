"""Solvers: lu and cholesky, one parallel loop per column."""
import math

import numpy as np

import pygomp as omp

from .harness import Bench


@omp.target
def lu(A):
    n = A.shape[0]
    for k in range(n):
        for i in omp.parallel_range(k + 1, n):
            A[i, k] /= A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]


@omp.target
def cholesky(A, p):
    n = A.shape[0]
    for i in range(n):
        x = A[i, i]
        for k in range(i):
            x -= A[i, k] * A[i, k]
        pi = 1.0 / math.sqrt(x)
        p[i] = pi
        for j in omp.parallel_range(i + 1, n):
            y = A[i, j]
            for k in range(i):
                y -= A[j, k] * A[i, k]
            A[j, i] = y * pi


def _spd(n):
    i, j = np.ogrid[:n, :n]
    M = ((i * 3 + j * 5 + 1) % 23) / 23.0
    return M @ M.T / n + np.eye(n)


def _lu_ref(d):
    """The same elimination by numpy, a column at a time."""
    A = d["A"].copy()
    for k in range(A.shape[0]):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return {"A": A}


def _cholesky_ref(d):
    L = np.linalg.cholesky(d["A"])
    A = d["A"].copy()
    low = np.tril(np.ones_like(A, dtype=bool), -1)
    A[low] = L[low]
    return {"A": A, "p": 1.0 / np.diag(L)}


SIZES = {"tiny": dict(n=17), "small": dict(n=200), "medium": dict(n=800), "large": dict(n=1600)}

BENCHES = [
    Bench("lu", lu, lambda n: dict(n=n, A=_spd(n)), SIZES, ("A",), _lu_ref),
    Bench("cholesky", cholesky, lambda n: dict(n=n, A=_spd(n), p=np.zeros(n)), SIZES,
          ("A", "p"), _cholesky_ref),
]
