/* Every map kind GCC 12 emits, on a device with separate memory (the host device). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

struct S { int x; double *p; int y[4]; int n; };

static void to_from_tofrom_alloc(void)
{
    int a[8], b[8], c[8], d[8];
    for (int i = 0; i < 8; i++) a[i] = b[i] = c[i] = d[i] = i;
    #pragma omp target map(to: a) map(from: b) map(tofrom: c) map(alloc: d)
    for (int i = 0; i < 8; i++) { b[i] = a[i] + 10; c[i] += 100; a[i] = -1; d[i] = -1; }
    for (int i = 0; i < 8; i++) {
        CHECK(a[i] == i);              /* to: the device's writes stay there */
        CHECK(b[i] == i + 10);
        CHECK(c[i] == i + 100);
        CHECK(d[i] == i);              /* alloc: nothing copied back */
    }
}

static void scalars_and_firstprivate(void)
{
    int n = 5, arr[3] = {1, 2, 3};
    double d = 2.5;
    struct S s = {7, NULL, {0}, 9};
    int out = 0;
    #pragma omp target map(from: out) firstprivate(arr, s)
    { out = n + (int)(d * 2) + arr[2] + s.x + s.n; n = 99; d = 99; arr[0] = 99; s.x = 99; }
    CHECK(out == 5 + 5 + 3 + 7 + 9);
    CHECK(n == 5 && d == 2.5 && arr[0] == 1 && s.x == 7);    /* private copies */
}

static void implicit_arrays_are_tofrom(void)
{
    int a[4] = {1, 2, 3, 4};
    #pragma omp target
    for (int i = 0; i < 4; i++) a[i] *= 2;
    CHECK(a[0] == 2 && a[3] == 8);
}

static void stale_without_map(void)
{
    int a[4] = {1, 1, 1, 1};
    #pragma omp target enter data map(to: a)
    a[0] = 2;                                   /* host change, not updated */
    int seen = 0;
    #pragma omp target map(from: seen)
    seen = a[0];
    CHECK(seen == 1);                           /* the device still has the old value */
    #pragma omp target update to(a[0:1])
    #pragma omp target map(from: seen)
    seen = a[0];
    CHECK(seen == 2);
    #pragma omp target
    a[1] = 5;                                   /* present: not copied back at the end */
    CHECK(a[1] == 1);
    #pragma omp target update from(a[1:1])
    CHECK(a[1] == 5);
    #pragma omp target exit data map(release: a)
}

static void reference_counts(void)
{
    int dev = omp_get_default_device();
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i;
    CHECK(!omp_target_is_present(v, dev));
    #pragma omp target enter data map(to: v)
    #pragma omp target enter data map(to: v)
    CHECK(omp_target_is_present(v, dev) && omp_target_is_present(&v[15], dev));
    #pragma omp target data map(tofrom: v)
    {
        #pragma omp target
        v[0] = 42;
    }
    CHECK(v[0] == 0);                           /* count 2 + 1 -> 2: no copy back */
    #pragma omp target exit data map(release: v)
    CHECK(omp_target_is_present(v, dev));
    #pragma omp target exit data map(from: v)   /* 1 -> 0: copied back, removed */
    CHECK(!omp_target_is_present(v, dev));
    CHECK(v[0] == 42);
    #pragma omp target enter data map(to: v)
    #pragma omp target enter data map(to: v)
    #pragma omp target exit data map(delete: v) /* delete: to zero at once */
    CHECK(!omp_target_is_present(v, dev));
}

/* A region repeated in a loop follows the map: present, absent, present again. */
static void repeated_region_follows_the_map(void)
{
    double a[4] = {0, 0, 0, 0};
    #pragma omp target enter data map(to: a)
    for (int i = 0; i < 6; i++) {
        if (i == 2) {
            #pragma omp target exit data map(from: a)   /* device 2 -> host */
        }
        if (i == 4) {
            #pragma omp target enter data map(to: a)
        }
        #pragma omp target map(tofrom: a)
        a[0] += 1;
        CHECK(a[0] == (i < 2 ? 0 : i < 4 ? i + 1 : 4));     /* present: not copied back */
    }
    #pragma omp target exit data map(from: a)
    CHECK(a[0] == 6);
}

static void always(void)
{
    int a[4] = {1, 2, 3, 4};
    #pragma omp target enter data map(to: a)
    a[0] = 10;
    #pragma omp target map(always, tofrom: a)
    a[1] = a[0] + 1;
    CHECK(a[0] == 10 && a[1] == 11);
    #pragma omp target exit data map(delete: a)
}

static void sections_and_updates(void)
{
    int a[10];
    for (int i = 0; i < 10; i++) a[i] = i;
    #pragma omp target data map(to: a[2:5])
    {
        CHECK(omp_target_is_present(&a[2], omp_get_default_device()));
        CHECK(!omp_target_is_present(&a[7], omp_get_default_device()));
        #pragma omp target map(tofrom: a[3:2])      /* inside the mapped section */
        { a[3] = -3; a[4] = -4; }
        CHECK(a[3] == 3);                           /* present: no copy back */
        #pragma omp target update from(a[3:1])
        CHECK(a[3] == -3 && a[4] == 4);
    }
}

static void zero_length_sections(void)
{
    int *p = malloc(8 * sizeof(int));
    int was_null = -1;
    #pragma omp target map(from: was_null)
    was_null = p == NULL;                       /* not mapped: NULL on the device */
    CHECK(was_null == 1);
    #pragma omp target enter data map(to: p[0:8])
    long dp = 0;
    #pragma omp target map(tofrom: p[0:0]) map(from: dp)
    dp = (long)p;                               /* mapped: its device address */
    CHECK(dp == (long)omp_get_mapped_ptr(p, omp_get_default_device()));
    CHECK(dp != (long)p);
    #pragma omp target map(from: was_null)
    was_null = p == NULL;                       /* implicitly a zero-length section */
    CHECK(was_null == 0);
    #pragma omp target exit data map(delete: p[0:8])
    free(p);
}

static void struct_members(void)
{
    struct S s = {1, NULL, {1, 2, 3, 4}, 5};
    int dev = omp_get_default_device();
    #pragma omp target map(tofrom: s.x, s.n)
    { s.x += 10; s.n += 10; s.y[0] = 99; }
    CHECK(s.x == 11 && s.n == 15 && s.y[0] == 1);
    #pragma omp target enter data map(to: s.n)      /* the base lies before it */
    CHECK(omp_target_is_present(&s.n, dev) && !omp_target_is_present(&s.x, dev));
    #pragma omp target map(tofrom: s.n)
    s.n = 50;
    CHECK(s.n == 15);
    #pragma omp target exit data map(from: s.n)
    CHECK(s.n == 50 && !omp_target_is_present(&s.n, dev));
}

/* Members keep their alignment on the device although the mapped range starts at an
   int (GCC's target-21.c: an 8-byte load from a misaligned address faults on a GPU). */
static void struct_member_alignment(void)
{
    struct T { int a; int u; long long b; double d; } t = {1, 2, 3, 4.5};
    int aligned = 0;
    #pragma omp target map(to: t.u, t.b, t.d) map(from: aligned)
    {
        uintptr_t b = (uintptr_t)&t.b, d = (uintptr_t)&t.d;
        __asm__("" : "+r"(b), "+r"(d));         /* gcc would fold the test to true */
        aligned = b % _Alignof(long long) == 0 && d % _Alignof(double) == 0
                  && t.u == 2 && t.b == 3;
    }
    CHECK(aligned);
}

static void pointer_members_attach(void)
{
    struct S s = {3, NULL, {0}, 0};
    double *host_p = malloc(10 * sizeof(double));
    for (int i = 0; i < 10; i++) host_p[i] = i;
    s.p = host_p;
    long seen_p = 0;
    #pragma omp target map(tofrom: s.p[2:3]) map(from: seen_p)
    { seen_p = (long)s.p; s.p[2] += 100; s.x = 4; }
    CHECK(s.p == host_p && host_p[2] == 102 && s.x == 4);
    CHECK(seen_p != (long)host_p);              /* the device saw a device pointer */
    /* enter data: the struct, then its pointer attached; exit detaches */
    #pragma omp target enter data map(to: s) map(to: s.p[0:10])
    CHECK(omp_target_is_present(host_p, omp_get_default_device()));
    #pragma omp target
    { s.p[9] = -9; }
    #pragma omp target exit data map(from: s.p[0:10]) map(release: s)
    CHECK(s.p == host_p && host_p[9] == -9);
    free(host_p);
}

static void use_device_ptr_and_addr(void)
{
    int dev = omp_get_default_device();
    int *p = malloc(4 * sizeof(int));
    int a[4] = {0};
    int *hp = p;
    #pragma omp target data map(tofrom: p[0:4]) use_device_ptr(p)
    {
        CHECK(p != hp && p == omp_get_mapped_ptr(hp, dev));
        #pragma omp target is_device_ptr(p)
        for (int i = 0; i < 4; i++) p[i] = i + 1;
    }
    p = hp;
    CHECK(p[0] == 1 && p[3] == 4);
    int *ha = &a[0];
    #pragma omp target data map(tofrom: a) use_device_addr(a)
    {
        CHECK((void *)&a[0] != (void *)ha && (void *)&a[0] == omp_get_mapped_ptr(ha, dev));
    }
    free(p);
}

static void device_memory_routines(void)
{
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    int src[6] = {1, 2, 3, 4, 5, 6}, dst[6] = {0};
    int *d = omp_target_alloc(sizeof src, dev);
    CHECK(d != NULL);
    CHECK(omp_target_memcpy(d, src, sizeof src, 0, 0, dev, host) == 0);
    #pragma omp target is_device_ptr(d)
    for (int i = 0; i < 6; i++) d[i] *= 10;
    CHECK(omp_target_memcpy(dst, d, sizeof dst, 0, 0, host, dev) == 0);
    CHECK(dst[0] == 10 && dst[5] == 60);
    /* associate: the mapping uses the given device memory */
    CHECK(omp_target_associate_ptr(src, d, sizeof src, 0, dev) == 0);
    CHECK(omp_target_is_present(src, dev));
    #pragma omp target map(tofrom: src)
    src[1] = -2;                      /* present (associated): no copies either way */
    CHECK(src[1] == 2);
    CHECK(omp_target_memcpy(dst, d, sizeof dst, 0, 0, host, dev) == 0);
    CHECK(dst[0] == 10 && dst[1] == -2);
    CHECK(omp_target_disassociate_ptr(src, dev) == 0);
    CHECK(!omp_target_is_present(src, dev));
    /* a 2-D box: rows 1..2, columns 1..3 of a 3x4 array */
    int m[3][4], out[3][4] = {{0}};
    for (int i = 0; i < 12; i++) m[i / 4][i % 4] = i;
    size_t vol[2] = {2, 3}, off[2] = {1, 1}, dims[2] = {3, 4};
    int *dm = omp_target_alloc(sizeof m, dev);
    CHECK(omp_target_memcpy_rect(dm, m, sizeof(int), 2, vol, off, off, dims, dims, dev, host) == 0);
    CHECK(omp_target_memcpy_rect(out, dm, sizeof(int), 2, vol, off, off, dims, dims, host, dev) == 0);
    CHECK(out[1][1] == 5 && out[2][3] == 11 && out[0][0] == 0 && out[1][0] == 0);
    CHECK(omp_target_memcpy(dst, d, 4, 0, 0, 99, host) != 0);     /* no device 99 */
    /* the async form: a task, ordered after the tasks its depend object names */
    int later[6] = {0};
    omp_depend_t dep;
    #pragma omp depobj(dep) depend(inout: later)
    #pragma omp parallel num_threads(2)
    #pragma omp single
    {
        #pragma omp task depend(out: later)
        later[0] = -1;
        CHECK(omp_target_memcpy_async(later, d, sizeof later, 0, 0, host, dev, 1, &dep) == 0);
        #pragma omp taskwait
    }
    #pragma omp depobj(dep) destroy
    CHECK(later[0] == 10 && later[5] == 60);
    CHECK(omp_target_alloc(16, -7) == NULL);
    omp_target_free(dm, dev);
    omp_target_free(d, dev);
}

static void in_region_routines(void)
{
    int initial = -1, num = -1, threads = 0;
    #pragma omp target map(from: initial, num) map(tofrom: threads)
    {
        initial = omp_is_initial_device();
        num = omp_get_device_num();
        #pragma omp parallel num_threads(3)
        {
            #pragma omp atomic
            threads += !omp_is_initial_device();
        }
    }
    CHECK(initial == 0 && num == omp_get_default_device() && threads == 3);
    CHECK(omp_is_initial_device() == 1);
    CHECK(omp_get_device_num() == omp_get_initial_device());
    int sum = 0;
    #pragma omp target teams distribute parallel for reduction(+: sum) map(tofrom: sum)
    for (int i = 0; i < 100; i++) sum += i;
    CHECK(sum == 4950);
}

static void default_device_is_inherited(void)
{
    int initial = omp_get_initial_device(), both = 0;
    omp_set_default_device(initial);
    #pragma omp parallel num_threads(2) reduction(+: both)
    {
        int on_initial = 0;
        #pragma omp target map(from: on_initial)
        on_initial = omp_is_initial_device();
        both += on_initial && omp_get_default_device() == initial;
    }
    CHECK(both == 2);           /* the threads of the parallel region inherit it */
    omp_set_default_device(0);
    CHECK(omp_get_default_device() == 0);
}

int main(void)
{
    CHECK(omp_get_num_devices() >= 1);
    to_from_tofrom_alloc();
    scalars_and_firstprivate();
    implicit_arrays_are_tofrom();
    stale_without_map();
    reference_counts();
    repeated_region_follows_the_map();
    always();
    sections_and_updates();
    zero_length_sections();
    struct_members();
    struct_member_alignment();
    pointer_members_attach();
    use_device_ptr_and_addr();
    device_memory_routines();
    in_region_routines();
    default_device_is_inherited();
    return failures();
}
