/* OpenACC compute regions for GCC's nvptx offload images (tests/test_nvptx_images.py,
   bench/gpu_check.sh); every value is checked.  Prints one line per region. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100000

float g[64];
#pragma acc declare create(g)

static int failures;

static void check(const char *what, int ok)
{
    printf("%s %s\n", ok ? "ok" : "FAILED", what);
    failures += !ok;
}

int main(void)
{
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++)
        x[i] = i;

    #pragma acc parallel loop num_gangs(8) vector_length(64) copy(x[0:N])
    for (int i = 0; i < N; i++)
        x[i] *= 2;
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += x[i] != 2.0f * i;
    check("gang vector loop", !bad);

    double sum = 0;
    #pragma acc parallel loop gang worker vector reduction(+: sum) copyin(x[0:N])
    for (int i = 0; i < N; i++)
        sum += x[i];
    check("reduction", sum == (double)N * (N - 1));

    #pragma acc kernels copy(x[0:N])
    for (int i = 0; i < N; i++)
        x[i] += 1;
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += x[i] != 2.0f * i + 1;
    check("kernels", !bad);

    #pragma acc parallel loop present(g)
    for (int i = 0; i < 64; i++)
        g[i] = 3 * i;
    #pragma acc update self(g)
    bad = 0;
    for (int i = 0; i < 64; i++)
        bad += g[i] != 3 * i;
    check("declare create", !bad);
    if (bad)
        printf("  g[1] %g g[63] %g (want 3 and 189)\n", g[1], g[63]);

    #pragma acc data copy(x[0:N])
    {
        #pragma acc parallel loop async(1)
        for (int i = 0; i < N; i++)
            x[i] = i;
        #pragma acc parallel loop async(1)
        for (int i = 0; i < N; i++)
            x[i] += 5;
        #pragma acc wait(1)
    }
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += x[i] != i + 5.0f;
    check("async queue", !bad);

    free(x);
    printf("%d failed\n", failures);
    return failures != 0;
}
