/* One empty target region: what a program pays to start the shim. */
int main(void)
{
    int x = 0;
    #pragma omp target map(tofrom: x)
    x += 1;
    return x != 1;
}
