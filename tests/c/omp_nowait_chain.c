/* OpenMP target nowait tasks ordered by depend over one array: a chain of 100 tasks
   (target regions, updates, enter and exit data) gives the answer of running them in
   order.  Built with gcc -fopenmp; run many times while other processes keep every core
   busy (tests/test_async_order.py). */
#include <stdlib.h>
#include "check.h"

#define N 1024
#define CHAIN 100

static void regions(void)
{
    int *a = calloc(N, sizeof *a);
    #pragma omp parallel
    #pragma omp single
    {
        for (int i = 0; i < CHAIN; i++) {
            #pragma omp target map(tofrom: a[0:N]) nowait depend(inout: a[0])
            for (int j = 0; j < N; j++) a[j] += 1;
        }
        #pragma omp taskwait
    }
    for (int j = 0; j < N; j++)
        CHECK(a[j] == CHAIN);
    free(a);
}

static void data_and_updates(void)
{
    int *a = calloc(N, sizeof *a);
    int firsts[CHAIN];
    #pragma omp parallel
    #pragma omp single
    {
        #pragma omp target enter data map(to: a[0:N]) nowait depend(out: a[0])
        for (int i = 0; i < CHAIN; i++) {
            #pragma omp target nowait depend(inout: a[0]) firstprivate(i)
            for (int j = 0; j < N; j++) a[j] += i;
            #pragma omp target update from(a[0:N]) nowait depend(inout: a[0])
            #pragma omp task depend(inout: a[0]) firstprivate(i) shared(firsts)
            { firsts[i] = a[0]; a[0] += 1; }
            #pragma omp target update to(a[0:1]) nowait depend(inout: a[0])
        }
        #pragma omp target exit data map(from: a[0:N]) nowait depend(inout: a[0])
        #pragma omp taskwait
    }
    for (int i = 0; i < CHAIN; i++)
        CHECK(firsts[i] == i * (i + 1) / 2 + i);
    CHECK(a[0] == CHAIN * (CHAIN - 1) / 2 + CHAIN);
    for (int j = 1; j < N; j++)
        CHECK(a[j] == CHAIN * (CHAIN - 1) / 2);
    free(a);
}

int main(int argc, char **argv)
{
    int times = argc > 1 ? atoi(argv[1]) : 1;
    for (int t = 0; t < times; t++) {
        regions();
        data_and_updates();
    }
    printf("omp_nowait_chain ok\n");
    return failures();
}
