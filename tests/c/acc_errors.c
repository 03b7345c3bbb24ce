/* One OpenACC error per run, chosen by argv[1]; the program prints the addresses the
   expected message names, then does what fails (libgomp's words on stderr, exit
   status 1). */
#include <openacc.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int a[16] = {0};
    printf("%p\n", (void *)a);
    fflush(stdout);
    if (!strcmp(mode, "present")) {                /* present clause, absent data */
        #pragma acc parallel present(a)
        a[0] = 1;
    } else if (!strcmp(mode, "update")) {          /* update of absent data */
        acc_update_self(a, sizeof a);
    } else if (!strcmp(mode, "outside")) {         /* copyout of more than is mapped */
        acc_copyin(a, 32);
        acc_copyout(a, sizeof a);
    } else if (!strcmp(mode, "unmap")) {           /* acc_unmap_data of acc_copyin's data */
        acc_copyin(a, sizeof a);
        acc_unmap_data(a);
    } else if (!strcmp(mode, "free")) {            /* acc_free of mapped device memory */
        void *d = acc_malloc(sizeof a);
        printf("%p\n", d);
        fflush(stdout);
        acc_map_data(a, d, sizeof a);
        acc_free(d);
    } else if (!strcmp(mode, "attach")) {          /* acc_attach in unmapped memory */
        int *p = a;
        acc_attach((void **)&p);
    } else if (!strcmp(mode, "async")) {           /* a queue that does not exist */
        acc_wait(-5);
    } else if (!strcmp(mode, "device")) {          /* a device number out of range */
        acc_set_device_num(5, acc_device_not_host);
    } else {
        fprintf(stderr, "acc_errors: unknown mode '%s'\n", mode);
        return 2;
    }
    return failures();
}
