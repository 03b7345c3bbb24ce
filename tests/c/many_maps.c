/* Constructs with n map items for every n from 0 to MAX, with random kinds (a seeded
   generator), called through GCC 12's entry points as compiled code calls them: target
   regions, target data, enter/exit data and update, each at random with nowait and a
   depend clause.  Every value is checked.  Two pragma regions with 33 and 37 items come
   first.

   argv[1] "separate": the device has its own memory (the shim's host device), so what
   a region writes to a `to` or `alloc` item stays on the device.  Without it, memory is
   shared (libgomp's host fallback) and every write reaches the host. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

/* gomp-constants.h (GCC 12) */
enum { ALLOC = 0, TO = 1, FROM = 2, TOFROM = 3, DELETE = 7, RELEASE = 23 };
#define ALIGN_INT (2 << 8)          /* log2 of an int's alignment, in the high byte */
#define FLAG_NOWAIT 1
#define FLAG_EXIT_DATA 2
#define DEVICE_ICV (-1)
#define MAX 200

void GOMP_target_ext(int, void (*)(void *), size_t, void **, size_t *, unsigned short *,
                     unsigned, void **, void **);
void GOMP_target_data_ext(int, size_t, void **, size_t *, unsigned short *);
void GOMP_target_end_data(void);
void GOMP_target_update_ext(int, size_t, void **, size_t *, unsigned short *, unsigned,
                            void **);
void GOMP_target_enter_exit_data(int, size_t, void **, size_t *, unsigned short *, unsigned,
                                 void **);

static int separate;
static int n_items;
static int *buf[MAX];               /* item i: buf[i][0..len[i]) */
static size_t len[MAX], sizes[MAX];
static void *addrs[MAX];
static unsigned short kinds[MAX];
static int expect[MAX];             /* the pattern a region finds in item i, -1: any */
static int put;                     /* the pattern a region writes to every item */
static int bad;                     /* wrong values seen inside regions */
static int token;                   /* what the depend clauses name */
static void *no_args[1];

static uint64_t state = 0x9e3779b97f4a7c15u;

static unsigned rnd(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (unsigned)(state >> 11);
}

static int pick(const int *choices, int count)
{
    return choices[rnd() % count];
}

static int value(int i, size_t k, int pattern)
{
    return pattern * 1000000 + i * 100 + (int)k;
}

static void region(void *p)
{
    int **dev = p;
    for (int i = 0; i < n_items; i++)
        for (size_t k = 0; k < len[i]; k++) {
            if (expect[i] >= 0 && dev[i][k] != value(i, k, expect[i]))
                __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
            dev[i][k] = value(i, k, put);
        }
}

static void fill(int n, int pattern)
{
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < len[i]; k++)
            buf[i][k] = value(i, k, pattern);
}

/* The host's values: item i holds pattern want[i]. */
static void check_host(int n, const int *want, const char *step)
{
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < len[i]; k++)
            if (buf[i][k] != value(i, k, want[i])) {
                fprintf(stderr, "n=%d %s: item %d [%zu] is %d, not %d: check failed\n", n,
                        step, i, k, buf[i][k], value(i, k, want[i]));
                failed++;
                return;
            }
    if (bad) {
        fprintf(stderr, "n=%d %s: %d wrong value(s) in the region: check failed\n", n, step,
                bad);
        failed++;
        bad = 0;
    }
}

static void check_unmapped(int n, const char *step)
{
    if (!separate)
        return;
    for (int i = 0; i < n; i++)
        if (omp_target_is_present(buf[i], omp_get_default_device())) {
            fprintf(stderr, "n=%d %s: item %d is still mapped: check failed\n", n, step, i);
            failed++;
            return;
        }
}

static void set_kinds(int n, const int *choices, int count, int *chosen)
{
    for (int i = 0; i < n; i++) {
        chosen[i] = pick(choices, count);
        kinds[i] = chosen[i] | ALIGN_INT;
    }
}

static unsigned short present_kinds[MAX];     /* alloc: already mapped, nothing copied */

/* A region over every item, at random deferred (nowait) and with a depend clause. */
static void run_region(int n, unsigned short *k)
{
    void *dep[3] = {(void *)1, (void *)1, &token};    /* one inout dependence */
    unsigned flags = rnd() % 2 ? FLAG_NOWAIT : 0;
    GOMP_target_ext(DEVICE_ICV, region, n, addrs, sizes, k, flags, rnd() % 2 ? dep : NULL,
                    no_args);
    #pragma omp taskwait
}

static void enter_exit(int n, unsigned flags)
{
    void *dep[3] = {(void *)1, (void *)1, &token};
    if (rnd() % 2)
        flags |= FLAG_NOWAIT;
    GOMP_target_enter_exit_data(DEVICE_ICV, n, addrs, sizes, kinds, flags,
                                rnd() % 2 ? dep : NULL);
    #pragma omp taskwait
}

static void update(int n)
{
    void *dep[3] = {(void *)1, (void *)1, &token};
    GOMP_target_update_ext(DEVICE_ICV, n, addrs, sizes, kinds, rnd() % 2 ? FLAG_NOWAIT : 0,
                           rnd() % 2 ? dep : NULL);
    #pragma omp taskwait
}

static void one_size(int n)
{
    static const int region_kinds[] = {TO, FROM, TOFROM, ALLOC};
    static const int enter_kinds[] = {TO, ALLOC};
    static const int update_kinds[] = {TO, FROM};
    static const int exit_kinds[] = {FROM, RELEASE, DELETE};
    int k[MAX] = {0}, up[MAX] = {0}, want[MAX] = {0};
    n_items = n;
    for (int i = 0; i < n; i++) {
        len[i] = 1 + rnd() % 16;
        sizes[i] = len[i] * sizeof(int);
        addrs[i] = buf[i] = malloc(sizes[i]);
        present_kinds[i] = ALLOC | ALIGN_INT;
    }

    /* a target region */
    fill(n, 1);
    set_kinds(n, region_kinds, 4, k);
    put = 2;
    for (int i = 0; i < n; i++) {
        expect[i] = k[i] & TO ? 1 : -1;
        want[i] = k[i] & FROM || !separate ? 2 : 1;
    }
    run_region(n, kinds);
    check_host(n, want, "target");
    check_unmapped(n, "target");

    /* target data, a region inside it */
    fill(n, 3);
    set_kinds(n, region_kinds, 4, k);
    GOMP_target_data_ext(DEVICE_ICV, n, addrs, sizes, kinds);
    fill(n, 5);                       /* not updated: the device keeps 3 */
    put = 4;
    for (int i = 0; i < n; i++) {
        expect[i] = k[i] & TO ? (separate ? 3 : 5) : -1;
        want[i] = k[i] & FROM || !separate ? 4 : 5;
    }
    run_region(n, present_kinds);
    GOMP_target_end_data();
    check_host(n, want, "target data");
    check_unmapped(n, "target data");

    /* enter data, update to, a region, update, a region, exit data */
    fill(n, 6);
    set_kinds(n, enter_kinds, 2, k);
    enter_exit(n, 0);
    fill(n, 7);
    for (int i = 0; i < n; i++)
        kinds[i] = TO | ALIGN_INT;
    update(n);
    put = 8;
    for (int i = 0; i < n; i++)
        expect[i] = 7;
    run_region(n, present_kinds);
    set_kinds(n, update_kinds, 2, up);
    update(n);
    for (int i = 0; i < n; i++)
        want[i] = up[i] == FROM || !separate ? 8 : 7;
    check_host(n, want, "update");
    put = 9;
    for (int i = 0; i < n; i++)
        expect[i] = separate ? want[i] : 8;
    run_region(n, present_kinds);
    set_kinds(n, exit_kinds, 3, k);
    enter_exit(n, FLAG_EXIT_DATA);
    for (int i = 0; i < n; i++)
        if (k[i] == FROM || !separate)
            want[i] = 9;
    check_host(n, want, "exit data");
    check_unmapped(n, "exit data");

    for (int i = 0; i < n; i++)
        free(buf[i]);
}

/* The same sizes as compiled pragmas: 33 and 37 scalars, tofrom. */
#define L33(f) f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8), f(9), f(10), f(11), \
    f(12), f(13), f(14), f(15), f(16), f(17), f(18), f(19), f(20), f(21), f(22), f(23),   \
    f(24), f(25), f(26), f(27), f(28), f(29), f(30), f(31), f(32)
#define L37(f) L33(f), f(33), f(34), f(35), f(36)
#define NAME(i) v##i
#define ADDR(i) &v##i
#define DECL(i) v##i = i

static void pragma_regions(void)
{
    int L37(DECL);
    int *all[] = {L37(ADDR)};
    #pragma omp target map(tofrom: L33(NAME))
    {
        int *dev[] = {L33(ADDR)};
        for (int i = 0; i < 33; i++)
            *dev[i] += 100;
    }
    #pragma omp target map(tofrom: L37(NAME))
    {
        int *dev[] = {L37(ADDR)};
        for (int i = 0; i < 37; i++)
            *dev[i] += 1000;
    }
    for (int i = 0; i < 37; i++)
        CHECK(*all[i] == i + 1000 + (i < 33 ? 100 : 0));
}

int main(int argc, char **argv)
{
    separate = argc > 1 && !strcmp(argv[1], "separate");
    pragma_regions();
    for (int n = 0; n <= MAX; n++)
        one_size(n);
    int r = failures();
    if (!r)
        printf("many maps ok\n");
    return r;
}
