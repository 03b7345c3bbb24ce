/* OpenACC's async queues, built with gcc -fopenacc, on the host device: work
   on one queue runs in order and after the host goes on; `wait` clauses and acc_wait*
   wait for the right queues; threads offload at once. */
#include <openacc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

#define N 256

static volatile int go;         /* the host releases a blocked region */

/* A region on queue q that spins until the host sets go (its host code runs with
   device addresses; gp is a host address passed through as a device pointer). */
static void blocked_region(int q)
{
    int *gp = (int *)&go;
    #pragma acc parallel async(q) deviceptr(gp)
    {
        while (!*(volatile int *)gp)
            ;
    }
}

static void one_queue_keeps_order(void)
{
    int a[N];
    for (int i = 0; i < N; i++) a[i] = 0;
    go = 0;
    #pragma acc enter data copyin(a) async(1)
    blocked_region(1);
    #pragma acc parallel loop present(a) async(1)
    for (int i = 0; i < N; i++) a[i] += 1;
    #pragma acc parallel loop present(a) async(1)
    for (int i = 0; i < N; i++) a[i] *= 10;
    #pragma acc update self(a) async(1)
    CHECK(!acc_async_test(1) && !acc_async_test_all());   /* the host went on */
    CHECK(a[0] == 0);
    go = 1;
    acc_wait(1);
    CHECK(acc_async_test(1));
    CHECK(a[0] == 10 && a[N - 1] == 10);                   /* +1 then *10, in order */
    #pragma acc exit data delete(a)
}

static void wait_clauses_order_queues(void)
{
    int a[N], b[N];
    for (int i = 0; i < N; i++) a[i] = b[i] = 0;
    go = 0;
    #pragma acc enter data copyin(a, b)
    blocked_region(1);
    #pragma acc parallel loop present(a) async(1)
    for (int i = 0; i < N; i++) a[i] = i;
    #pragma acc parallel loop present(a, b) async(2) wait(1)   /* after queue 1's work */
    for (int i = 0; i < N; i++) b[i] = a[i] + 1;
    #pragma acc update self(b) async(2)
    CHECK(!acc_async_test(2));
    go = 1;
    #pragma acc wait(2)
    CHECK(b[7] == 8 && acc_async_test(1));
    go = 0;
    blocked_region(3);
    #pragma acc wait(3) async(4)          /* queue 4 waits for queue 3, the host does not */
    #pragma acc parallel loop present(b) async(4)
    for (int i = 0; i < N; i++) b[i] = -1;
    #pragma acc update self(b) async(4)
    CHECK(!acc_async_test(4) && b[7] == 8);
    go = 1;
    #pragma acc wait
    CHECK(b[7] == -1 && acc_async_test_all());
    go = 0;
    blocked_region(5);
    acc_wait_all_async(6);                /* queue 6 after every queue */
    #pragma acc parallel loop present(a) async(6)
    for (int i = 0; i < N; i++) a[i] = 2;
    CHECK(!acc_async_test(6));
    go = 1;
    acc_wait_async(6, acc_async_sync);    /* the host waits for queue 6 */
    #pragma acc exit data copyout(a) delete(b)
    CHECK(a[0] == 2);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, v[N];
    intptr_t bad = 0;
    for (int r = 0; r < 20; r++) {
        for (int i = 0; i < N; i++) v[i] = i;
        #pragma acc data copy(v)
        {
            #pragma acc parallel loop async(t)
            for (int i = 0; i < N; i++) v[i] += t + r;
            #pragma acc wait(t)
        }
        for (int i = 0; i < N; i++) bad += v[i] != i + t + r;
    }
    return (void *)bad;
}

static void threads_offload_at_once(void)
{
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < 4; t++) {
        void *bad;
        pthread_join(th[t], &bad);
        CHECK(bad == NULL);
    }
}

int main(void)
{
    one_queue_keeps_order();
    wait_clauses_order_queues();
    threads_offload_at_once();
    return failures();
}
