/* OpenACC's runtime routines, built with gcc -fopenacc, on the host device (memory of
   its own): devices, memory, the dynamic data routines and their finalize and async
   forms, map/unmap, memcpy, attach/detach. */
#include <openacc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define N 32
#define ACC_DEVICE_HOST_NONSHM 3        /* pygomp's host plugin, as a request: the CPU,
                                           memory of its own; it answers acc_device_host */

static void devices(void)
{
    CHECK(acc_get_device_type() == acc_device_host);
    CHECK(acc_get_num_devices(ACC_DEVICE_HOST_NONSHM) == 1);
    CHECK(acc_get_num_devices(acc_device_not_host) == 1);
    CHECK(acc_get_num_devices(acc_device_host) == 1);
    CHECK(acc_get_num_devices(acc_device_nvidia) == 0);
    CHECK(acc_get_device_num(acc_device_not_host) == 0);
    CHECK(acc_on_device(acc_device_host) && !acc_on_device(acc_device_not_host));
    CHECK(!strcmp(acc_get_property_string(0, acc_device_host, acc_property_vendor), "GNU"));
    CHECK(!strncmp(acc_get_property_string(0, acc_device_not_host, acc_property_name),
                   "host (host plugin)", 18));
    CHECK(acc_get_property_string(0, acc_device_not_host, (acc_device_property_t)-5) == 0);
    CHECK(acc_get_property(0, acc_device_not_host, acc_property_name) == 0);
    int in_region[3] = {0, 0, 0};
    int (*volatile on)(acc_device_t) = acc_on_device;   /* not the builtin: the library's */
    #pragma acc parallel copyout(in_region)
    {
        in_region[0] = on(acc_device_not_host);
        in_region[1] = on(ACC_DEVICE_HOST_NONSHM);
        in_region[2] = on(acc_device_host);
    }
    CHECK(!in_region[0] && in_region[1] && in_region[2]);     /* host code, as gcc's */
    acc_set_device_type(acc_device_host);              /* OpenACC's host: shared memory */
    CHECK(acc_get_device_type() == acc_device_host);
    int a[4] = {1, 2, 3, 4};
    CHECK(acc_copyin(a, sizeof a) == a && acc_is_present(a, sizeof a));
    #pragma acc parallel
    a[0] = 10;
    CHECK(a[0] == 10);
    acc_set_device_type(ACC_DEVICE_HOST_NONSHM);
    CHECK(acc_get_device_type() == acc_device_host && !acc_is_present(a, sizeof a));
}

static void dynamic_routines(void)
{
    double v[N];
    for (int i = 0; i < N; i++) v[i] = i;
    double *d = acc_copyin(v, sizeof v);
    CHECK(d && (void *)d != (void *)v && acc_deviceptr(v) == d);
    CHECK(acc_hostptr(d + 3) == &v[3]);
    CHECK(acc_create(v, sizeof v) == d);               /* present: one more reference */
    CHECK(acc_present_or_copyin(&v[2], 8) == d + 2 && acc_pcreate(v, 8) == d);
    v[0] = -1;
    acc_update_device(v, sizeof v);
    v[0] = -2;
    acc_update_self(&v[1], 8);                          /* only v[1] comes back */
    CHECK(v[0] == -2);
    acc_copyout(v, sizeof v);                           /* 4 references -> 3 */
    acc_delete(v, sizeof v);
    acc_copyout(v, sizeof v);
    CHECK(acc_is_present(v, sizeof v) && v[0] == -2);
    acc_copyout(v, sizeof v);                           /* the last one: copied back */
    CHECK(!acc_is_present(v, sizeof v) && v[0] == -1);
    acc_copyin(v, sizeof v);
    acc_copyin(v, sizeof v);
    v[0] = 5;
    acc_copyout_finalize(v, sizeof v);
    CHECK(!acc_is_present(v, sizeof v) && v[0] == -1);
    acc_create(v, sizeof v);
    acc_create(v, sizeof v);
    acc_delete_finalize(v, sizeof v);
    CHECK(!acc_is_present(v, sizeof v));
    CHECK(!acc_is_present(v, 0) && !acc_is_present(NULL, 8));
    acc_copyin(v, 16);
    CHECK(acc_is_present(v, 16) && !acc_is_present(v, 24) && !acc_is_present(&v[1], 16));
    acc_delete(v, 16);
}

static void memory_map_memcpy(void)
{
    int h[N], back[N];
    for (int i = 0; i < N; i++) h[i] = i;
    void *d = acc_malloc(sizeof h);
    CHECK(d != NULL && acc_malloc(0) == NULL);
    acc_memcpy_to_device(d, h, sizeof h);
    acc_map_data(h, d, sizeof h);                       /* h's device copy is now d */
    CHECK(acc_is_present(h, sizeof h) && acc_deviceptr(h) == d && acc_hostptr(d) == h);
    #pragma acc parallel loop present(h)
    for (int i = 0; i < N; i++) h[i] *= 3;
    CHECK(h[5] == 5);                                   /* present: nothing copied back */
    acc_copyin(h, sizeof h);                            /* infinite count: stays */
    acc_copyout_finalize(h, sizeof h);
    CHECK(acc_is_present(h, sizeof h) && h[5] == 5);
    acc_memcpy_from_device(back, d, sizeof back);
    CHECK(back[5] == 15);
    acc_unmap_data(h);
    CHECK(!acc_is_present(h, sizeof h));
    acc_free(d);                                        /* the caller's memory: still valid */
}

struct S { int n; int *p; };

static void attach_detach_routines(void)
{
    int x[4] = {1, 2, 3, 4};
    struct S s = {4, x};
    acc_copyin(&s, sizeof s);
    acc_copyin(x, sizeof x);
    acc_attach((void **)&s.p);
    acc_attach((void **)&s.p);                          /* attach count 2 */
    printf("attach %p %p %p %p\n", (void *)&s.p, acc_deviceptr(&s.p), acc_deviceptr(&s),
           acc_deviceptr(x));                           /* GOMP_DEBUG's addresses */
    #pragma acc parallel present(s)
    for (int i = 0; i < s.n; i++) s.p[i] += 10;
    acc_detach((void **)&s.p);
    struct S seen;
    acc_memcpy_from_device(&seen, acc_deviceptr(&s), sizeof seen);
    CHECK(seen.p == acc_deviceptr(x));                  /* still attached once */
    printf("detach %p\n", (void *)x);
    acc_detach_finalize((void **)&s.p);
    acc_memcpy_from_device(&seen, acc_deviceptr(&s), sizeof seen);
    CHECK(seen.p == x);                                 /* the host pointer again */
    acc_copyout(x, sizeof x);
    acc_delete(&s, sizeof s);
    CHECK(x[0] == 11 && x[3] == 14);
}

static void async_forms(void)
{
    int a[N], b[N];
    for (int i = 0; i < N; i++) { a[i] = i; b[i] = 0; }
    acc_copyin_async(a, sizeof a, 1);
    acc_create_async(b, sizeof b, 1);
    #pragma acc parallel loop present(a, b) async(1)
    for (int i = 0; i < N; i++) b[i] = a[i] + 1;
    acc_update_self_async(b, sizeof b, 1);
    acc_wait(1);
    CHECK(b[N - 1] == N && acc_async_test(1));
    acc_delete_async(a, sizeof a, 2);
    acc_copyout_finalize_async(b, sizeof b, 2);
    acc_wait_all();
    CHECK(!acc_is_present(a, sizeof a) && !acc_is_present(b, sizeof b) && acc_async_test_all());
    void *d = acc_malloc(sizeof a);
    acc_memcpy_to_device_async(d, a, sizeof a, 3);
    acc_memcpy_from_device_async(b, d, sizeof b, 3);
    acc_wait(3);
    CHECK(memcmp(a, b, sizeof a) == 0);
    acc_free(d);
}

/* OpenACC's CUDA interop on devices that are not CUDA's: libgomp's answers (NULL; for
   acc_set_cuda_stream 0 for a bad queue or stream, else -1). */
static void cuda_interop(void)
{
    int stream;
    CHECK(acc_get_current_cuda_device() == NULL && acc_get_current_cuda_context() == NULL);
    CHECK(acc_get_cuda_stream(acc_async_sync) == NULL && acc_get_cuda_stream(-7) == NULL);
    CHECK(acc_set_cuda_stream(0, NULL) == 0 && acc_set_cuda_stream(-7, &stream) == 0);
    CHECK(acc_set_cuda_stream(1, &stream) == -1);
    acc_copyin_async(&stream, sizeof stream, 1);       /* queue 1 exists: still none */
    acc_wait(1);
    CHECK(acc_get_cuda_stream(1) == NULL && acc_get_current_cuda_device() == NULL);
    acc_delete(&stream, sizeof stream);
}

int main(void)
{
    cuda_interop();
    devices();
    dynamic_routines();
    memory_map_memcpy();
    attach_detach_routines();
    async_forms();
    return failures();
}
