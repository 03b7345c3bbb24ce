/* OpenMP target regions whose host code stands in for the device (gcc -foffload=disable
   gives no image): on the host device and on OpenCL they must see and leave the data
   as a region on a device with memory of its own does.  Every check holds on both. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define N 64

static void target_data_is_not_copied_back_stale(void)
{
    int a[N];
    for (int i = 0; i < N; i++) a[i] = 1;
    #pragma omp target data map(tofrom: a)
    {
        #pragma omp target
        a[0] = 5;
        CHECK(a[0] == 1);                       /* the device's copy changed, not the host's */
        #pragma omp target map(tofrom: a)       /* present: nothing copied either way */
        a[1] = a[0] + 1;
        CHECK(a[1] == 1);
    }
    CHECK(a[0] == 5 && a[1] == 6 && a[2] == 1);
}

static void enter_data_keeps_the_device_copy(void)
{
    int a[N], seen = 0;
    for (int i = 0; i < N; i++) a[i] = i;
    #pragma omp target enter data map(to: a)
    a[3] = -3;                                  /* the host's copy only */
    #pragma omp target map(from: seen)
    { seen = a[3]; a[4] = 40; }
    CHECK(seen == 3 && a[4] == 4);
    #pragma omp target update from(a[4:1])
    CHECK(a[4] == 40 && a[3] == -3);
    #pragma omp target exit data map(from: a)
    CHECK(a[3] == 3 && a[4] == 40 && a[N - 1] == N - 1);
}

static void firstprivate_and_new_maps(void)
{
    int a[N], b[N], n = 7;
    for (int i = 0; i < N; i++) { a[i] = i; b[i] = 0; }
    #pragma omp target map(to: a) map(from: b) firstprivate(n)
    for (int i = 0; i < N; i++) { b[i] = a[i] * n; a[i] = -1; n += 0; }
    for (int i = 0; i < N; i++)
        CHECK(b[i] == 7 * i && a[i] == i);     /* to: the device's write stays there */
}

struct S { int n; double *p; };

static void attached_pointers_reach_the_device_copy(void)
{
    double x[8];
    for (int i = 0; i < 8; i++) x[i] = i;
    struct S s = {8, x};
    #pragma omp target enter data map(to: s, x)
    #pragma omp target map(to: s.p[0:8])         /* attaches s.p to the device's x */
    for (int i = 0; i < s.n; i++) s.p[i] *= 2;
    CHECK(x[3] == 3);
    #pragma omp target exit data map(from: x) map(release: s)
    CHECK(x[3] == 6 && x[7] == 14 && s.p == x);
}

static void device_pointers(void)
{
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    int h[N];
    double *p = omp_target_alloc(N * sizeof(double), dev);
    CHECK(p != NULL);
    #pragma omp target is_device_ptr(p)
    for (int i = 0; i < N; i++) p[i] = i + 0.5;
    double back[N];
    CHECK(omp_target_memcpy(back, p, sizeof back, 0, 0, host, dev) == 0);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == i + 0.5);
    for (int i = 0; i < N; i++) h[i] = i;
    #pragma omp target data map(tofrom: h)
    {
        #pragma omp target data use_device_addr(h)
        {
            #pragma omp target has_device_addr(h)
            h[2] = 200;
        }
        CHECK(h[2] == 2);
    }
    CHECK(h[2] == 200 && h[3] == 3);
    omp_target_free(p, dev);
}

static void concurrent_regions_write_parts_of_one_block(void)
{
    int a[N];
    for (int i = 0; i < N; i++) a[i] = 0;
    #pragma omp target enter data map(to: a)
    #pragma omp parallel num_threads(4)
    #pragma omp single
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < N; i++) {
            #pragma omp target nowait firstprivate(i) depend(inout: a[i])
            a[i] += 1;
        }
    #pragma omp target exit data map(from: a)
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 20);
}

static void nowait_takes_its_scalars_at_the_construct(void)
{
    int a[N];
    for (int i = 0; i < N; i++) a[i] = -1;
    #pragma omp target enter data map(to: a)
    for (int i = 0; i < N; i++) {
        int x = 3 * i;
        #pragma omp target nowait depend(out: a[i])
        a[i] = x + i;
        x = -7;
    }
    #pragma omp taskwait
    #pragma omp target exit data map(from: a)
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 4 * i);
}

static const struct { const char *name; void (*run)(void); } parts[] = {
    {"target_data", target_data_is_not_copied_back_stale},
    {"enter_data", enter_data_keeps_the_device_copy},
    {"firstprivate", firstprivate_and_new_maps},
    {"attach", attached_pointers_reach_the_device_copy},
    {"device_pointers", device_pointers},
    {"concurrent", concurrent_regions_write_parts_of_one_block},
    {"nowait", nowait_takes_its_scalars_at_the_construct},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (argc < 2 || !strcmp(argv[1], parts[i].name))
            parts[i].run();
    printf("fallback ok\n");
    return failures();
}
