/* OpenMP target regions for GCC's nvptx offload images (tests/test_nvptx_images.py,
   bench/gpu_check.sh).  Built with -foffload=nvptx-none; every value is checked, under
   libgomp, under the shim's host fallback and on a GPU.  Prints one line per region. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100000

#pragma omp declare target
int counter = 5;
double table[16];
static double twice(double v) { return 2 * v; }
#pragma omp end declare target

static int failures;

static void check(const char *what, int ok)
{
    printf("%s %s\n", ok ? "ok" : "FAILED", what);
    failures += !ok;
}

int main(void)
{
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++) {
        x[i] = i;
        y[i] = 1;
    }

    #pragma omp target teams distribute parallel for map(to: x[0:N]) map(tofrom: y[0:N])
    for (int i = 0; i < N; i++)
        y[i] += 2.0f * x[i];
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != 1 + 2.0f * i;
    check("saxpy", !bad);

    double sum = 0;
    #pragma omp target teams distribute parallel for reduction(+: sum) map(to: x[0:N])
    for (int i = 0; i < N; i++)
        sum += x[i];
    check("reduction", sum == (double)N * (N - 1) / 2);

    #pragma omp target
    {
        counter += 1;
        for (int i = 0; i < 16; i++)
            table[i] = twice(i);
    }
    #pragma omp target update from(counter, table)
    bad = counter != 6;
    for (int i = 0; i < 16; i++)
        bad += table[i] != 2 * i;
    check("declare target variables", !bad);
    if (bad)
        printf("  counter %d table[1] %g (want 6 and 2)\n", counter, table[1]);

    int teams = 0, threads = 0;
    #pragma omp target teams num_teams(4) map(tofrom: teams, threads)
    {
        #pragma omp parallel
        if (omp_get_team_num() == 0 && omp_get_thread_num() == 0) {
            teams = omp_get_num_teams();
            threads = omp_get_num_threads();
        }
    }
    check("teams and threads", teams >= 1 && teams <= 4 && threads >= 1);

    #pragma omp target data map(tofrom: y[0:N])
    {
        #pragma omp target nowait map(to: x[0:N])
        for (int i = 0; i < N; i++)
            y[i] = x[i];
        #pragma omp taskwait
        #pragma omp target
        for (int i = 0; i < N; i++)
            y[i] += 1;
    }
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != i + 1;
    check("nowait in a data region", !bad);
    if (bad)
        printf("  y[0] %g y[%d] %g (want 1 and %d)\n", y[0], N - 1, y[N - 1], N);

    int empty = 0;
    #pragma omp target map(tofrom: empty)
    empty = 1;
    check("a region with one scalar", empty == 1);

    free(x);
    free(y);
    printf("%d failed\n", failures);
    return failures != 0;
}
