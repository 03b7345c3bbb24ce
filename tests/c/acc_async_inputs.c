/* OpenACC async compute constructs take what they read from the host (firstprivate
   scalars, what they copy in) when the construct is reached, not when their queue runs
   them; their copies back land only where their own clauses say.  Every construct is
   queued behind a region that waits for the host, so none runs before the loop ends. */
#include <openacc.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

#define N 16

static volatile int go;

static void blocked_region(int q)
{
    uintptr_t gp = (uintptr_t)&go;
    #pragma acc parallel async(q) firstprivate(gp)
    {
        while (!*(volatile int *)gp)
            ;
    }
}

static void scalars(void)
{
    int a[N], b[N], c[N], d[N];
    for (int i = 0; i < N; i++) a[i] = b[i] = c[i] = d[i] = 0;
    #pragma acc enter data copyin(a, b, c, d)
    go = 0;
    blocked_region(1);
    for (int i = 0; i < N; i++) {
        #pragma acc parallel present(a) async(1)
        a[i] += 1;
        #pragma acc parallel present(b) async(1) firstprivate(i)
        b[i] += 1;
        #pragma acc parallel present(c) async(1) copyin(i)
        c[i] += 1;
        int x = 10 * i;
        #pragma acc parallel present(d) async(1)
        d[i] = x;
        x = -1;
    }
    go = 1;
    #pragma acc wait
    #pragma acc exit data copyout(a, b, c, d)
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 1 && b[i] == 1 && c[i] == 1 && d[i] == 10 * i);
}

static void sections(void)
{
    int s[N], one[1], e[N], f[N];
    for (int i = 0; i < N; i++) s[i] = i, e[i] = f[i] = -1;
    #pragma acc enter data copyin(e, f)
    go = 0;
    blocked_region(1);
    for (int i = 0; i < N; i++) {
        #pragma acc parallel copyin(s[i:1]) present(e) async(1)
        e[i] = s[i];
        s[i] = -5;                                /* after the construct: not seen */
        one[0] = 100 + i;
        #pragma acc parallel copyin(one[0:1]) present(f) async(1)
        f[i] = one[0];
    }
    go = 1;
    #pragma acc wait
    #pragma acc exit data copyout(e, f)
    for (int i = 0; i < N; i++)
        CHECK(e[i] == i && f[i] == 100 + i);
}

static void copies_back_land_where_the_clauses_say(void)
{
    int o[N], g[N];
    for (int i = 0; i < N; i++) o[i] = g[i] = -1;
    #pragma acc enter data copyin(g)
    go = 0;
    blocked_region(1);
    for (int i = 0; i < N; i += 2) {
        #pragma acc parallel copyout(o[i:1]) present(g) async(1)
        { o[i] = i; g[i] = i; }
    }
    for (int i = 1; i < N; i += 2) o[i] = 50 + i, g[i] = 60 + i;   /* the host's writes */
    go = 1;
    #pragma acc wait
    for (int i = 0; i < N; i++)
        CHECK(o[i] == (i % 2 ? 50 + i : i) && g[i] == (i % 2 ? 60 + i : -1));
    #pragma acc exit data copyout(g)
    for (int i = 0; i < N; i++)
        CHECK(g[i] == (i % 2 ? -1 : i));
}

int main(int argc, char **argv)
{
    int times = argc > 1 ? atoi(argv[1]) : 1;
    for (int t = 0; t < times; t++) {
        scalars();
        sections();
        copies_back_land_where_the_clauses_say();
    }
    printf("acc_async_inputs ok\n");
    return failures();
}
