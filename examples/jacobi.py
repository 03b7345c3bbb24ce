"""2-D Jacobi iterations on a square grid (5-point stencil), with the largest update
as a max reduction; the grids stay on the device across iterations (target_data)."""
import numpy as np

import pygomp as omp

NAME, SIZE = "jacobi", 1024
STEPS = 20


@omp.target
def sweep(u, v):
    n, m = u.shape[0], u.shape[1]
    err = 0.0
    for i in omp.gang(1, n - 1, reduction="max:err"):
        for j in omp.vector(1, m - 1, reduction="max:err"):
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
            err = max(err, abs(v[i, j] - u[i, j]))
    return err


def reference(u, steps):
    u = u.copy()
    v = u.copy()
    for _ in range(steps):
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u, v = v, u
    return u


def grid(size):
    u = np.zeros((size, size))
    u[0, :] = 1.0
    u[:, 0] = 0.5
    return u


def run(device, size, steps=STEPS):
    u = grid(size)
    v = u.copy()
    ref = reference(u, steps)
    k = sweep.on(device)
    with omp.target_data(device, tofrom=[u, v]):
        for _ in range(steps):
            k(u, v)
            u, v = v, u
    return u, ref


if __name__ == "__main__":
    r, ref = run(None, SIZE)
    print(NAME, "ok" if np.allclose(r, ref) else "WRONG")
