/* A profiling library for ACC_PROFLIB: libpygomp.so loads it and calls its
   acc_register_library before main; it reports device init and compute constructs on
   stderr, and counts the compute constructs it saw at exit. */
#include <acc_prof.h>
#include <stdio.h>

static int constructs;

static void report(acc_prof_info *p, acc_event_info *e, acc_api_info *a)
{
    if (p->event_type == acc_ev_compute_construct_start)
        constructs++;
    fprintf(stderr, "proflib: event %d device type %d\n", (int)p->event_type,
            (int)p->device_type);
}

static void at_end(void) __attribute__((destructor));
static void at_end(void)
{
    fprintf(stderr, "proflib: %d compute constructs\n", constructs);
}

void acc_register_library(acc_prof_reg reg, acc_prof_reg unreg, acc_prof_lookup_func lookup)
{
    fprintf(stderr, "proflib: registered (lookup %s)\n", lookup("x") ? "found" : "NULL");
    reg(acc_ev_device_init_start, report, acc_reg);
    reg(acc_ev_compute_construct_start, report, acc_reg);
    reg(acc_ev_compute_construct_end, report, acc_reg);
}
