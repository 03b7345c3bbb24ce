/* A C program that calls kernels written in Python (kernels.py), through the table in
   kernels_offload.c:

     python -m pygomp build kernels.py -o kernels_offload.c
     gcc -O2 -fopenmp -foffload=disable saxpy.c kernels_offload.c -o saxpy
     PYGOMP_DEVICES=opencl:pocl LD_PRELOAD=$(python -m pygomp shim) ./saxpy

   The kernels run on the default device (OMP_DEFAULT_DEVICE, PYGOMP_DEVICES); inside
   the program's own `target data` region they find their arrays present. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

void saxpy(float a, const float *x, int64_t x_n0, float *y, int64_t y_n0);
double dot(const float *x, int64_t x_n0, const float *y, int64_t y_n0);

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atol(argv[1]) : 1000000;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)(i % 100) / 100.0f;
        y[i] = 1.0f;
    }
    saxpy(2.0f, x, n, y, n);                        /* maps x and y itself */
    #pragma omp target data map(to: x[0:n]) map(tofrom: y[0:n])
    {
        for (int k = 0; k < 3; k++)
            saxpy(0.5f, x, n, y, n);                /* present: nothing is copied */
    }
    double d = dot(x, n, y, n);
    double want = 0, err = 0;
    for (int64_t i = 0; i < n; i++) {
        float xi = (float)(i % 100) / 100.0f, yi = 1.0f + 2.0f * xi;
        for (int k = 0; k < 3; k++)
            yi = 0.5f * xi + yi;
        err = fmax(err, fabs(y[i] - yi));
        want += (double)xi * yi;
    }
    int ok = err < 1e-5 && fabs(d - want) <= 1e-4 * fabs(want);
    printf("saxpy and dot of %ld floats on device %d of %d: %s (max error %.2g, dot %.6g)\n",
           (long)n, omp_get_default_device(), omp_get_num_devices(), ok ? "ok" : "WRONG",
           err, d);
    free(x);
    free(y);
    return !ok;
}
