"""Data mining: covariance and correlation of the columns of a data matrix."""
import math

import numpy as np

import pygomp as omp

from .harness import Bench


@omp.target
def covariance(data, cov, mean):
    n, m = data.shape[0], data.shape[1]
    for j in omp.parallel_range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= n
    for i in omp.parallel_range(n):
        for j in range(m):
            data[i, j] -= mean[j]
    for i in omp.parallel_range(m):
        for j in range(i, m):
            cov[i, j] = 0.0
            for k in range(n):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= n - 1.0
            cov[j, i] = cov[i, j]


@omp.target
def correlation(data, corr, mean, stddev):
    n, m = data.shape[0], data.shape[1]
    eps = 0.1
    for j in omp.parallel_range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= n
    for j in omp.parallel_range(m):
        stddev[j] = 0.0
        for i in range(n):
            stddev[j] += (data[i, j] - mean[j]) * (data[i, j] - mean[j])
        stddev[j] /= n
        stddev[j] = math.sqrt(stddev[j])
        stddev[j] = 1.0 if stddev[j] <= eps else stddev[j]
    for i in omp.parallel_range(n):
        for j in range(m):
            data[i, j] -= mean[j]
            data[i, j] /= math.sqrt(n) * stddev[j]
    for i in omp.parallel_range(m - 1):
        corr[i, i] = 1.0
        for j in range(i + 1, m):
            corr[i, j] = 0.0
            for k in range(n):
                corr[i, j] += data[k, i] * data[k, j]
            corr[j, i] = corr[i, j]
    corr[m - 1, m - 1] = 1.0


def _data(n, m):
    i, j = np.ogrid[:n, :m]
    return ((i * 13 + j * 7) % 101 + (i * j) % 37) / 137.0


def _cov(m, n):
    return dict(m=m, n=n, float_n=float(n), data=_data(n, m), cov=np.zeros((m, m)),
                mean=np.zeros(m))


def _corr(m, n):
    return dict(m=m, n=n, float_n=float(n), data=_data(n, m), corr=np.zeros((m, m)),
                mean=np.zeros(m), stddev=np.zeros(m))


SIZES = {"tiny": dict(m=14, n=17), "small": dict(m=160, n=200),
         "medium": dict(m=500, n=600), "large": dict(m=1200, n=1400)}

BENCHES = [
    Bench("covariance", covariance, _cov, SIZES, ("cov", "mean"),
          lambda d: {"cov": np.cov(d["data"], rowvar=False), "mean": d["data"].mean(0)}),
    Bench("correlation", correlation, _corr, SIZES, ("corr", "mean", "stddev"),
          lambda d: {"corr": np.corrcoef(d["data"], rowvar=False), "mean": d["data"].mean(0),
                     "stddev": d["data"].std(0)}),
]
