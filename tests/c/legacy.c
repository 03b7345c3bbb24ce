/* Entry points that older compilers' and other languages' binaries call, called by hand
   as they would: GCC 5's GOMP_target, GOMP_target_data and GOMP_target_update (8-bit map
   kinds), GOACC_parallel (launch dimensions as arguments), omp_pause_resource(_all),
   Fortran's names of the device routines, and GCC 5's and 6's unversioned
   GOMP_offload_register/unregister (`legacy table`, `legacy forget`: a table of pygomp's
   target type that is not pygomp's, registered before the runtime starts, and then
   unregistered in the second).  Run on the host device, memory separate
   from the host's, so a missing copy shows. */
#include <stdint.h>
#include <string.h>
#include "check.h"

void GOMP_target(int, void (*)(void *), const void *, size_t, void **, size_t *,
                 unsigned char *);
void GOMP_target_data(int, const void *, size_t, void **, size_t *, unsigned char *);
void GOMP_target_end_data(void);
void GOMP_target_update(int, const void *, size_t, void **, size_t *, unsigned char *);
void GOACC_parallel(int, void (*)(void *), size_t, void **, size_t *, unsigned short *, int,
                    int, int, int, int, ...);
int32_t omp_get_num_devices_(void);
int32_t omp_get_default_device_(void);
void omp_set_default_device_(const int32_t *);
void omp_set_default_device_8_(const int64_t *);
int32_t omp_is_initial_device_(void);
int32_t omp_get_initial_device_(void);
int32_t omp_get_device_num_(void);
int32_t omp_pause_resource_(const int32_t *, const int32_t *);
int32_t omp_pause_resource_all_(const int32_t *);
int acc_get_num_devices_h_(const int *);
void GOMP_offload_register(const void *, int, const void *);
void GOMP_offload_unregister(const void *, int, const void *);

enum { ALLOC = 0, TO = 1, FROM = 2, TOFROM = 3 };
#define KIND8(k, align_log2) ((unsigned char)((k) | (align_log2) << 3))
#define N 16

static int seen_initial = -1;

static void add_one(void *data)                 /* a region: its map items' addresses */
{
    int *a = ((int **)data)[0];
    for (int i = 0; i < N; ++i)
        a[i] += 1;
    seen_initial = omp_is_initial_device();
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        static const void *host_table[4];
        static const char data[16] = "not a table";
        GOMP_offload_register(host_table, 0x7067, data);
        if (!strcmp(argv[1], "forget"))
            GOMP_offload_unregister(host_table, 0x7067, data);
        printf("%p\n", (void *)data);
        fflush(stdout);
        CHECK(omp_get_num_devices() >= 1);     /* the runtime starts: the tables go to it */
        return failures();
    }
    int a[N], d = omp_get_default_device();
    for (int i = 0; i < N; ++i)
        a[i] = i;
    void *h[1] = {a};
    size_t s[1] = {sizeof a};

    unsigned char tofrom[1] = {KIND8(TOFROM, 2)}, from[1] = {KIND8(FROM, 2)};
    GOMP_target_data(d, NULL, 1, h, s, tofrom);
    CHECK(omp_target_is_present(a, d));
    GOMP_target(d, add_one, NULL, 1, h, s, tofrom);   /* present: copies nothing */
    CHECK(seen_initial == 0);
    CHECK(a[3] == 3);                                   /* still the host's value */
    GOMP_target_update(d, NULL, 1, h, s, from);
    CHECK(a[3] == 4);
    GOMP_target_end_data();
    CHECK(!omp_target_is_present(a, d) && a[15] == 16);

    unsigned short acc_kinds[1] = {TOFROM | 2 << 8};
    GOACC_parallel(~0, add_one, 1, h, s, acc_kinds, 1, 1, 1, -2, 0);
    CHECK(a[0] == 2 && a[15] == 17);

    int n = omp_get_num_devices();
    CHECK(omp_pause_resource(omp_pause_soft, n) == 0);           /* the initial device's threads */
    CHECK(omp_pause_resource(omp_pause_soft, 0) == 0);
    CHECK(omp_pause_resource(omp_pause_soft, n + 1) == -1 && omp_pause_resource(omp_pause_soft, -5) == -1);
    CHECK(omp_pause_resource_all(omp_pause_hard) == 0);

    int32_t kind = 1, num = n + 1, zero = 0;
    int64_t initial = n;
    CHECK(omp_get_num_devices_() == n && n >= 1);
    CHECK(omp_get_initial_device_() == n && omp_get_default_device_() == d);
    CHECK(omp_is_initial_device_() == 1 && omp_get_device_num_() == n);
    omp_set_default_device_(&zero);
    CHECK(omp_get_default_device() == 0);
    omp_set_default_device_8_(&initial);
    CHECK(omp_get_default_device() == n);
    omp_set_default_device_(&zero);
    CHECK(omp_pause_resource_(&kind, &num) == -1 && omp_pause_resource_all_(&kind) == 0);
    int not_host = 4;
    CHECK(acc_get_num_devices_h_(&not_host) == n);
    return failures();
}
