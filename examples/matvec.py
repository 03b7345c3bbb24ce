"""y = A @ x: rows over gangs, each row's dot product a vector-level reduction."""
import numpy as np

import pygomp as omp

NAME, SIZE = "matvec", 2048


@omp.target(map={"A": "to", "x": "to", "y": "from"})
def matvec(A, x, y):
    for i in omp.gang(A.shape[0]):
        s = 0.0
        for j in omp.vector(A.shape[1], reduction="+:s"):
            s += A[i, j] * x[j]
        y[i] = s


def run(device, size):
    rng = np.random.default_rng(2)
    A = rng.random((size, size))
    x = rng.random(size)
    y = np.zeros(size)
    matvec.on(device)(A, x, y)
    return y, A @ x


if __name__ == "__main__":
    r, ref = run(None, SIZE)
    print(NAME, "ok" if np.allclose(r, ref) else "WRONG")
