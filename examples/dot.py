"""A dot product: a sum reduction across gangs, workers and vector lanes."""
import numpy as np

import pygomp as omp

NAME, SIZE = "dot", 1 << 22


@omp.target(map={"x": "to", "y": "to"})
def dot(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * y[i]
    return s


def run(device, size):
    rng = np.random.default_rng(1)
    x, y = rng.random(size), rng.random(size)
    return dot.on(device)(x, y), np.dot(x, y)


if __name__ == "__main__":
    r, ref = run(None, SIZE)
    print(NAME, r, ref)
