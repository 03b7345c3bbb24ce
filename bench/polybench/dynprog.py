"""Dynamic programming: floyd-warshall and nussinov (by diagonals)."""
import numpy as np

import pygomp as omp

from .harness import Bench


@omp.target
def floyd_warshall(path):
    n = path.shape[0]
    for k in range(n):
        for i in omp.parallel_range(n):
            for j in range(n):
                path[i, j] = min(path[i, j], path[i, k] + path[k, j])


@omp.target
def nussinov(seq, table):
    n = seq.shape[0]
    for d in range(1, n):               # the cells (i, i + d) of a diagonal are independent
        for i in omp.parallel_range(n - d):
            j = i + d
            t = table[i, j]
            if j - 1 >= 0:
                t = max(t, table[i, j - 1])
            if i + 1 < n:
                t = max(t, table[i + 1, j])
            if j - 1 >= 0 and i + 1 < n:
                if i < j - 1:
                    t = max(t, table[i + 1, j - 1] + (seq[i] + seq[j] == 3))
                else:
                    t = max(t, table[i + 1, j - 1])
            for k in range(i + 1, j):
                t = max(t, table[i, k] + table[k + 1, j])
            table[i, j] = t


def _floyd(n):
    i, j = np.ogrid[:n, :n]
    path = (i * j % 7 + 1).astype(np.int32)
    far = ((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0)
    return dict(n=n, path=np.where(far, 999, path).astype(np.int32))


def _nussinov(n):
    return dict(n=n, seq=((np.arange(n) + 1) % 4).astype(np.int32),
                table=np.zeros((n, n), np.int32))


def _floyd_ref(d):
    p = d["path"].copy()
    for k in range(p.shape[0]):
        np.minimum(p, p[:, k:k + 1] + p[k:k + 1, :], out=p)
    return {"path": p}


def _nussinov_ref(d):
    """The original loops, in their order (slow: plain Python)."""
    seq, table = d["seq"], d["table"].copy()
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < n:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < n:
                match = int(seq[i] + seq[j] == 3) if i < j - 1 else 0
                table[i, j] = max(table[i, j], table[i + 1, j - 1] + match)
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
    return {"table": table}


BENCHES = [
    Bench("floyd-warshall", floyd_warshall, _floyd, {"tiny": dict(n=23), "small": dict(n=180),
                                                    "medium": dict(n=700),
                                                    "large": dict(n=1400)},
          ("path",), _floyd_ref),
    Bench("nussinov", nussinov, _nussinov, {"tiny": dict(n=29), "small": dict(n=200),
                                           "medium": dict(n=700), "large": dict(n=1500)},
          ("table",), _nussinov_ref, slow_reference=True),
]
