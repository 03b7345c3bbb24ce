/* OpenACC's profiling interface under libpygomp.so, on a device with memory of its own:
   the events of compute, data, update and wait constructs and of acc_* routines, in
   order, with their fields; the rules of registration.  A callback logs each event's
   name; `expect` compares the log with the sequence the program should give. */
#include <openacc.h>
#include <acc_prof.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static const char *names[] = {
    "none", "device_init_start", "device_init_end", "device_shutdown_start",
    "device_shutdown_end", "runtime_shutdown", "create", "delete", "alloc", "free",
    "enter_data_start", "enter_data_end", "exit_data_start", "exit_data_end",
    "update_start", "update_end", "compute_start", "compute_end", "launch_start",
    "launch_end", "upload_start", "upload_end", "download_start", "download_end",
    "wait_start", "wait_end"};

static char log_[8192];
static size_t logged;
static long async_seen[64];         /* prof_info->async of each logged event */
static int construct_seen[64];      /* parent_construct of each */
static int nevents;
static int tag = 1;                 /* what start events leave in tool_info */
static acc_data_event_info last_data;
static acc_launch_event_info last_launch;

static int is_data_event(acc_event_t e)
{
    return (e >= acc_ev_create && e <= acc_ev_free)
           || (e >= acc_ev_enqueue_upload_start && e <= acc_ev_enqueue_download_end);
}

static acc_device_t type;          /* the device's, as acc_get_device_type says */
static int number, fallback;       /* fallback: an if(0) construct, the host's at its end */

static void record(acc_prof_info *p, acc_event_info *e, acc_api_info *a)
{
    acc_event_t ev = p->event_type;
    CHECK(e->event_type == ev);
    if (ev != acc_ev_device_init_start && ev != acc_ev_device_init_end)
        CHECK((p->device_type == type || (fallback && ev == acc_ev_compute_construct_end
                                          && p->device_type == acc_device_host))
              && p->device_number == number);
    CHECK(p->valid_bytes == _ACC_PROF_INFO_VALID_BYTES);
    CHECK(p->version == _ACC_PROF_INFO_VERSION);
    CHECK(p->thread_id == -1 && p->async_queue == p->async);
    CHECK(p->src_file == NULL && p->line_no == -1);
    CHECK(a->valid_bytes == _ACC_API_INFO_VALID_BYTES && a->vendor == -1);
    CHECK(a->device_type == p->device_type);
    if (is_data_event(ev)) {
        CHECK(e->data_event.valid_bytes == _ACC_DATA_EVENT_INFO_VALID_BYTES);
        CHECK(e->data_event.implicit == 1 || ev == acc_ev_free);
        last_data = e->data_event;
    } else if (ev == acc_ev_enqueue_launch_start || ev == acc_ev_enqueue_launch_end) {
        CHECK(e->launch_event.valid_bytes == _ACC_LAUNCH_EVENT_INFO_VALID_BYTES);
        last_launch = e->launch_event;
    } else {
        CHECK(e->other_event.valid_bytes == _ACC_OTHER_EVENT_INFO_VALID_BYTES);
    }
    /* a start event's tool_info is NULL; the end event of its pair sees what the
       start callback left there */
    const char *name = names[ev];
    if (strstr(name, "_start")) {
        CHECK(e->other_event.tool_info == NULL);
        e->other_event.tool_info = (void *)(intptr_t)tag;
    } else if (strstr(name, "_end")) {
        CHECK(e->other_event.tool_info == (void *)(intptr_t)tag);
    }
    if (nevents < 64) {
        async_seen[nevents] = p->async;
        construct_seen[nevents] = e->other_event.parent_construct;
    }
    nevents++;
    logged += snprintf(log_ + logged, sizeof log_ - logged, "%s%s", logged ? " " : "", name);
}

static void restart(void)
{
    logged = 0;
    log_[0] = 0;
    nevents = 0;
}

#define expect(want) expect_at(__LINE__, want)
static void expect_at(int line, const char *want)
{
    if (strcmp(log_, want) != 0) {
        failed++;
        fprintf(stderr, "acc_prof.c:%d: events\n  got  %s\n  want %s\n", line, log_, want);
    }
    restart();
}

static int calls_a, calls_b;
static void count_a(acc_prof_info *p, acc_event_info *e, acc_api_info *a) { calls_a++; }
static void count_b(acc_prof_info *p, acc_event_info *e, acc_api_info *a)
{
    calls_b = calls_b * 10 + (calls_a ? 2 : 1);     /* which ran first */
}

static void registration(void)
{
    double a = 0;
    /* counted: registered twice, unregistered once, still called */
    acc_prof_register(acc_ev_compute_construct_start, count_a, acc_reg);
    acc_prof_register(acc_ev_compute_construct_start, count_a, acc_reg);
    acc_prof_unregister(acc_ev_compute_construct_start, count_a, acc_reg);
#pragma acc parallel copy(a)
    a++;
    CHECK(calls_a == 1);
    /* acc_toggle: off for the callback, then for the event; per thread */
    acc_prof_unregister(acc_ev_compute_construct_start, count_a, acc_toggle);
#pragma acc parallel copy(a)
    a++;
    CHECK(calls_a == 1);
    acc_prof_register(acc_ev_compute_construct_start, count_a, acc_toggle);
    acc_prof_unregister(acc_ev_compute_construct_start, NULL, acc_toggle);
#pragma acc parallel copy(a)
    a++;
    CHECK(calls_a == 1);
    acc_prof_register(acc_ev_compute_construct_start, NULL, acc_toggle);
    acc_prof_unregister(acc_ev_none, NULL, acc_toggle_per_thread);
#pragma acc parallel copy(a)
    a++;
    CHECK(calls_a == 1);
    acc_prof_register(acc_ev_none, NULL, acc_toggle_per_thread);
#pragma acc parallel copy(a)
    a++;
    CHECK(calls_a == 2);
    acc_prof_unregister(acc_ev_compute_construct_start, count_a, acc_reg);
    /* start events: in the order of registration; end events: the reverse */
    calls_a = 0;
    acc_prof_register(acc_ev_compute_construct_start, count_a, acc_reg);
    acc_prof_register(acc_ev_compute_construct_start, count_b, acc_reg);
#pragma acc parallel copy(a)
    a++;
    CHECK(calls_b == 2);
    acc_prof_unregister(acc_ev_compute_construct_start, count_a, acc_reg);
    acc_prof_unregister(acc_ev_compute_construct_start, count_b, acc_reg);
    calls_a = calls_b = 0;
    acc_prof_register(acc_ev_compute_construct_end, count_a, acc_reg);
    acc_prof_register(acc_ev_compute_construct_end, count_b, acc_reg);
#pragma acc parallel copy(a)
    a++;
    CHECK(calls_b == 1);
    acc_prof_unregister(acc_ev_compute_construct_end, count_a, acc_reg);
    acc_prof_unregister(acc_ev_compute_construct_end, count_b, acc_reg);
    CHECK(a == 7);
    CHECK(acc_prof_lookup("anything") == NULL);
}

int main(void)
{
    double a[64] = {0}, b[32] = {0};
    for (int ev = acc_ev_none + 1; ev < acc_ev_last; ev++)
        acc_prof_register(ev, record, acc_reg);
    type = acc_get_device_type();
    number = acc_get_device_num(type);

    /* the first construct initializes the device */
#pragma acc parallel copy(a)
    a[0] += 1;
    expect("device_init_start device_init_end compute_start enter_data_start alloc create "
           "upload_start upload_end enter_data_end launch_start launch_end exit_data_start "
           "download_start download_end delete free exit_data_end compute_end");
    CHECK(strstr(last_launch.kernel_name, "main._omp_fn") != NULL);
    CHECK(last_launch.num_gangs >= 1 && last_launch.vector_length >= 1);
    /* the free of the construct's block: libgomp's layout, the size plus the alignment
       (at least a pointer's) less one */
    CHECK(last_data.bytes == sizeof a + sizeof(void *) - 1);
    CHECK(a[0] == 1);

#pragma acc enter data copyin(b)
    expect("enter_data_start alloc create upload_start upload_end enter_data_end");
    CHECK(last_data.host_ptr == b && last_data.bytes == sizeof b);
    CHECK(last_data.device_ptr == acc_deviceptr(b));
    CHECK(construct_seen[0] == acc_construct_enter_data);
    CHECK(construct_seen[2] == acc_construct_enter_data);          /* the alloc's */
#pragma acc update self(b[0:8])
    expect("update_start download_start download_end update_end");
    CHECK(last_data.bytes == 8 * sizeof(double) && last_data.host_ptr == b);
#pragma acc exit data delete(b)
    expect("exit_data_start delete free exit_data_end");
    CHECK(construct_seen[0] == acc_construct_exit_data);

    /* a data region, present data inside it: no copies, no allocation */
#pragma acc data copyin(b)
    {
        expect("enter_data_start alloc create upload_start upload_end enter_data_end");
        CHECK(construct_seen[0] == acc_construct_data);
#pragma acc parallel present(b)
        b[1] = 2;
        expect("compute_start enter_data_start enter_data_end launch_start launch_end "
               "exit_data_start exit_data_end compute_end");
    }
    expect("exit_data_start delete free exit_data_end");

    /* async: every event at the construct, on the construct's queue (libgomp's compute
       start says acc_async_sync); the wait is the wait directive's */
#pragma acc parallel copy(a) async(5)
    a[1] += 1;
    expect("compute_start enter_data_start alloc create upload_start upload_end "
           "enter_data_end launch_start launch_end exit_data_start download_start "
           "download_end delete free exit_data_end compute_end");
    CHECK(async_seen[0] == acc_async_sync);
    for (int i = 1; i < 16; i++)
        CHECK(async_seen[i] == 5);
#pragma acc wait(5)
    CHECK(a[1] == 1);
    restart();
#pragma acc wait
    expect("wait_start wait_end");
    CHECK(construct_seen[0] == acc_construct_wait);

    /* if(0): the host runs it, and says so at the end */
    int zero = 0;
    fallback = 1;
#pragma acc parallel copy(a) if(zero)
    a[2] = 3;
    fallback = 0;
    expect("compute_start compute_end");

    /* the routines */
    void *d = acc_malloc(100);
    expect("alloc");
    CHECK(last_data.bytes == 100 && last_data.device_ptr == d);
    acc_free(d);
    expect("free");
    CHECK(last_data.device_ptr == d && construct_seen[0] == acc_construct_runtime_api);
    acc_copyin(b, sizeof b);
    expect("alloc create upload_start upload_end");
    CHECK(construct_seen[0] == acc_construct_runtime_api);
    acc_update_device(b, sizeof b);
    expect("upload_start upload_end");
    acc_copyout(b, sizeof b);
    expect("download_start download_end delete free");
    acc_wait_all();
    expect("wait_start wait_end");

    for (int ev = acc_ev_none + 1; ev < acc_ev_last; ev++)
        acc_prof_unregister(ev, record, acc_reg);
#pragma acc parallel copy(a)
    a[3] = 4;
    expect("");
    registration();
    return failures();
}
