"""A histogram with atomic adds: many iterations update the same bins."""
import numpy as np

import pygomp as omp

NAME, SIZE = "histogram", 1 << 20
BINS = 64


@omp.target(map={"x": "to", "hist": "tofrom"})
def histogram(x, lo: float, hi: float, hist):
    nb = hist.shape[0]
    scale = nb / (hi - lo)
    for i in omp.parallel_range(x.shape[0]):
        if x[i] >= lo and x[i] < hi:
            b = min(int((x[i] - lo) * scale), nb - 1)
            omp.atomic_add(hist, b, 1)


def run(device, size):
    x = np.random.default_rng(3).normal(0.0, 1.0, size)
    hist = np.zeros(BINS, np.int64)
    histogram.on(device)(x, -3.0, 3.0, hist)
    ref, _ = np.histogram(x[(x >= -3.0) & (x < 3.0)], bins=BINS, range=(-3.0, 3.0))
    return hist, ref


if __name__ == "__main__":
    r, ref = run(None, SIZE)
    print(NAME, "ok" if np.array_equal(r, ref) else "WRONG")
