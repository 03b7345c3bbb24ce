/* nowait and depend: target tasks run in the order of their dependences, and a
   deferred region keeps the firstprivate values of its launch.  (A scalar that a
   region uses without a map clause is firstprivate: the maps here say tofrom.) */
#include <unistd.h>
#include "check.h"

static void chain(void)
{
    int x = 1, host_seen = 0;
    #pragma omp target enter data map(to: x)
    #pragma omp parallel num_threads(4)
    #pragma omp single
    {
        #pragma omp target nowait depend(inout: x) map(tofrom: x)     /* present */
        { usleep(20000); x = x * 2; }
        #pragma omp target nowait depend(inout: x) map(tofrom: x)
        x = x + 3;
        #pragma omp target update from(x) nowait depend(inout: x)
        #pragma omp task depend(inout: x) shared(host_seen)
        host_seen = x;                       /* the value the update brought: 5 */
        #pragma omp target nowait depend(inout: x) map(tofrom: x)
        x = x * 5;
        #pragma omp taskwait
    }
    CHECK(host_seen == 5);
    CHECK(x == 5);
    #pragma omp target exit data map(from: x)
    CHECK(x == 25);
}

static void waits_for_a_host_task(void)
{
    int y = 0, z = -1;
    #pragma omp target enter data map(alloc: y)
    #pragma omp parallel num_threads(2)
    #pragma omp single
    {
        #pragma omp task depend(out: y) shared(y)
        {
            usleep(30000);
            y = 7;
            #pragma omp target update to(y)
        }
        #pragma omp target depend(in: y) map(alloc: y) map(from: z)   /* waits */
        z = y;
    }
    CHECK(z == 7);
    #pragma omp target exit data map(delete: y)
}

static void independent_regions_and_firstprivate(void)
{
    enum { N = 8, LEN = 1000 };
    static double a[N][LEN];
    int v = 1, seen[N];
    #pragma omp parallel num_threads(4)
    #pragma omp single
    {
        for (int t = 0; t < N; t++) {
            #pragma omp target nowait map(tofrom: a[t][0:LEN]) map(from: seen[t:1]) firstprivate(v)
            {
                seen[t] = v;
                for (int i = 0; i < LEN; i++) a[t][i] = t + i;
            }
            v++;                     /* after the launch: the region keeps its copy */
        }
        #pragma omp taskwait
    }
    for (int t = 0; t < N; t++) {
        CHECK(seen[t] == t + 1);
        CHECK(a[t][0] == t && a[t][LEN - 1] == t + LEN - 1);
    }
}

static void nowait_outside_parallel(void)
{
    int r = 0;
    #pragma omp target nowait map(tofrom: r)
    r = 42;
    #pragma omp taskwait
    CHECK(r == 42);
}

int main(void)
{
    chain();
    waits_for_a_host_task();
    independent_regions_and_firstprivate();
    nowait_outside_parallel();
    return failures();
}
