/* OpenACC async queues keep program order: each pattern gives the answer of running
   every construct when it is reached.  A copy in sees the copies out queued before it
   (on its queue and, where they touch the same host memory, on others); firstprivate
   values are the ones of the construct's iteration.  Built with gcc -fopenacc; run many
   times while other processes keep every core busy (tests/test_async_order.py). */
#include <openacc.h>
#include <stdlib.h>
#include "check.h"

#define N 1024
#define ROUNDS 99

/* The loop: consecutive copy constructs on one queue. */
static void copy_loop_one_queue(void)
{
    int *a = calloc(N, sizeof *a);
    for (int i = 0; i < ROUNDS; ++i) {
        #pragma acc parallel loop copy(a[0:N]) async(0)
        for (int j = 0; j < N; ++j) a[j]++;
    }
    #pragma acc wait
    for (int j = 0; j < N; ++j)
        CHECK(a[j] == ROUNDS);
    free(a);
}

/* GCC's deep-copy-10: struct members attached and detached on two queues in turn. */
typedef struct { int *a, *b; } pair;

static void struct_members_two_queues(void)
{
    pair m = { calloc(N, sizeof(int)), calloc(N, sizeof(int)) };
    #pragma acc enter data copyin(m)
    for (int i = 0; i < ROUNDS; i++) {
        #pragma acc parallel loop copy(m.a[0:N]) async(i % 2)
        for (int j = 0; j < N; j++) m.a[j]++;
        #pragma acc parallel loop copy(m.b[0:N]) async((i + 1) % 2)
        for (int j = 0; j < N; j++) m.b[j]++;
    }
    #pragma acc exit data copyout(m) wait(0, 1)
    for (int j = 0; j < N; j++)
        CHECK(m.a[j] == ROUNDS && m.b[j] == ROUNDS);
    free(m.a);
    free(m.b);
}

/* Implicit firstprivate scalars, the queue running while the host goes on. */
static void firstprivate_while_running(void)
{
    int a[8] = {0};
    #pragma acc enter data copyin(a)
    for (int i = 0; i < 8; i++) {
        #pragma acc parallel present(a) async(1)
        a[i] += 1;
    }
    #pragma acc wait
    #pragma acc exit data copyout(a)
    for (int i = 0; i < 8; i++)
        CHECK(a[i] == 1);
}

/* A scalar each construct copies in and out, which the host rewrites before the next
   one (GCC's code does so with the temporaries of map(tofrom) scalars). */
static void tofrom_scalar_rewritten(void)
{
    int r[ROUNDS] = {0};
    #pragma acc enter data copyin(r)
    for (int i = 0; i < ROUNDS; i++) {
        int k = i;
        #pragma acc parallel present(r) copy(k) async(1)
        { r[k] += k + 1; k = -1; }
    }
    #pragma acc wait
    #pragma acc exit data copyout(r)
    for (int i = 0; i < ROUNDS; i++)
        CHECK(r[i] == i + 1);
}

/* The acc_*_async routines: copy in, increment, copy out, on alternating queues. */
static void routines_alternating_queues(void)
{
    int *a = calloc(N, sizeof *a);
    for (int i = 0; i < ROUNDS; i++) {
        int q = i % 2;
        acc_copyin_async(a, N * sizeof *a, q);
        #pragma acc parallel loop present(a[0:N]) async(q)
        for (int j = 0; j < N; j++) a[j] += j;
        acc_copyout_async(a, N * sizeof *a, q);
    }
    acc_wait_all();
    for (int j = 0; j < N; j++)
        CHECK(a[j] == ROUNDS * j);
    free(a);
}

/* update self on one queue, update device of the same array on another. */
static void updates_across_queues(void)
{
    int *a = calloc(N, sizeof *a);
    #pragma acc enter data copyin(a[0:N])
    for (int i = 0; i < 20; i++) {
        #pragma acc parallel loop present(a[0:N]) async(1)
        for (int j = 0; j < N; j++) a[j] += 1;
        #pragma acc update self(a[0:N]) async(1)
        #pragma acc update device(a[0:N]) async(2)
        #pragma acc parallel loop present(a[0:N]) async(2)
        for (int j = 0; j < N; j++) a[j] += 2;
        #pragma acc update self(a[0:N]) async(2)
        acc_wait_async(2, 1);
    }
    #pragma acc wait
    for (int j = 0; j < N; j++)
        CHECK(a[j] == 60);
    #pragma acc exit data delete(a[0:N])
    free(a);
}

/* Copies to the host on two queues that queue 0 waits for (wait async); the host then
   waits for queue 0 alone (GCC's data-2). */
static void waits_through_another_queue(void)
{
    int *x = calloc(N, sizeof *x), *y = calloc(N, sizeof *y);
    #pragma acc enter data copyin(x[0:N], y[0:N])
    #pragma acc parallel loop present(x[0:N]) async(1)
    for (int j = 0; j < N; j++) x[j] = j;
    #pragma acc parallel loop present(y[0:N]) async(2)
    for (int j = 0; j < N; j++) y[j] = 2 * j;
    #pragma acc update self(x[0:N]) async(1)
    #pragma acc update self(y[0:N]) async(2)
    #pragma acc wait async(0)
    #pragma acc wait(0)
    for (int j = 0; j < N; j++)
        CHECK(x[j] == j && y[j] == 2 * j);
    #pragma acc exit data delete(x[0:N], y[0:N])
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    int times = argc > 1 ? atoi(argv[1]) : 1;
    for (int t = 0; t < times; t++) {
        copy_loop_one_queue();
        struct_members_two_queues();
        firstprivate_while_running();
        tofrom_scalar_rewritten();
        routines_alternating_queues();
        updates_across_queues();
        waits_through_another_queue();
    }
    printf("acc_async_order ok\n");
    return failures();
}
