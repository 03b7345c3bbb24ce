/* One error per run, chosen by argv[1]; the program prints the addresses the expected
   message names, then does what fails (libgomp's words on stderr, exit status 1). */
#include <stdlib.h>
#include <string.h>
#include "check.h"

struct S { int x; int *p; };

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int a[16] = {0};
    if (!strcmp(mode, "extend")) {                 /* a larger section of a mapped one */
        #pragma omp target enter data map(to: a[4:4])
        printf("%p %p %p %p\n", (void *)&a[0], (void *)&a[8], (void *)&a[4], (void *)&a[8]);
        fflush(stdout);
        #pragma omp target map(tofrom: a[0:8])
        a[0] = 1;
    } else if (!strcmp(mode, "use_device_ptr")) {  /* use_device_ptr of unmapped memory */
        int b[4], *p = b;
        printf("%p\n", (void *)p);
        fflush(stdout);
        #pragma omp target data map(alloc: a[0:1]) use_device_ptr(p)
        p[0] = 1;
    } else if (!strcmp(mode, "attach_null")) {     /* a mapped struct's NULL pointer */
        struct S s = {1, NULL};
        printf("%p\n", (void *)&s.p);
        fflush(stdout);
        #pragma omp target enter data map(to: s)
        #pragma omp target enter data map(to: s.p[0:4])
    } else if (!strcmp(mode, "attach_skipped")) {  /* s.p[:4] and s.x mapped, s.p not */
        int four[4] = {1, 2, 3, 4};
        struct S s = {1, four};
        printf("%p\n", (void *)&s.p);
        fflush(stdout);
        #pragma omp target map(to: s.x, s.p[0:4])
        { }
    } else if (!strcmp(mode, "fallback")) {        /* a device with no image of the region */
        int host = 0;
        #pragma omp target map(tofrom: host)
        host = omp_is_initial_device();
        printf("ran on the initial device: %d\n", host);
    } else if (!strcmp(mode, "device")) {          /* a device number that does not exist */
        #pragma omp target device(7) map(tofrom: a)
        a[0] = 1;
        printf("ran: %d\n", a[0]);
    } else if (!strcmp(mode, "leftover")) {        /* still mapped at the end */
        printf("%p %p\n", (void *)&a[0], (void *)&a[16]);
        #pragma omp target enter data map(to: a)
    } else {
        fprintf(stderr, "errors: unknown mode '%s'\n", mode);
        return 2;
    }
    return failures();
}
