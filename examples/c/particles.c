/* A C program whose particles are an array of structs, moved by kernels written in
   Python (particles.py), through the table in particles_offload.c:

     python -m pygomp build particles.py -o particles_offload.c
     gcc -O2 -fopenmp -foffload=disable particles.c particles_offload.c -o particles -lm
     PYGOMP_DEVICES=opencl:pocl LD_PRELOAD=$(python -m pygomp shim) ./particles

   The struct is the numpy dtype `particle` of particles.py: the same fields, at the
   same offsets (the generated file declares it too, as pyg_rec_...). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

struct particle {
    double x[3];
    double v[3];
    float m;
    int32_t id;
};

void push(struct particle *p, int64_t p_n0, double dt);
double kinetic(const struct particle *p, int64_t p_n0);

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atol(argv[1]) : 100000;
    int steps = 4;
    double dt = 0.01;
    struct particle *p = malloc(n * sizeof *p), *q = malloc(n * sizeof *q);
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            p[i].x[k] = (double)((i * 7 + k) % 13) / 13.0 - 0.5;
            p[i].v[k] = (double)((i * 3 + k) % 11) / 11.0 - 0.5;
        }
        p[i].m = 1.0f + (float)(i % 5);
        p[i].id = (int32_t)i;
        q[i] = p[i];
    }
    #pragma omp target data map(tofrom: p[0:n])
    {
        for (int s = 0; s < steps; s++)
            push(p, n, dt);                         /* present: nothing is copied */
    }
    double e = kinetic(p, n);
    double err = 0, want = 0;                       /* the same steps here */
    for (int64_t i = 0; i < n; i++) {
        for (int s = 0; s < steps; s++)
            for (int k = 0; k < 3; k++) {
                q[i].v[k] -= dt * q[i].x[k] / q[i].m;
                q[i].x[k] += dt * q[i].v[k];
            }
        for (int k = 0; k < 3; k++) {
            err = fmax(err, fabs(p[i].x[k] - q[i].x[k]) + fabs(p[i].v[k] - q[i].v[k]));
            want += 0.5 * q[i].m * q[i].v[k] * q[i].v[k];
        }
        if (p[i].id != q[i].id || p[i].m != q[i].m)
            err = INFINITY;
    }
    int ok = err < 1e-12 && fabs(e - want) <= 1e-9 * fabs(want);
    printf("%d steps of %ld particles (%zu-byte structs) on device %d of %d: %s "
           "(max error %.2g, kinetic energy %.9g)\n", steps, (long)n, sizeof *p,
           omp_get_default_device(), omp_get_num_devices(), ok ? "ok" : "WRONG", err, e);
    free(p);
    free(q);
    return !ok;
}
