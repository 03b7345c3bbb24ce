"""A tiled transpose through a team-shared tile: a gang loads a TILE x TILE block with
its workers, waits at a barrier, and writes it back transposed."""
import numpy as np

import pygomp as omp

NAME, SIZE = "transpose", 2048
TILE = 32


@omp.target(map={"a": "to", "b": "from"})
def transpose(a, b):
    n, m = a.shape[0], a.shape[1]
    tn = (n + TILE - 1) // TILE
    tm = (m + TILE - 1) // TILE
    for t in omp.gang(tn * tm):
        i0 = (t // tm) * TILE
        j0 = (t % tm) * TILE
        tile = omp.shared_array((TILE, TILE + 1), np.float32)
        for r in omp.worker(TILE):
            for c in omp.vector(TILE):
                if i0 + r < n and j0 + c < m:
                    tile[r, c] = a[i0 + r, j0 + c]
        omp.barrier()
        for c in omp.worker(TILE):
            for r in omp.vector(TILE):
                if i0 + r < n and j0 + c < m:
                    b[j0 + c, i0 + r] = tile[r, c]


def run(device, size):
    a = np.random.default_rng(4).random((size, size + 3), dtype=np.float32)
    b = np.zeros((size + 3, size), np.float32)
    transpose.on(device)(a, b)
    return b, a.T


if __name__ == "__main__":
    r, ref = run(None, SIZE)
    print(NAME, "ok" if np.array_equal(r, ref) else "WRONG")
