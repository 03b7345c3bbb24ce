"""Kernels over an array of C structs (a numpy structured dtype) for particles.c.

    python -m pygomp build particles.py -o particles_offload.c

writes `void push(struct particle *p, int64_t p_n0, double dt)` and
`double kinetic(const struct particle *p, int64_t p_n0)`: `particle` below is the
layout of particles.c's struct (numpy's offsets are C's: align=True).
"""
import numpy as np

import pygomp as omp

particle = np.dtype([("x", np.float64, (3,)), ("v", np.float64, (3,)),
                     ("m", np.float32), ("id", np.int32)], align=True)


@omp.target(map={"p": "tofrom"})
def push(p: "particle[:]", dt: float):
    for i in omp.parallel_range(p.shape[0]):
        for k in range(3):
            p[i]["v"][k] -= dt * p[i]["x"][k] / p[i]["m"]    # a spring to the origin
            p[i]["x"][k] += dt * p[i]["v"][k]


@omp.target(map={"p": "to"})
def kinetic(p: "particle[:]"):
    e = 0.0
    for i in omp.parallel_range(p.shape[0], reduction="+:e"):
        v = p[i]["v"]
        e += 0.5 * p[i]["m"] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return e
