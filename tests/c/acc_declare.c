/* acc declare on global variables, on the host device: the program's own variables are
   the device's (pygomp reads .gnu.offload_vars), present from the start; acc_deviceptr
   gives their host address, and acc_map_data of that device address is refused. */
#include <openacc.h>
#include <string.h>
#include "check.h"

int b[8];
#pragma acc declare create(b)
double d[4] = {1, 2, 3, 4};
#pragma acc declare copyin(d)

int main(int argc, char **argv)
{
    CHECK(acc_is_present(b, sizeof b));
    CHECK(acc_is_present(&d[1], sizeof(double)));
    CHECK(acc_deviceptr(b) == (void *)b);
    CHECK(acc_hostptr(d) == (void *)d);
    #pragma acc parallel present(b, d)
    for (int i = 0; i < 8; ++i)
        b[i] = (int)d[i % 4] * 2;
    #pragma acc update self(b)
    CHECK(b[5] == 4);
    acc_copyout(b, sizeof b);                      /* an infinite count: stays */
    CHECK(acc_is_present(b, sizeof b));
    if (argc > 1 && strcmp(argv[1], "map") == 0) {
        double var;
        acc_map_data(&var, acc_deviceptr(d), sizeof var);   /* fails: already mapped */
    }
    return failures();
}
