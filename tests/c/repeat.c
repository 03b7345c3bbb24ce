/* Target regions in loops on the host device: from the second time round a region
   reuses what it looked up (present data counted, small absent items made anew each
   time).  Host memory is checked after every region. */
#include "check.h"

#define N 50
struct P { double x, y, z; int n; };

static void small_to_is_copied_in_each_time(void)
{
    struct P p = {1, 2, 3, 0};
    int dev = omp_get_default_device();
    for (int i = 0; i < N; i++) {
        int seen = -1;
        p.n = i;                                    /* a host change: copied in again */
        #pragma omp target map(to: p) map(from: seen)
        { seen = p.n; p.n = -7; p.x = -7; }
        CHECK(seen == i);
        CHECK(p.n == i && p.x == 1);                /* to: nothing comes back */
        CHECK(!omp_target_is_present(&p, dev));     /* made and removed each time */
    }
}

static void from_tofrom_alloc(void)
{
    int a[4] = {0}, b[4] = {0}, c[4] = {5, 5, 5, 5};
    int dev = omp_get_default_device();
    for (int i = 0; i < N; i++) {
        #pragma omp target map(from: a) map(tofrom: b) map(alloc: c)
        for (int j = 0; j < 4; j++) { a[j] = i + j; b[j] += 1; c[j] = -1; }
        CHECK(a[0] == i && a[3] == i + 3);
        CHECK(b[0] == i + 1 && b[3] == i + 1);
        CHECK(c[0] == 5 && c[3] == 5);              /* alloc: nothing copied back */
        CHECK(!omp_target_is_present(a, dev) && !omp_target_is_present(b, dev));
    }
}

static void present_data_is_counted(void)
{
    int a[4] = {1, 1, 1, 1};
    int dev = omp_get_default_device();
    #pragma omp target enter data map(to: a)
    for (int i = 0; i < N; i++) {
        a[1] = 100 + i;                             /* not copied: a is present */
        int seen = 0;
        #pragma omp target map(tofrom: a) map(from: seen)
        { seen = a[1]; a[0] += 1; }
        CHECK(seen == 1);
        CHECK(a[0] == 1);                           /* the count stays > 0: no copy back */
        CHECK(omp_target_is_present(a, dev));
    }
    #pragma omp target exit data map(from: a)
    CHECK(a[0] == 1 + N && a[1] == 1);              /* the device's copy, at last */
    CHECK(!omp_target_is_present(a, dev));
}

static void data_region_around_the_loop(void)
{
    struct P p = {0, 0, 0, 0};
    #pragma omp target data map(tofrom: p)
    {
        for (int i = 0; i < N; i++) {
            #pragma omp target map(tofrom: p)
            p.n += 1;
            CHECK(p.n == 0);                        /* count 2 -> 1: not copied back */
        }
    }
    CHECK(p.n == N);                                /* the data region's end copies back */
}

static void the_map_changes_between_calls(void)
{
    int a[4] = {0, 0, 0, 0};
    int dev = omp_get_default_device();
    for (int i = 0; i < N; i++) {
        int kept = i % 2;
        if (kept) {
            #pragma omp target enter data map(to: a)
        }
        a[2] = i;
        #pragma omp target map(tofrom: a)
        { a[3] = a[2] * 2; }
        if (kept) {
            CHECK(a[3] == 0);                       /* present: nothing copied back */
            CHECK(omp_target_is_present(a, dev));
            #pragma omp target exit data map(from: a)
            CHECK(a[2] == i - 1 && a[3] == 2 * (i - 1));   /* what was entered */
        } else {
            CHECK(a[3] == 2 * i);                   /* absent: copied in and back */
        }
        CHECK(!omp_target_is_present(a, dev));
        a[3] = 0;
    }
}

static void always_and_delete(void)
{
    int a[4] = {0, 0, 0, 0};
    int dev = omp_get_default_device();
    #pragma omp target enter data map(to: a)
    for (int i = 0; i < N; i++) {
        a[0] = i;
        #pragma omp target map(always, tofrom: a)
        a[1] = a[0] + 1;
        CHECK(a[1] == i + 1);                       /* always: both ways, though present */
    }
    #pragma omp target enter data map(to: a)        /* count 2 */
    #pragma omp target exit data map(delete: a)     /* delete: gone whatever the count */
    CHECK(!omp_target_is_present(a, dev));
    for (int i = 0; i < N; i++) {
        a[0] = i;
        #pragma omp target map(to: a)
        a[0] = -1;
        CHECK(a[0] == i);
    }
}

static void scalars_change_each_time(void)
{
    double out[2] = {0, 0};
    struct P p = {1, 0, 0, 0};
    for (int i = 0; i < N; i++) {
        double f = i * 0.5;
        #pragma omp target map(to: p) map(from: out) firstprivate(f)
        { out[0] = p.x + f; out[1] = f; }
        CHECK(out[0] == 1 + i * 0.5 && out[1] == i * 0.5);
    }
}

static void threads_share_what_they_map(void)
{
    struct P shared = {3, 0, 0, 0};
    int wrong = 0;
    #pragma omp parallel num_threads(4) reduction(+: wrong)
    {
        int mine[2] = {0, 0};
        for (int i = 0; i < N; i++) {
            #pragma omp target map(to: shared) map(tofrom: mine)
            { mine[0] += (int)shared.x; mine[1] += 1; }
            wrong += mine[0] != 3 * (i + 1) || mine[1] != i + 1;
        }
    }
    CHECK(wrong == 0);
    CHECK(!omp_target_is_present(&shared, omp_get_default_device()));
}

int main(void)
{
    CHECK(omp_get_num_devices() >= 1);
    small_to_is_copied_in_each_time();
    from_tofrom_alloc();
    present_data_is_counted();
    data_region_around_the_loop();
    the_map_changes_between_calls();
    always_and_delete();
    scalars_change_each_time();
    threads_share_what_they_map();
    return failures();
}
