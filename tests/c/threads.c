/* Several threads offload to one device at once, each with its own data. */
#include "check.h"

int main(void)
{
    enum { T = 4, LEN = 4096, ROUNDS = 25 };
    static double data[T][LEN];
    int dev = omp_get_default_device();
    #pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num();
        double *a = data[t];
        for (int i = 0; i < LEN; i++) a[i] = i;
        for (int r = 0; r < ROUNDS; r++) {
            #pragma omp target enter data map(to: a[0:LEN])
            #pragma omp target map(tofrom: a[0:LEN])
            for (int i = 0; i < LEN; i++) a[i] += t + 1;
            #pragma omp target map(alloc: a[0:LEN])
            a[0] += 0.5;
            CHECK(omp_target_is_present(a, dev));
            #pragma omp target exit data map(from: a[0:LEN])
        }
        CHECK(!omp_target_is_present(a, dev));
    }
    for (int t = 0; t < T; t++) {
        CHECK(data[t][0] == ROUNDS * (t + 1.5));
        CHECK(data[t][LEN - 1] == LEN - 1 + ROUNDS * (t + 1));
    }
    return failures();
}
