/* A C library that Python loads with ctypes after pygomp.csrc.shim.load(): its target
   regions run through the runtime that Python already uses. */
#include <omp.h>

int c_is_present(const void *p, int device)
{
    return omp_target_is_present(p, device);
}

void c_scale(double *a, int n, double f)
{
    #pragma omp target map(tofrom: a[0:n])
    for (int i = 0; i < n; i++)
        a[i] *= f;
}

void c_enter(double *a, int n)
{
    #pragma omp target enter data map(to: a[0:n])
}

void c_exit(double *a, int n)
{
    #pragma omp target exit data map(from: a[0:n])
}

int c_default_device(void)
{
    int d = -1;
    #pragma omp target map(from: d)
    d = omp_get_device_num();
    return d;
}
