"""Dense linear algebra: gemm, 2mm, atax, bicg, mvt, gesummv, syrk, doitgen."""
import numpy as np

import pygomp as omp

from .harness import Bench


def _mat(n, m, a=1, b=1):
    """A deterministic n x m matrix with entries in [0, 1)."""
    i, j = np.ogrid[:n, :m]
    return ((i * a + j * b + 1) % (n + m + 7)) / (n + m + 7)


def _vec(n, a=1):
    return ((np.arange(n) * a + 3) % (n + 5)) / (n + 5)


@omp.target
def gemm(alpha: float, beta: float, C, A, B):
    ni, nj, nk = C.shape[0], C.shape[1], A.shape[1]
    for i in omp.parallel_range(ni):
        for j in range(nj):
            C[i][j] *= beta
        for k in range(nk):
            for j in range(nj):
                C[i][j] += alpha * A[i][k] * B[k][j]


@omp.target
def k2mm(alpha: float, beta: float, tmp, A, B, C, D):
    ni, nj, nk, nl = A.shape[0], B.shape[1], A.shape[1], C.shape[1]
    for i in omp.parallel_range(ni):
        for j in range(nj):
            tmp[i][j] = 0.0
            for k in range(nk):
                tmp[i][j] += alpha * A[i][k] * B[k][j]
    for i in omp.parallel_range(ni):
        for j in range(nl):
            D[i][j] *= beta
            for k in range(nj):
                D[i][j] += tmp[i][k] * C[k][j]


@omp.target
def atax(A, x, y, tmp):
    m, n = A.shape[0], A.shape[1]
    for j in omp.parallel_range(n):
        y[j] = 0.0
    for i in omp.parallel_range(m, reduction="+:y"):
        tmp[i] = 0.0
        for j in range(n):
            tmp[i] += A[i][j] * x[j]
        for j in range(n):
            y[j] += A[i][j] * tmp[i]


@omp.target
def bicg(A, s, q, p, r):
    n, m = A.shape[0], A.shape[1]
    for j in omp.parallel_range(m):
        s[j] = 0.0
    for i in omp.parallel_range(n, reduction="+:s"):
        q[i] = 0.0
        for j in range(m):
            s[j] += r[i] * A[i][j]
            q[i] += A[i][j] * p[j]


@omp.target
def mvt(x1, x2, y_1, y_2, A):
    n = A.shape[0]
    for i in omp.parallel_range(n):
        for j in range(n):
            x1[i] += A[i, j] * y_1[j]
    for i in omp.parallel_range(n):
        for j in range(n):
            x2[i] += A[j, i] * y_2[j]


@omp.target
def gesummv(alpha: float, beta: float, A, B, tmp, x, y):
    n = A.shape[0]
    for i in omp.parallel_range(n):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(n):
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]


@omp.target
def syrk(alpha: float, beta: float, C, A):
    n, m = A.shape[0], A.shape[1]
    for i in omp.parallel_range(n, collapse=2):
        for j in range(i + 1):
            C[i][j] *= beta
            for k in range(m):
                C[i][j] += alpha * A[i][k] * A[j][k]


@omp.target
def doitgen(A, C4):
    nr, nq, np_ = A.shape[0], A.shape[1], A.shape[2]
    for r in omp.parallel_range(nr, collapse=2):
        for q in range(nq):
            acc = np.zeros(np_)
            for p in range(np_):
                for s in range(np_):
                    acc[p] += A[r][q][s] * C4[s][p]
            for p in range(np_):
                A[r][q][p] = acc[p]


def _gemm(ni, nj, nk):
    return dict(ni=ni, nj=nj, nk=nk, alpha=1.5, beta=1.2, C=_mat(ni, nj, 3, 1),
                A=_mat(ni, nk, 1, 2), B=_mat(nk, nj, 2, 3))


def _2mm(ni, nj, nk, nl):
    return dict(ni=ni, nj=nj, nk=nk, nl=nl, alpha=1.5, beta=1.2, tmp=np.zeros((ni, nj)),
                A=_mat(ni, nk, 1, 1), B=_mat(nk, nj, 1, 2), C=_mat(nj, nl, 3, 1),
                D=_mat(ni, nl, 2, 1))


def _atax(m, n):
    return dict(m=m, n=n, A=_mat(m, n, 1, 3), x=_vec(n), y=np.zeros(n), tmp=np.zeros(m))


def _bicg(n, m):
    return dict(n=n, m=m, A=_mat(n, m, 2, 1), s=np.zeros(m), q=np.zeros(n),
                p=_vec(m, 1), r=_vec(n, 2))


def _mvt(n):
    return dict(n=n, x1=_vec(n, 1), x2=_vec(n, 2), y_1=_vec(n, 3), y_2=_vec(n, 4),
                A=_mat(n, n, 1, 2))


def _gesummv(n):
    return dict(n=n, alpha=1.5, beta=1.2, A=_mat(n, n, 1, 1), B=_mat(n, n, 2, 1),
                tmp=np.zeros(n), x=_vec(n), y=np.zeros(n))


def _syrk(n, m):
    return dict(n=n, m=m, alpha=1.5, beta=1.2, C=_mat(n, n, 1, 2), A=_mat(n, m, 3, 1))


def _doitgen(nr, nq, np_):
    A = _mat(nr * nq, np_, 1, 1).reshape(nr, nq, np_)
    return dict(nr=nr, nq=nq, np_=np_, A=A, C4=_mat(np_, np_, 1, 3))


def _syrk_ref(d):
    C = d["C"].copy()
    low = np.tril(np.ones_like(C, dtype=bool))
    C[low] = (d["alpha"] * d["A"] @ d["A"].T + d["beta"] * d["C"])[low]
    return {"C": C}


BENCHES = [
    Bench("gemm", gemm, _gemm, {"tiny": dict(ni=13, nj=17, nk=11),
                                "small": dict(ni=200, nj=220, nk=240),
                                "medium": dict(ni=600, nj=700, nk=800),
                                "large": dict(ni=1000, nj=1100, nk=1200)},
          ("C",), lambda d: {"C": d["alpha"] * d["A"] @ d["B"] + d["beta"] * d["C"]}),
    Bench("2mm", k2mm, _2mm, {"tiny": dict(ni=9, nj=12, nk=11, nl=13),
                              "small": dict(ni=180, nj=190, nk=210, nl=220),
                              "medium": dict(ni=400, nj=450, nk=500, nl=550),
                              "large": dict(ni=800, nj=900, nk=1100, nl=1200)},
          ("tmp", "D"), lambda d: {"tmp": d["alpha"] * d["A"] @ d["B"],
                                   "D": d["alpha"] * d["A"] @ d["B"] @ d["C"]
                                   + d["beta"] * d["D"]}, c_name="k2mm"),
    Bench("atax", atax, _atax, {"tiny": dict(m=19, n=23), "small": dict(m=390, n=410),
                                "medium": dict(m=1900, n=2100), "large": dict(m=3800, n=4200)},
          ("y", "tmp"), lambda d: {"y": d["A"].T @ (d["A"] @ d["x"]), "tmp": d["A"] @ d["x"]}),
    Bench("bicg", bicg, _bicg, {"tiny": dict(n=23, m=19), "small": dict(n=410, m=390),
                                "medium": dict(n=2100, m=1900), "large": dict(n=4200, m=3800)},
          ("s", "q"), lambda d: {"s": d["A"].T @ d["r"], "q": d["A"] @ d["p"]}),
    Bench("mvt", mvt, _mvt, {"tiny": dict(n=21), "small": dict(n=400),
                             "medium": dict(n=2000), "large": dict(n=4000)},
          ("x1", "x2"), lambda d: {"x1": d["x1"] + d["A"] @ d["y_1"],
                                   "x2": d["x2"] + d["A"].T @ d["y_2"]}),
    Bench("gesummv", gesummv, _gesummv, {"tiny": dict(n=25), "small": dict(n=250),
                                         "medium": dict(n=1300), "large": dict(n=2800)},
          ("y",), lambda d: {"y": d["alpha"] * d["A"] @ d["x"] + d["beta"] * d["B"] @ d["x"]}),
    Bench("syrk", syrk, _syrk, {"tiny": dict(n=15, m=12), "small": dict(n=240, m=200),
                                "medium": dict(n=800, m=700), "large": dict(n=1200, m=1000)},
          ("C",), _syrk_ref),
    Bench("doitgen", doitgen, _doitgen, {"tiny": dict(nr=5, nq=6, np_=7),
                                         "small": dict(nr=25, nq=20, np_=30),
                                         "medium": dict(nr=60, nq=70, np_=128),
                                         "large": dict(nr=150, nq=140, np_=160)},
          ("A",), lambda d: {"A": np.einsum("rqs,sp->rqp", d["A"], d["C4"])}),
]
