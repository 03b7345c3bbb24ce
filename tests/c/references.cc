// C++ references in mapped structs: GCC maps the referenced object and rewrites the
// reference's device copy (GOMP_MAP_ALWAYS_POINTER) to its device address.
#include <cstdlib>
#include "check.h"

struct Holder {
    int *p;
    int &r;
    explicit Holder(int &x) : p(nullptr), r(x) {}
};

int main()
{
    int x = 3;
    Holder h(x);
    #pragma omp target map(tofrom: h.r)
    h.r += 10;
    CHECK(x == 13);
    #pragma omp target enter data map(to: h.r)
    x = 100;                                       // host change, not copied
    int seen = 0;
    #pragma omp target map(tofrom: h.r) map(from: seen)
    seen = h.r;
    CHECK(seen == 13);
    #pragma omp target exit data map(from: h.r)
    CHECK(x == 13);
    int *q = static_cast<int *>(std::malloc(4 * sizeof(int)));
    int *&rq = q;                                  // a reference to a pointer
    #pragma omp target map(tofrom: rq[0:4])
    for (int i = 0; i < 4; i++) rq[i] = i * i;
    CHECK(q[3] == 9);
    std::free(q);
    return failures();
}
