/* Regions that libpygomp.so runs from C by a plan (small structs, in loops), checked
   in host memory after every region: absent and present, alternating, from several
   threads, and while another thread looks at or changes the map during a region. */
#include <stdint.h>
#include "check.h"

#define N 40
struct S { double x, y; int n, m; };

static void absent_to_from_tofrom(void)
{
    struct S a = {1, 2, 0, 0}, b = {0, 0, 0, 0}, c = {5, 5, 5, 5};
    int dev = omp_get_default_device();
    for (int i = 0; i < N; i++) {
        a.n = i;
        c.n = i;
        #pragma omp target map(to: a) map(from: b) map(tofrom: c)
        { b.n = a.n + 1; b.x = a.x; a.m = -1; c.m = c.n * 2; c.n = -c.n; }
        CHECK(a.n == i && a.m == 0 && a.x == 1);        /* to: nothing comes back */
        CHECK(b.n == i + 1 && b.x == 1);                /* from: all of it */
        CHECK(c.n == -i && c.m == 2 * i && c.x == 5);   /* tofrom: both ways */
        CHECK(!omp_target_is_present(&a, dev) && !omp_target_is_present(&b, dev));
        CHECK(!omp_target_is_present(&c, dev));
    }
}

static void two_regions_in_one_loop(void)
{
    struct S p = {1, 0, 0, 0}, q = {0, 0, 0, 0}, out = {0, 0, 0, 0};
    int dev = omp_get_default_device();
    for (int i = 0; i < N; i++) {
        p.n = i;
        #pragma omp target map(to: p) map(from: out)
        { out = p; out.m = p.n * 3; p.n = -1; }
        #pragma omp target map(tofrom: q)
        { q.n += i; q.m = 1; }
        CHECK(p.n == i && out.n == i && out.m == 3 * i && out.x == 1);
        CHECK(q.n == i * (i + 1) / 2 && q.m == 1);
        CHECK(!omp_target_is_present(&p, dev) && !omp_target_is_present(&q, dev));
        q.m = 0;
    }
}

static void present_and_absent_alternate(void)
{
    struct S s = {0, 0, 0, 0};
    int dev = omp_get_default_device();
    for (int i = 0; i < N; i++) {
        int present = i % 3 == 1;
        s.n = i;
        if (present) {
            #pragma omp target enter data map(to: s)
            s.n = -5;                               /* the device keeps i */
        }
        #pragma omp target map(tofrom: s)
        { s.m = s.n + 100; }
        if (present) {
            CHECK(s.n == -5 && s.m == 0);           /* present: nothing copied */
            CHECK(omp_target_is_present(&s, dev));
            #pragma omp target exit data map(from: s)
            CHECK(s.n == i && s.m == i + 100);
        } else {
            CHECK(s.n == i && s.m == i + 100);
        }
        CHECK(!omp_target_is_present(&s, dev));
        s.m = 0;
    }
}

static void threads_with_their_own_and_shared(void)
{
    struct S shared = {2, 0, 0, 0};
    int wrong = 0;
    #pragma omp parallel num_threads(4) reduction(+: wrong)
    {
        struct S mine = {0, 0, omp_get_thread_num(), 0}, out = {0, 0, 0, 0};
        for (int i = 0; i < N; i++) {
            #pragma omp target map(to: shared, mine) map(from: out)
            { out.n = mine.n * 10 + (int)shared.x; out.m = i; }
            wrong += out.n != omp_get_thread_num() * 10 + 2 || out.m != i;
            #pragma omp target map(tofrom: mine)
            mine.m += 1;
            wrong += mine.m != i + 1;
        }
    }
    CHECK(wrong == 0);
    CHECK(!omp_target_is_present(&shared, omp_get_default_device()));
}

/* One thread's region waits while another asks whether its struct is present, maps
   it too and lets the region go: the struct is shared as one entry (count 2), so the
   region's end copies nothing back, and the other thread's exit data does.  The flags
   are host memory that the region reaches by address (the host device runs it); each
   round starts with the same region run alone. */
static struct S waited;
static int go, inside;

static void waiting_region(void)
{
    uintptr_t go_at = (uintptr_t)&go, inside_at = (uintptr_t)&inside;
    #pragma omp target map(tofrom: waited) firstprivate(go_at, inside_at)
    {
        waited.m = 7;
        __atomic_store_n((int *)inside_at, 1, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n((int *)go_at, __ATOMIC_SEQ_CST))
            ;
    }
}

static void another_thread_during_the_region(void)
{
    int dev = omp_get_default_device();
    for (int i = 0; i < 4; i++) {
        int seen = -1;
        go = 1;
        waiting_region();                           /* alone: copied in and back */
        CHECK(waited.m == 7 && !omp_target_is_present(&waited, dev));
        waited = (struct S){0, 0, i, 0};
        go = inside = 0;
        #pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                waiting_region();
            } else {
                while (!__atomic_load_n(&inside, __ATOMIC_SEQ_CST))
                    ;
                seen = omp_target_is_present(&waited, dev);
                #pragma omp target enter data map(to: waited)
                __atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
            }
        }
        CHECK(seen == 1);
        CHECK(waited.m == 0);                       /* count 2 -> 1: not copied back */
        CHECK(omp_target_is_present(&waited, dev));
        #pragma omp target exit data map(from: waited)
        CHECK(waited.n == i && waited.m == 7);
        CHECK(!omp_target_is_present(&waited, dev));
    }
}

/* Threads run regions on structs of their own while one of them changes the map
   all the time (enter and exit data): every region still copies in and back. */
static void threads_while_the_map_changes(void)
{
    int wrong = 0, dev = omp_get_default_device();
    #pragma omp parallel num_threads(4) reduction(+: wrong)
    {
        struct S mine = {0, 0, 0, 0};
        int other[8] = {0};
        for (int i = 0; i < 200; i++) {
            if (omp_get_thread_num() == 3) {
                other[0] = i;
                #pragma omp target enter data map(to: other)
                wrong += !omp_target_is_present(other, dev);
                #pragma omp target exit data map(from: other)
                wrong += other[0] != i;
            }
            mine.n = i;
            #pragma omp target map(tofrom: mine)
            { mine.m = mine.n + 1; mine.n = -1; }
            wrong += mine.m != i + 1 || mine.n != -1;
        }
    }
    CHECK(wrong == 0);
}

/* Deferred regions (nowait): libgomp's tasks run them in any thread of the team. */
static void nowait_regions(void)
{
    struct S a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
    int wrong = 0;
    #pragma omp parallel num_threads(2)
    #pragma omp single
    for (int i = 0; i < N; i++) {
        #pragma omp target map(tofrom: a) nowait
        { a.n += 1; a.m = a.n * 2; }
        #pragma omp target map(tofrom: b) nowait
        { b.n += 2; }
        #pragma omp taskwait
        wrong += a.n != i + 1 || a.m != 2 * (i + 1) || b.n != 2 * (i + 1);
    }
    CHECK(wrong == 0);
}

int main(void)
{
    CHECK(omp_get_num_devices() >= 1);
    absent_to_from_tofrom();
    two_regions_in_one_loop();
    present_and_absent_alternate();
    threads_with_their_own_and_shared();
    another_thread_during_the_region();
    threads_while_the_map_changes();
    nowait_regions();
    return failures();
}
