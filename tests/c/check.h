/* CHECK(cond): count and report a failed check with its line; main returns failures(). */
#include <stdio.h>
#include <omp.h>

static int failed;
#define CHECK(c) ((c) ? (void)0 : (void)(failed++, fprintf(stderr, "%s:%d: check failed: %s\n", \
                                                           __FILE__, __LINE__, #c)))
static int failures(void)
{
    if (failed)
        fprintf(stderr, "%d check(s) failed\n", failed);
    return failed != 0;
}

/* OpenMP 5.1 routines that GCC 12's libgomp lacks and libpygomp.so has: weak, so that
   the programs link without the library. */
void *omp_get_mapped_ptr(const void *ptr, int device_num) __attribute__((weak));
int omp_target_is_accessible(const void *ptr, size_t size, int device_num)
    __attribute__((weak));
int omp_target_memcpy_async(void *dst, const void *src, size_t length, size_t dst_offset,
                            size_t src_offset, int dst_device_num, int src_device_num,
                            int depobj_count, omp_depend_t *depobj_list) __attribute__((weak));
