"""Kernels written in Python for the C program saxpy.c.

    python -m pygomp build kernels.py -o kernels_offload.c

writes the C entry points `void saxpy(float a, const float *x, int64_t x_n0, float *y,
int64_t y_n0)` and `double dot(const float *x, int64_t x_n0, const float *y, int64_t y_n0)`
with their host code and an image for each device, registered when the program starts.
"""
import numpy as np

import pygomp as omp


@omp.target(map={"x": "to", "y": "tofrom"})
def saxpy(a: np.float32, x: "float32[:]", y: "float32[:]"):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@omp.target(map={"x": "to", "y": "to"})
def dot(x: "float32[:]", y: "float32[:]"):
    s = np.float64(0.0)         # a float64 sum (0.0 alone would be float32: NEP 50)
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * y[i]
    return s
