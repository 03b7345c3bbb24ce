/* OpenACC's data clauses and constructs, built with gcc -fopenacc, on a device with
   memory of its own: results, stale values where nothing copies, and reference counts
   through acc_is_present. */
#include <openacc.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define N 64

struct S { int n; double *p; };

static int separate;           /* memory is separate (not OpenACC's host device) */
static int host_addressable;   /* the host can use device addresses (not OpenCL's) */
#define ACC_DEVICE_OPENCL 16   /* pygomp's OpenCL devices */

static void copy_copyin_copyout_create(void)
{
    int a[N], b[N], c[N], d[N];
    for (int i = 0; i < N; i++) a[i] = b[i] = c[i] = d[i] = i;
    #pragma acc parallel loop copy(a) copyin(b) copyout(c) create(d)
    for (int i = 0; i < N; i++) { d[i] = 2 * b[i]; c[i] = d[i] + 1; a[i] += 100; b[i] = -1; }
    for (int i = 0; i < N; i++) {
        CHECK(a[i] == i + 100);
        CHECK(c[i] == 2 * i + 1);
        CHECK(b[i] == (separate ? i : -1));      /* copyin: the device's write stays there */
        CHECK(d[i] == (separate ? i : 2 * i));   /* create: nothing copied either way */
    }
}

static void data_region_and_stale_values(void)
{
    int a[N], b[N];
    for (int i = 0; i < N; i++) { a[i] = 1; b[i] = 0; }
    #pragma acc data copyin(a) copy(b)
    {
        CHECK(acc_is_present(a, sizeof a) && acc_is_present(b, sizeof b));
        a[5] = 7;                                /* the host's copy only */
        #pragma acc parallel loop
        for (int i = 0; i < N; i++) b[i] = a[i];
        CHECK(b[5] == (separate ? 0 : 7));       /* not back before the region's end */
        #pragma acc update device(a[5:1])
        #pragma acc parallel
        b[6] = a[5];
        #pragma acc update self(b[0:8])
        CHECK(b[6] == 7);
        b[7] = 99;
        #pragma acc update self(b[7:1]) if_present
        CHECK(b[7] == (separate ? 1 : 99));
    }
    CHECK(b[5] == (separate ? 1 : 7) && b[6] == 7);
    CHECK(!acc_is_present(a, sizeof a) || !separate);
}

static void present_no_create_deviceptr_firstprivate(void)
{
    int a[N], b[N], n = 3;
    for (int i = 0; i < N; i++) a[i] = i;
    int *d = acc_malloc(sizeof b);
    acc_copyin(a, sizeof a);
    if (host_addressable) {       /* the host code of a region uses device addresses */
        #pragma acc parallel loop present(a) deviceptr(d) firstprivate(n)
        for (int i = 0; i < N; i++) d[i] = a[i] * n;
        acc_memcpy_from_device(b, d, sizeof b);
        for (int i = 0; i < N; i++)
            CHECK(b[i] == 3 * i);
    }
    void *where[2] = {0, 0};
    int absent = 5;
    #pragma acc parallel no_create(a, absent) copyout(where)
    { where[0] = &a[1]; where[1] = &absent; }
    if (host_addressable)
        CHECK(acc_hostptr(where[0]) == (void *)&a[1]);  /* present: its device copy */
    CHECK(where[1] == (void *)&absent);                  /* absent: the host's own */
    acc_delete(a, sizeof a);
    acc_free(d);
}

static void dynamic_and_structured_counts(void)
{
    float v[N];
    for (int i = 0; i < N; i++) v[i] = i;
    #pragma acc enter data copyin(v)
    #pragma acc enter data create(v)
    #pragma acc data copy(v)
    {
        #pragma acc parallel
        v[0] = 42;
        #pragma acc exit data copyout(v)         /* a dynamic reference goes: 1 left */
        #pragma acc exit data copyout(v)         /* the last dynamic one: the region holds v */
        #pragma acc exit data copyout(v)         /* none left: nothing happens */
        CHECK(acc_is_present(v, sizeof v));
        CHECK(v[0] == (separate ? 0 : 42));
    }
    CHECK(v[0] == 42 && (!separate || !acc_is_present(v, sizeof v)));
    #pragma acc enter data copyin(v)
    #pragma acc enter data copyin(v)
    #pragma acc exit data delete(v) finalize    /* every dynamic reference at once */
    CHECK(!separate || !acc_is_present(v, sizeof v));
}

static void attach_and_detach(void)
{
    double x[8];
    for (int i = 0; i < 8; i++) x[i] = i;
    struct S s = {8, x};
    #pragma acc enter data copyin(s)
    #pragma acc enter data copyin(x)
    #pragma acc enter data attach(s.p)       /* the device's s.p points to the device's x */
    #pragma acc parallel present(s)
    for (int i = 0; i < s.n; i++) s.p[i] *= 2;
    CHECK(x[3] == (separate ? 3 : 6));
    #pragma acc exit data detach(s.p)
    #pragma acc exit data copyout(x)
    #pragma acc exit data copyout(s)
    CHECK(x[3] == 6 && s.p == x);                /* detach gave s.p its host value back */
    #pragma acc parallel loop copy(s.p[0:8])     /* struct, member, attach in one region */
    for (int i = 0; i < 8; i++) s.p[i] += 1;
    CHECK(x[7] == 15);
}

static void struct_members_count_alone(void)
{
    struct { int a, b; } s = {1, 2};
    #pragma acc enter data copyin(s.a, s.b)
    #pragma acc enter data copyin(s.b)          /* s.b: two references, s.a: one */
    s.a = s.b = 0;                              /* the host's copies only */
    #pragma acc exit data copyout(s.a)
    CHECK(acc_is_present(&s.b, sizeof s.b));
    CHECK(acc_is_present(&s.a, sizeof s.a) == !separate && s.a == (separate ? 1 : 0));
    #pragma acc exit data copyout(s.b)
    CHECK(acc_is_present(&s.b, sizeof s.b) && s.b == 0);
    #pragma acc exit data copyout(s.b)
    CHECK(acc_is_present(&s.b, sizeof s.b) == !separate && s.b == (separate ? 2 : 0));
}

static void host_data_and_declare(void)
{
    int a[N];
    for (int i = 0; i < N; i++) a[i] = i;
    #pragma acc data copy(a)
    {
        void *dev = 0;
        #pragma acc host_data use_device(a)
        dev = a;
        CHECK(dev == acc_deviceptr(a));
        CHECK(separate ? dev != (void *)a : dev == (void *)a);
    }
    int loc[8];
    #pragma acc declare create(loc)
    CHECK(acc_is_present(loc, sizeof loc));
}

static void if_clause_runs_on_the_host(void)
{
    int a[4] = {1, 2, 3, 4}, on_host = 0;
    #pragma acc enter data copyin(a)
    #pragma acc parallel if(0) copyout(on_host)
    { a[0] = 10; on_host = acc_on_device(acc_device_host); }
    CHECK(a[0] == 10 && on_host);                /* the host's own a */
    #pragma acc exit data delete(a)
}

int main(void)
{
    int probe;                                   /* the host plugin's device answers host too */
    separate = acc_copyin(&probe, sizeof probe) != (void *)&probe;
    acc_delete(&probe, sizeof probe);
    host_addressable = acc_get_device_type() != ACC_DEVICE_OPENCL;
    printf("device type %d, separate memory %d\n", acc_get_device_type(), separate);
    copy_copyin_copyout_create();
    data_region_and_stale_values();
    present_no_create_deviceptr_firstprivate();
    dynamic_and_structured_counts();
    attach_and_detach();
    struct_members_count_alone();
    host_data_and_declare();
    if_clause_runs_on_the_host();
    return failures();
}
