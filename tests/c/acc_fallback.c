/* OpenACC compute regions whose host code stands in for the device (gcc
   -foffload=disable gives no image): on the host device and on OpenCL they must see and
   leave the data as a region on a device with memory of its own does.  With an argument,
   one part runs ("deviceptr_unknown" is an error on OpenCL). */
#include <openacc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define N 64

static void map_data_blocks_are_the_device_copy(void)
{
    int a[N], back[N];
    for (int i = 0; i < N; i++) a[i] = i;
    int *d = acc_malloc(sizeof a);
    acc_map_data(a, d, sizeof a);
    acc_memcpy_to_device(d, a, sizeof a);
    a[0] = -1;                                  /* the host's copy only */
    #pragma acc parallel loop present(a)
    for (int i = 0; i < N; i++) a[i] += 10;
    CHECK(a[0] == -1 && a[1] == 1 && a[N - 1] == N - 1);
    acc_memcpy_from_device(back, d, sizeof back);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == i + 10);
    #pragma acc update self(a)
    CHECK(a[0] == 10 && a[N - 1] == N + 9);
    acc_unmap_data(a);
    acc_free(d);
}

static void deviceptr_of_acc_malloc(void)
{
    int back[N], n = 3;
    int *d = acc_malloc(N * sizeof(int));
    #pragma acc parallel loop deviceptr(d) firstprivate(n)
    for (int i = 0; i < N; i++) d[i] = i * n;
    acc_memcpy_from_device(back, d, sizeof back);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == 3 * i);
    acc_free(d);
}

static void deviceptr_unknown(void)
{
    int *p = malloc(N * sizeof(int));          /* host memory, not the device's */
    printf("%p\n", (void *)p);
    fflush(stdout);
    #pragma acc parallel deviceptr(p)
    p[0] = 1;
    free(p);
}

static volatile int go;

/* A region on queue q that waits for the host's go (gp: go's host address, a scalar). */
static void blocked_region(int q)
{
    uintptr_t gp = (uintptr_t)&go;
    #pragma acc parallel async(q) firstprivate(gp)
    {
        while (!*(volatile int *)gp)
            ;
    }
}

static void two_queues_write_two_halves(void)
{
    int a[N];
    for (int i = 0; i < N; i++) a[i] = 0;
    #pragma acc enter data copyin(a)
    for (int round = 0; round < 3; round++) {
        go = 0;
        uintptr_t gp = (uintptr_t)&go;
        #pragma acc parallel present(a) async(1) firstprivate(gp)
        {                                       /* reads a before queue 2 writes ... */
            while (!*(volatile int *)gp)
                ;
            for (int i = 0; i < N / 2; i++) a[i] += 1;
        }                                       /* ... and ends after it */
        #pragma acc parallel loop present(a) async(2)
        for (int i = N / 2; i < N; i++) a[i] += 1;
        acc_wait(2);
        go = 1;
        acc_wait(1);
    }
    #pragma acc exit data copyout(a)
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 3);
}

static void async_regions_leave_the_host_copy_alone(void)
{
    int h[N];
    for (int i = 0; i < N; i++) h[i] = i;
    #pragma acc enter data copyin(h)
    for (int i = 0; i < N; i++) h[i] = 1000 + i;  /* the host's copy only */
    volatile int started = 0;
    uintptr_t sp = (uintptr_t)&started;
    go = 0;
    uintptr_t gp = (uintptr_t)&go;
    #pragma acc parallel present(h) async(1) firstprivate(sp, gp)
    {
        *(volatile int *)sp = 1;
        while (!*(volatile int *)gp)
            ;
        h[0] = 100;
    }
    while (!started)
        ;
    CHECK(h[2] == 1002);                        /* while it runs, too */
    h[1] = -1;
    go = 1;
    acc_wait(1);
    CHECK(h[0] == 1000 && h[1] == -1 && h[2] == 1002);
    #pragma acc update self(h)
    CHECK(h[0] == 100 && h[1] == 1 && h[2] == 2);
    #pragma acc exit data delete(h)
}

static const struct { const char *name; void (*run)(void); } parts[] = {
    {"map_data", map_data_blocks_are_the_device_copy},
    {"deviceptr", deviceptr_of_acc_malloc},
    {"two_queues", two_queues_write_two_halves},
    {"host_copy", async_regions_leave_the_host_copy_alone},
};

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "deviceptr_unknown")) {
        deviceptr_unknown();
        return failures();
    }
    (void)blocked_region;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (argc < 2 || !strcmp(argv[1], parts[i].name))
            parts[i].run();
    printf("acc_fallback ok\n");
    return failures();
}
