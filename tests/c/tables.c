/* Offload tables in a library that the program loads and unloads: one registered and
   unregistered before the runtime starts, one registered after it has (argv[1]: a
   library built from `python -m pygomp build`'s file, with saxpy). */
#include <dlfcn.h>
#include <stdint.h>
#include "check.h"

typedef void saxpy_t(float, const float *, int64_t, float *, int64_t);

static void run_saxpy(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW);
    CHECK(h != NULL);
    saxpy_t *saxpy = (saxpy_t *)dlsym(h, "saxpy");
    float x[4] = {1, 2, 3, 4}, y[4] = {1, 1, 1, 1};
    saxpy(2.0f, x, 4, y, 4);
    CHECK(y[0] == 3 && y[3] == 9);
    dlclose(h);                               /* its destructor unregisters the table */
}

int main(int argc, char **argv)
{
    void *h = dlopen(argv[1], RTLD_NOW);      /* registered before Python starts ... */
    CHECK(h != NULL);
    dlclose(h);                               /* ... and gone before it does */
    CHECK(omp_get_num_devices() >= 1);        /* Python starts here */
    run_saxpy(argv[1]);                       /* registered at once, then unregistered */
    run_saxpy(argv[1]);                       /* and again */
    return failures();
}
