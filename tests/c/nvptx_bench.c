/* The cost of an empty target region and of a saxpy of 2^28 floats (data resident in a
   target data region), for bench/gpu_check.sh: run under libgomp with its nvptx plugin
   and under the shim on the CUDA plugin, the same binary.  Prints "empty_us X" and
   "saxpy_ms Y" (best of the repeats) and checks the result. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1L << 28;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), a = 2.0f;
    if (!x || !y)
        return 2;
    for (long i = 0; i < n; i++) {
        x[i] = i % 1000;
        y[i] = 1;
    }
    #pragma omp target          /* the device starts and the image loads before timing */
    ;
    double best = 1e30;
    for (int r = 0; r < 1000; r++) {
        double t = omp_get_wtime();
        #pragma omp target
        ;
        t = omp_get_wtime() - t;
        best = t < best ? t : best;
    }
    printf("empty_us %.2f\n", best * 1e6);
    best = 1e30;
    #pragma omp target data map(to: x[0:n]) map(tofrom: y[0:n])
    for (int r = 0; r < reps; r++) {
        double t = omp_get_wtime();
        #pragma omp target teams distribute parallel for
        for (long i = 0; i < n; i++)
            y[i] += a * x[i];
        t = omp_get_wtime() - t;
        best = t < best ? t : best;
    }
    printf("saxpy_ms %.3f\n", best * 1e3);
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += y[i] != 1 + reps * a * (i % 1000);
    printf("%s saxpy values (%ld wrong)\n", bad ? "FAILED" : "ok", bad);
    free(x);
    free(y);
    return bad != 0;
}
