"""y = a*x + y over all three levels (teams distribute parallel for simd)."""
import numpy as np

import pygomp as omp

NAME, SIZE = "saxpy", 1 << 22


@omp.target(map={"x": "to", "y": "tofrom"})
def saxpy(a: float, x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def run(device, size):
    rng = np.random.default_rng(0)
    x = rng.random(size, dtype=np.float32)
    y = rng.random(size, dtype=np.float32)
    ref = np.float32(2.5) * x + y
    saxpy.on(device)(2.5, x, y)
    return y, ref


if __name__ == "__main__":
    r, ref = run(None, SIZE)
    print(NAME, "ok" if np.allclose(r, ref) else "WRONG")
