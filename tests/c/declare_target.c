/* declare target variables on the host device: the program's own variables are the
   device's (pygomp reads .gnu.offload_vars), so they are present from the start, a map
   of them copies nothing, and the region's host code sees what the maps see.
   Run with the expected presence as argv[1] ("1" on the host device). */
#include <stdlib.h>
#include <string.h>
#include "check.h"

int v[20];
double h = 1.5;
static float s[3] = {1, 2, 3};
#pragma omp declare target to(v, h, s)
int k[10];
#pragma omp declare target link(k)
int *gp;
#pragma omp declare target to(gp)

#pragma omp declare target
static void bump(void) { v[7] += 1; }
#pragma omp end declare target

int main(int argc, char **argv)
{
    int expect = argc > 1 ? atoi(argv[1]) : 1, d = omp_get_default_device();
    CHECK(omp_target_is_present(v, d) == expect);
    CHECK(omp_target_is_present(&h, d) == expect);
    CHECK(omp_target_is_present(&s[2], d) == expect);
    CHECK(omp_target_is_present(k, d) == expect);
    if (!expect)
        return failures();
    CHECK(omp_get_mapped_ptr(v, d) == (void *)v);      /* the host's own memory */
    v[5] = 8;
    v[7] = 2;
    #pragma omp target map(always, tofrom: v)           /* copies v onto itself */
    {
        bump();
        v[5] = 3;
    }
    CHECK(v[7] == 3 && v[5] == 3);
    #pragma omp target update to(h)
    #pragma omp target
    { s[1] = (float)(h * 2); }
    #pragma omp target update from(s)
    CHECK(s[1] == 3);
    #pragma omp target enter data map(to: v)           /* present: counts nothing */
    #pragma omp target exit data map(delete: v)
    CHECK(omp_target_is_present(v, d));
    int block[4] = {1, 2, 3, 4};
    gp = block;
    #pragma omp target map(gp[:4])      /* attaches gp, the host's own, for the region */
    {
        for (int i = 0; i < 4; ++i)
            gp[i] += 10;
    }
    CHECK(gp == block);                   /* its value again after the region */
    CHECK(block[0] == 11 && block[3] == 14);
    int copy[20];
    memcpy(copy, v, sizeof v);
    #pragma omp target update from(v)
    CHECK(memcmp(copy, v, sizeof v) == 0);
    return failures();
}
