"""pi by the midpoint rule on 4/(1+x^2): a reduction with no input data."""
import numpy as np

import pygomp as omp

NAME, SIZE = "pi", 1 << 24


@omp.target
def pi(n: int):
    h = 1.0 / n
    s = 0.0
    for i in omp.parallel_range(n, reduction="+:s"):
        x = (i + 0.5) * h
        s += 4.0 / (1.0 + x * x)
    return s * h


def run(device, size):
    return pi.on(device)(size), np.pi


if __name__ == "__main__":
    r, ref = run(None, SIZE)
    print(NAME, r, ref)
