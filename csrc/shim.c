/* The C half of libpygomp.so: libgomp's offload ABI (GCC 12) in front of pygomp's
   runtime core.  build.py wraps this file in cffi's embedding mode; the pg_py_*
   functions are the Python half (abi.py, gomp.py, goacc.py and the other modules
   that abi.attach names).

   Only the target entry points, the omp_* device routines and OpenACC's GOACC_* entry
   points and acc_* routines are defined here; everything else (parallel, loops, tasks,
   locks) stays libgomp's.  A target region
   always runs inside libgomp's own host fallback (its GOMP_target_ext called with
   GOMP_DEVICE_HOST_FALLBACK, found with dlsym(RTLD_NEXT)): that gives the region a
   fresh OpenMP context and gives nowait/depend libgomp's task semantics.  The region
   reaches pg_run() there, which maps through Python, calls the host code with device
   addresses (or lets Python launch an image), and unmaps.

   The numbers both halves use (OP_*, ACC_*, R_*, the target types, OpenACC's queue
   and device-type numbers, the plans' sizes and flags, the guards) come from
   contract.py: build.py writes them ahead of this file. */

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* gomp-constants.h (GCC 12) */
#define MAP_FIRSTPRIVATE 12
#define DEVICE_HOST_FALLBACK (-2)
#define TARGET_FLAG_NOWAIT 1
#define TARGET_ARG_DEVICE_MASK ((1 << 7) - 1)
#define TARGET_ARG_SUBSEQUENT_PARAM (1 << 7)
#define TARGET_ARG_ID_MASK (((1 << 8) - 1) << 8)
#define TARGET_ARG_NUM_TEAMS (1 << 8)
#define TARGET_ARG_THREAD_LIMIT (2 << 8)
#define TARGET_ARG_VALUE_SHIFT 16

/* The default device of C code is libgomp's default-device ICV, so that tasks and the
   threads of a parallel region inherit it as OpenMP says.  Inside a region on an
   offload device the ICV holds MARK + that device's number instead (inherited by the
   region's own tasks and threads). */
#define MARK (1 << 30)
#define DEVICE_ICV (-1)

#ifndef PYGOMP_PYTHON
#define PYGOMP_PYTHON ""
#endif

typedef void (*target_ext_t)(int, void (*)(void *), size_t, void **, size_t *,
                             unsigned short *, unsigned, void **, void **);
static target_ext_t real_target_ext;
static void (*real_set_default_device)(int);
static int (*real_get_default_device)(void);

static int exiting_on_error;
static int finished;                 /* at_exit released the devices */
static int in_at_exit;

/* -- errors, as libgomp's gomp_fatal prints them ------------------------------- */

static void fatal(const char *text)
{
    fprintf(stderr, "\nlibgomp: %s\n", text);
    fflush(stderr);
    exiting_on_error = 1;
    if (in_at_exit) {                /* exit() from an atexit handler is undefined */
        fflush(stdout);
        _exit(EXIT_FAILURE);
    }
    exit(EXIT_FAILURE);
}

/* A callback returned 0: only when its error handler failed too (abi._on_error ends
   the process itself), and cffi has printed both tracebacks. */
static void fail(void)
{
    fatal("pygomp: the Python runtime failed (its error is printed above)");
}

/* -- called by the Python half ------------------------------------------------ */

/* An error in Python (abi._on_error): libgomp's fatal error. */
static void pg_fatal(const char *text)
{
    fatal(text);
}

/* Run a region's host code with device addresses (called by gomp.py and hostcode.py
   without the GIL); ``device`` is the offload device it runs on, -1 for the initial
   device. */
static void pg_call_host(uintptr_t fn, uintptr_t *args, int device)
{
    if (device >= 0)
        real_set_default_device(MARK + device);
    ((void (*)(void *))fn)(args);
}

/* -- starting Python ---------------------------------------------------------- */

static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        char text[256];
        snprintf(text, sizeof text, "pygomp: %s not found in libgomp (%s)", name, dlerror());
        fatal(text);
    }
    return p;
}

static pthread_once_t found = PTHREAD_ONCE_INIT;
static void ensure(void);
static void hand_over_tables(void);

/* At the end of a C program: release the devices, report what is still mapped
   (PYGOMP_INFO 0x4), as Python's own exit does for a Python program. */
static void at_exit(void)
{
    in_at_exit = 1;
    if (!exiting_on_error) {
        ensure();
        pg_py_at_exit();
    }
    finished = 1;
}

typedef void (*offload_register_t)(unsigned, const void *, int, const void *);
static offload_register_t real_register, real_unregister;

static void find_libgomp(void)
{
    real_register = (offload_register_t)next_symbol("GOMP_offload_register_ver");
    real_unregister = (offload_register_t)next_symbol("GOMP_offload_unregister_ver");
    real_target_ext = (target_ext_t)next_symbol("GOMP_target_ext");
    real_set_default_device = (void (*)(int))next_symbol("omp_set_default_device");
    real_get_default_device = (int (*)(void))next_symbol("omp_get_default_device");
}

static void start_python(void)
{
    pthread_once(&found, find_libgomp);
    if (!Py_IsInitialized()) {
        /* Start as the Python that built this library (its virtual environment, so
           pygomp and its dependencies are found); PYGOMP_PYTHON overrides it. */
        const char *exe = getenv("PYGOMP_PYTHON");
        PyConfig config;
        PyStatus status;
        PyConfig_InitPythonConfig(&config);
        config.install_signal_handlers = 0;
        config.parse_argv = 0;
        if (!exe || !*exe)
            exe = PYGOMP_PYTHON;
        if (*exe) {
            status = PyConfig_SetBytesString(&config, &config.program_name, exe);
            if (PyStatus_Exception(status))
                fatal("pygomp: cannot set the embedded Python's program name");
        }
        struct sigaction sigint;            /* the program's: SIGINT ends it, as a rule */
        sigaction(SIGINT, NULL, &sigint);
        status = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(status)) {
            char text[512];
            snprintf(text, sizeof text, "pygomp: cannot start the embedded Python (%s): %s",
                     exe, status.err_msg ? status.err_msg : "unknown error");
            fatal(text);
        }
        /* Importing _signal puts Python's SIGINT handler in even so: import it now,
           then give SIGINT back what the program had (libgomp leaves it alone). */
        Py_XDECREF(PyImport_ImportModule("_signal"));
        PyErr_Clear();
        sigaction(SIGINT, &sigint, NULL);
        PyEval_SaveThread();
        atexit(at_exit);     /* nothing finalizes an embedded interpreter: do the devices */
    }
    if (cffi_start_python() != 0)
        fatal("pygomp: the embedded Python cannot import pygomp (the traceback and "
              "sys.path are printed above; PYGOMP_PYTHON names the Python to use)");
    hand_over_tables();
}

static pthread_once_t started = PTHREAD_ONCE_INIT;
static __thread int thread_known;

/* Before any call into Python: start it once, and give this thread a Python thread
   state that lives as long as the thread (without one, every call would create and
   destroy one, and per-thread state such as the default device would be lost). */
static void ensure(void)
{
    if (__builtin_expect(thread_known, 1))
        return;
    pthread_once(&started, start_python);
    if (!PyGILState_Check()) {
        PyGILState_Ensure();
        PyEval_SaveThread();
    }
    thread_known = 1;
}

/* -- target regions ----------------------------------------------------------- */

/* One construct, as map item 0 of the call into libgomp: a firstprivate block, so a
   deferred (nowait) task gets its own copy, with the sizes and kinds after it. */
struct pg_task {
    void (*fn)(void *);
    int device, op;
    size_t mapnum;
    int teams, threads;     /* a target region's num_teams and thread_limit; 0: unset */
};

_Static_assert(sizeof(struct pg_task) % _Alignof(size_t) == 0, "sizes follow the task");
_Static_assert(_Alignof(struct pg_task) == 8, "the task block's alignment kind is 3 << 8");

static size_t *task_sizes(struct pg_task *t) { return (size_t *)(t + 1); }
static unsigned short *task_kinds(struct pg_task *t)
{
    return (unsigned short *)(task_sizes(t) + t->mapnum);
}

#define SMALL 32       /* constructs with up to this many items use the stack */

/* The map items for Python: (host address, size, kind) triples, the kind without its
   alignment byte (pygomp's devices align every allocation on 64 bytes or more). */
static uint64_t *pack(size_t n, void **hostaddrs, size_t *sizes, unsigned short *kinds,
                      uint64_t *small)
{
    uint64_t *items = n <= SMALL ? small : malloc(3 * n * sizeof(uint64_t));
    if (!items)
        fatal("pygomp: out of memory for the map items of a construct");
    for (size_t i = 0; i < n; i++) {
        items[3 * i] = (uintptr_t)hostaddrs[i];
        items[3 * i + 1] = sizes[i];
        items[3 * i + 2] = kinds[i] & 0xff;
    }
    return items;
}

/* -- regions that C runs itself ------------------------------------------------

   A region that repeats (the same device, function and items) on a device of the host
   plugin gets a plan from Python (calls.Call's look-up): per item, the word to pass,
   or "made": a small absent item that each region allocates (with the host plugin's
   header and guard: made_alloc), copies in,
   copies out and frees.  C carries a plan out without
   Python while it is good: its epoch is that of the map that Python's look-up saw (the
   map's version, as in calls.Call's one staleness rule, except that a call whose made
   items are gone again gives back the epoch it began with), and Python writes each
   device's epoch here whenever it lets go of the device's lock (calls.GateLock).

   A region in flight is listed here.  While Python holds a device's lock (`busy`) no
   region starts on it; when Python takes the lock it first adopts the regions in
   flight there (pg_gate_take): their made items become entries of its map and their
   present entries are counted, as if Python had mapped them, and such a region ends
   through Python (pg_py_land).  A region that nobody adopted touched nothing that
   Python can see: it only copies out and frees.  Two regions in flight never make
   overlapping items (the second one goes through Python, which shares the entry). */

#define PLANS 64            /* plan slots */
#define GATED 64            /* devices 0 .. GATED - 1 may run plans */

struct plan {
    uint64_t id;                /* Python's handle of the plan; 0: an empty slot */
    int device;
    uintptr_t fn;
    size_t n;
    uint64_t key[3 * PLAN_ITEMS];     /* the items (address, size, kind) */
    uint64_t epoch;
    uint64_t words[PLAN_ITEMS];
    unsigned char flags[PLAN_ITEMS];
    int users;                  /* regions in flight with it: the slot is kept */
};

struct flight {
    struct flight *next;
    struct plan *plan;
    uint64_t id;
    int device, adopted;
    uintptr_t words[PLAN_ITEMS];
};

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static struct plan plans[PLANS];
static struct flight *flights;
static uint64_t epochs[GATED];
static int busy[GATED];
static int planned;             /* a plan was ever installed */
static int fast_off;            /* profiling came on, or the devices were released */

static size_t plan_slot(int device, uintptr_t fn, size_t n, const uint64_t *items)
{
    uint64_t h = 1469598103934665603u ^ (uint64_t)device ^ ((uint64_t)fn << 7) ^ n;
    for (size_t i = 0; i < 3 * n; i++)
        h = (h ^ items[i]) * 1099511628211u;
    return (size_t)(h ^ (h >> 29)) % PLANS;
}

static int overlaps_made(int device, const uint64_t *items, const unsigned char *flags,
                         size_t n)
{
    for (struct flight *f = flights; f; f = f->next) {
        if (f->device != device)
            continue;
        struct plan *q = f->plan;
        for (size_t j = 0; j < q->n; j++)
            for (size_t i = 0; i < n; i++)
                if ((q->flags[j] & PLAN_MADE) && (flags[i] & PLAN_MADE)
                    && items[3 * i] < q->key[3 * j] + q->key[3 * j + 1]
                    && q->key[3 * j] < items[3 * i] + items[3 * i + 1])
                    return 1;
    }
    return 0;
}

/* A made item, laid out as the host plugin's allocations are (runtime/faults.py), so
   that Python frees and checks it as its own once it adopts it. */
static void *made_alloc(size_t size)
{
    char *base = aligned_alloc(64, (GUARD_HEAD + size + GUARD_TAIL + 63) & ~(size_t)63);
    if (!base)
        return NULL;
    char *a = base + GUARD_HEAD;
    uint64_t *head = (uint64_t *)base;
    head[0] = (uintptr_t)a ^ GUARD_MAGIC;
    head[1] = size;
    head[2] = GUARD_HEAD;
    memset(a + size, GUARD_PATTERN, GUARD_TAIL);
    return a;
}

static void free_made(struct flight *f, size_t upto)
{
    for (size_t i = 0; i < upto; i++)
        if (f->plan->flags[i] & PLAN_MADE)
            free((char *)f->words[i] - GUARD_HEAD);
}

/* Run the region by its plan; 0 if it has none that is good now (Python runs it). */
static int run_planned(struct pg_task *t, const uint64_t *items, uintptr_t *args)
{
    int device = t->device;
    size_t n = t->mapnum;
    if (!__atomic_load_n(&planned, __ATOMIC_RELAXED) || device < 0 || device >= GATED
        || n > PLAN_ITEMS)
        return 0;
    struct plan *p = &plans[plan_slot(device, (uintptr_t)t->fn, n, items)];
    struct flight f;
    pthread_mutex_lock(&gate);
    if (fast_off || busy[device] || !p->id || p->device != device
        || p->fn != (uintptr_t)t->fn || p->n != n || p->epoch != epochs[device]
        || memcmp(p->key, items, 3 * n * sizeof *items)
        || overlaps_made(device, items, p->flags, n)) {
        pthread_mutex_unlock(&gate);
        return 0;
    }
    f.plan = p;
    for (size_t i = 0; i < n; i++) {
        if (!(p->flags[i] & PLAN_MADE)) {
            f.words[i] = p->words[i];
            continue;
        }
        size_t size = items[3 * i + 1];
        void *a = made_alloc(size);
        if (!a) {                           /* Python says what is wrong */
            free_made(&f, i);
            pthread_mutex_unlock(&gate);
            return 0;
        }
        if (p->flags[i] & PLAN_TO)
            memcpy(a, (void *)(uintptr_t)items[3 * i], size);
        f.words[i] = (uintptr_t)a;
    }
    f.id = p->id;
    f.device = device;
    f.adopted = 0;
    f.next = flights;
    flights = &f;
    p->users++;
    pthread_mutex_unlock(&gate);

    memcpy(args, f.words, n * sizeof *args);
    pg_call_host((uintptr_t)t->fn, args, device);

    pthread_mutex_lock(&gate);
    struct flight **at = &flights;
    while (*at != &f)
        at = &(*at)->next;
    *at = f.next;
    p->users--;
    if (!f.adopted)
        for (size_t i = 0; i < n; i++)
            if (p->flags[i] & PLAN_FROM)
                memcpy((void *)(uintptr_t)items[3 * i], (void *)f.words[i], items[3 * i + 1]);
    pthread_mutex_unlock(&gate);
    if (f.adopted) {                        /* Python's entries now: it ends the region */
        if (!pg_py_land((uintptr_t)&f))
            fail();
    } else
        free_made(&f, n);
    return 1;
}

/* Python (with the GIL): install a plan; the id of the plan it replaced (0: none), or
   -1 when its slot is in use (no plan this time). */
static int64_t pg_plan_install(int device, uintptr_t fn, size_t n, const uint64_t *items,
                               const uint64_t *words, const unsigned char *flags,
                               uint64_t epoch, uint64_t id)
{
    if (device < 0 || device >= GATED || n > PLAN_ITEMS)
        return -1;
    struct plan *p = &plans[plan_slot(device, fn, n, items)];
    int64_t old;
    pthread_mutex_lock(&gate);
    if (p->users || fast_off) {
        pthread_mutex_unlock(&gate);
        return -1;
    }
    old = (int64_t)p->id;
    p->device = device;
    p->fn = fn;
    p->n = n;
    memcpy(p->key, items, 3 * n * sizeof *items);
    memcpy(p->words, words, n * sizeof *words);
    memcpy(p->flags, flags, n);
    p->epoch = epoch;
    p->id = id;
    __atomic_store_n(&planned, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&gate);
    return old;
}

/* Python takes a device's lock: no region starts there until pg_gate_leave.  The
   number of regions in flight there that Python has to adopt (pg_gate_take). */
static int pg_gate_enter(int device)
{
    int n = 0;
    if (device < 0 || device >= GATED)
        return 0;
    pthread_mutex_lock(&gate);
    busy[device] = 1;
    for (struct flight *f = flights; f; f = f->next)
        n += f->device == device && !f->adopted;
    pthread_mutex_unlock(&gate);
    return n;
}

/* The next region in flight on the device that Python has not adopted (now it has):
   out[0] its token, out[1] its plan's id, out[2..] its words; 0 when there is none. */
static int pg_gate_take(int device, uint64_t *out)
{
    int found = 0;
    pthread_mutex_lock(&gate);
    for (struct flight *f = flights; f; f = f->next)
        if (f->device == device && !f->adopted) {
            f->adopted = 1;
            out[0] = (uintptr_t)f;
            out[1] = f->id;
            memcpy(out + 2, f->words, f->plan->n * sizeof *out);
            found = 1;
            break;
        }
    pthread_mutex_unlock(&gate);
    return found;
}

/* Python lets go of a device's lock; ``epoch``: its map's now (GateLock.current). */
static void pg_gate_leave(int device, uint64_t epoch)
{
    if (device < 0 || device >= GATED)
        return;
    pthread_mutex_lock(&gate);
    busy[device] = 0;
    epochs[device] = epoch;
    pthread_mutex_unlock(&gate);
}

/* No more plans (profiling is on, or the devices are released). */
static void pg_plans_off(void)
{
    pthread_mutex_lock(&gate);
    fast_off = 1;
    pthread_mutex_unlock(&gate);
}

static void run_target(struct pg_task *t, void **hostaddrs)
{
    size_t n = t->mapnum;
    uint64_t small[3 * SMALL], *items = pack(n, hostaddrs, task_sizes(t), task_kinds(t), small);
    uintptr_t small_args[SMALL], *args = n <= SMALL ? small_args : malloc(n * sizeof *args);
    if (!args)
        fatal("pygomp: out of memory for the arguments of a target region");
    if (!run_planned(t, items, args) && !pg_py_target(t->device, (uintptr_t)t->fn, n, items, args,
                                                    t->teams, t->threads))
        fail();
    if (args != small_args)
        free(args);
    if (items != small)
        free(items);
}

/* target data (the region's handle), update, enter data, exit data. */
static int64_t data(int op, int device, size_t n, void **hostaddrs, size_t *sizes,
                    unsigned short *kinds)
{
    uint64_t small[3 * SMALL], *items = pack(n, hostaddrs, sizes, kinds, small);
    int64_t r = pg_py_data(op, device, n, items, (uintptr_t *)hostaddrs);
    if (items != small)
        free(items);
    if (!r)
        fail();
    return r;
}

/* The body of every deferred or synchronous construct, run by libgomp's fallback. */
static void pg_run(void *p)
{
    void **hostaddrs = p;
    struct pg_task *t = hostaddrs[0];
    ensure();
    if (t->op == OP_TARGET)
        run_target(t, hostaddrs + 1);
    else
        data(t->op, t->device, t->mapnum, hostaddrs + 1, task_sizes(t), task_kinds(t));
}

/* The memory of a call into libgomp with n = mapnum + 1 items: the task block (the
   task, mapnum sizes and kinds), then, from the next multiple of 8, the call's n
   host addresses, n sizes and n kinds. */
static size_t task_block_size(size_t mapnum)
{
    return sizeof(struct pg_task) + mapnum * (sizeof(size_t) + sizeof(unsigned short));
}

static size_t call_arrays_at(size_t mapnum)
{
    return (task_block_size(mapnum) + 7) & ~(size_t)7;
}

static size_t call_size(size_t mapnum)
{
    return call_arrays_at(mapnum)
           + (mapnum + 1) * (sizeof(void *) + sizeof(size_t) + sizeof(unsigned short));
}

/* The num_teams and thread_limit that GCC passes in a target region's args (1 team
   for a region without a teams construct), for every device: libgomp's encoding. */
static void launch_bounds(void **args, int *teams, int *threads)
{
    *teams = *threads = 0;
    while (args && *args) {
        intptr_t id = (intptr_t)*args++, val;
        if (id & TARGET_ARG_SUBSEQUENT_PARAM)
            val = (intptr_t)*args++;
        else
            val = id >> TARGET_ARG_VALUE_SHIFT;
        if ((id & TARGET_ARG_DEVICE_MASK) != 0)
            continue;
        val = val > INT32_MAX ? INT32_MAX : val;
        if ((id & TARGET_ARG_ID_MASK) == TARGET_ARG_NUM_TEAMS)
            *teams = (int)val;
        else if ((id & TARGET_ARG_ID_MASK) == TARGET_ARG_THREAD_LIMIT)
            *threads = (int)val;
    }
}

/* Hand a construct to libgomp's GOMP_target_ext with the host-fallback device. */
static void through_libgomp(int op, int device, void (*fn)(void *), size_t mapnum,
                            void **hostaddrs, size_t *sizes, unsigned short *kinds,
                            unsigned flags, void **depend, void **args)
{
    size_t n = mapnum + 1, block = task_block_size(mapnum), total = call_size(mapnum);
    char small[1024] __attribute__((aligned(16)));
    char *mem = total <= sizeof small ? small : malloc(total);
    if (!mem)
        fatal("pygomp: out of memory for a target construct");
    struct pg_task *t = (struct pg_task *)mem;
    t->fn = fn;
    t->device = device;
    t->op = op;
    t->mapnum = mapnum;
    launch_bounds(op == OP_TARGET ? args : NULL, &t->teams, &t->threads);
    memcpy(task_sizes(t), sizes, mapnum * sizeof(size_t));
    memcpy(task_kinds(t), kinds, mapnum * sizeof(unsigned short));
    void **h = (void **)(mem + call_arrays_at(mapnum));
    size_t *s = (size_t *)(h + n);
    unsigned short *k = (unsigned short *)(s + n);
    h[0] = t;
    s[0] = block;
    k[0] = MAP_FIRSTPRIVATE | (3 << 8);          /* 8-byte aligned */
    memcpy(h + 1, hostaddrs, mapnum * sizeof(void *));
    memcpy(s + 1, sizes, mapnum * sizeof(size_t));
    memcpy(k + 1, kinds, mapnum * sizeof(unsigned short));
    real_target_ext(DEVICE_HOST_FALLBACK, pg_run, n, h, s, k, flags & TARGET_FLAG_NOWAIT,
                    depend, args);
    if (mem != small)
        free(mem);
}

/* GOMP_DEVICE_ICV: the default device, from libgomp's ICV. */
static int device_number(int device)
{
    if (device != DEVICE_ICV)
        return device;
    int v = real_get_default_device();
    return v >= MARK ? v - MARK : v;
}

EXPORT void GOMP_target_ext(int device, void (*fn)(void *), size_t mapnum, void **hostaddrs,
                            size_t *sizes, unsigned short *kinds, unsigned int flags,
                            void **depend, void **args)
{
    ensure();
    device = device_number(device);
    through_libgomp(OP_TARGET, device, fn, mapnum, hostaddrs, sizes, kinds, flags, depend,
                    args);
}

/* -- data constructs ---------------------------------------------------------- */

/* Open data regions of this thread (`target data`, `acc data`), innermost last
   (libgomp keeps them per thread; a data region begins and ends in the same thread). */
struct regions {
    int64_t *handles;
    size_t depth, room;
};
static __thread struct regions omp_regions, acc_regions;

static void push_region(struct regions *r, int64_t handle)
{
    if (r->depth == r->room) {
        r->room = r->room ? 2 * r->room : 8;
        r->handles = realloc(r->handles, r->room * sizeof *r->handles);
        if (!r->handles)
            fatal("pygomp: out of memory for data regions");
    }
    r->handles[r->depth++] = handle;
}

static void end_region(struct regions *r)
{
    ensure();
    if (r->depth && !pg_py_end_data(r->handles[--r->depth]))
        fail();
}

EXPORT void GOMP_target_data_ext(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                 unsigned short *kinds)
{
    ensure();
    /* use_device_ptr/addr: Python writes the device addresses back into hostaddrs. */
    push_region(&omp_regions,
                data(OP_DATA, device_number(device), mapnum, hostaddrs, sizes, kinds));
}

EXPORT void GOMP_target_end_data(void)
{
    end_region(&omp_regions);
}

static void data_op(int op, int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                    unsigned short *kinds, unsigned flags, void **depend)
{
    ensure();
    device = device_number(device);
    if (depend) {       /* libgomp's task semantics: wait, or defer with nowait */
        through_libgomp(op, device, NULL, mapnum, hostaddrs, sizes, kinds, flags, depend,
                        NULL);
        return;
    }
    data(op, device, mapnum, hostaddrs, sizes, kinds);
}

EXPORT void GOMP_target_update_ext(int device, size_t mapnum, void **hostaddrs, size_t *sizes,
                                   unsigned short *kinds, unsigned int flags, void **depend)
{
    data_op(OP_UPDATE, device, mapnum, hostaddrs, sizes, kinds, flags, depend);
}

EXPORT void GOMP_target_enter_exit_data(int device, size_t mapnum, void **hostaddrs,
                                        size_t *sizes, unsigned short *kinds,
                                        unsigned int flags, void **depend)
{
    data_op(flags & 2 ? OP_EXIT : OP_ENTER, device, mapnum, hostaddrs, sizes, kinds, flags,
            depend);
}

/* -- the omp_* device routines ------------------------------------------------- */

/* Inside a region on an offload device: its number; else -1.  Answered from
   libgomp's ICV, without Python, so that every thread of the region can ask. */
static int region_device(void)
{
    pthread_once(&found, find_libgomp);
    int v = real_get_default_device();
    return v >= MARK ? v - MARK : -1;
}

EXPORT int omp_is_initial_device(void)
{
    return region_device() < 0;
}

EXPORT int omp_get_device_num(void)
{
    int d = region_device();
    if (d >= 0)
        return d;
    ensure();
    return pg_py_num_devices();          /* the initial device */
}

EXPORT int omp_get_num_devices(void)
{
    ensure();
    return pg_py_num_devices();
}

EXPORT int omp_get_initial_device(void)
{
    ensure();
    return pg_py_num_devices();
}

EXPORT int omp_get_default_device(void)
{
    pthread_once(&found, find_libgomp);
    return device_number(DEVICE_ICV);
}

/* The ICV (as libgomp sets it: a negative number is 0), and Python's default device
   for this thread; inside a region, nothing (the region's device stays its mark). */
EXPORT void omp_set_default_device(int device_num)
{
    ensure();
    if (region_device() < 0) {
        real_set_default_device(device_num);
        pg_py_set_default_device(device_num >= 0 ? device_num : 0);
    }
}

EXPORT void *omp_target_alloc(size_t size, int device_num)
{
    ensure();
    return pg_py_target_alloc(size, device_num);
}

EXPORT void omp_target_free(void *device_ptr, int device_num)
{
    ensure();
    pg_py_target_free(device_ptr, device_num);
}

EXPORT int omp_target_is_present(const void *ptr, int device_num)
{
    ensure();
    return pg_py_target_is_present(ptr, device_num);
}

EXPORT int omp_target_is_accessible(const void *ptr, size_t size, int device_num)
{
    ensure();
    return pg_py_target_is_accessible(ptr, size, device_num);
}

EXPORT void *omp_get_mapped_ptr(const void *ptr, int device_num)
{
    ensure();
    return pg_py_get_mapped_ptr(ptr, device_num);
}

EXPORT int omp_target_associate_ptr(const void *host_ptr, const void *device_ptr, size_t size,
                                    size_t device_offset, int device_num)
{
    ensure();
    return pg_py_target_associate_ptr(host_ptr, device_ptr, size, device_offset, device_num);
}

EXPORT int omp_target_disassociate_ptr(const void *ptr, int device_num)
{
    ensure();
    return pg_py_target_disassociate_ptr(ptr, device_num);
}

EXPORT int omp_target_memcpy(void *dst, const void *src, size_t length, size_t dst_offset,
                             size_t src_offset, int dst_device_num, int src_device_num)
{
    ensure();
    return pg_py_target_memcpy(dst, src, length, dst_offset, src_offset, dst_device_num,
                               src_device_num);
}

EXPORT int omp_target_memcpy_rect(void *dst, const void *src, size_t element_size,
                                  int num_dims, const size_t *volume,
                                  const size_t *dst_offsets, const size_t *src_offsets,
                                  const size_t *dst_dimensions, const size_t *src_dimensions,
                                  int dst_device_num, int src_device_num)
{
    ensure();
    return pg_py_target_memcpy_rect(dst, src, element_size, num_dims, volume, dst_offsets,
                                    src_offsets, dst_dimensions, src_dimensions,
                                    dst_device_num, src_device_num);
}

/* The _async forms: a libgomp task (GOMP_task) that makes the copy, after the
   dependences of its depend objects (OpenMP 5.1's omp_depend_t). */

typedef void (*gomp_task_t)(void (*)(void *), void *, void (*)(void *, void *), long, long,
                            _Bool, unsigned, void **, int, void *);
#define TASK_FLAG_DEPEND (1 << 3)

struct async_copy {          /* the task's data: the arguments, arrays after it */
    void *dst;
    const void *src;
    size_t element_size, length, dst_offset, src_offset;
    int num_dims, dst_device_num, src_device_num;
    size_t dims[];           /* volume, dst/src offsets, dst/src dimensions */
};

static void async_copy_run(void *p)
{
    struct async_copy *c = p;
    size_t n = c->num_dims;
    int r = c->num_dims == 0
        ? omp_target_memcpy(c->dst, c->src, c->length, c->dst_offset, c->src_offset,
                            c->dst_device_num, c->src_device_num)
        : omp_target_memcpy_rect(c->dst, c->src, c->element_size, c->num_dims, c->dims,
                                 c->dims + n, c->dims + 2 * n, c->dims + 3 * n,
                                 c->dims + 4 * n, c->dst_device_num, c->src_device_num);
    if (r)
        fatal("pygomp: an asynchronous omp_target_memcpy failed");
}

static int async_copy(struct async_copy *c, size_t size, int depobj_count, void *depobj_list)
{
    static gomp_task_t task;
    if (depobj_count < 0 || !depobj_list)
        depobj_count = 0;
    void *depend[depobj_count + 5];
    if (!task)
        task = (gomp_task_t)next_symbol("GOMP_task");
    depend[0] = 0;                        /* GCC's depend array, new format */
    depend[1] = (void *)(uintptr_t)depobj_count;
    depend[2] = depend[3] = depend[4] = 0;
    for (int i = 0; i < depobj_count; i++)
        depend[5 + i] = (char *)depobj_list + i * 2 * sizeof(void *);  /* omp_depend_t */
    task(async_copy_run, c, NULL, size, _Alignof(struct async_copy), 1,
         depobj_count ? TASK_FLAG_DEPEND : 0, depobj_count ? depend : NULL, 0, NULL);
    return 0;
}

EXPORT int omp_target_memcpy_async(void *dst, const void *src, size_t length,
                                   size_t dst_offset, size_t src_offset, int dst_device_num,
                                   int src_device_num, int depobj_count, void *depobj_list)
{
    struct async_copy c = {dst, src, 1, length, dst_offset, src_offset, 0, dst_device_num,
                           src_device_num};
    return async_copy(&c, sizeof c, depobj_count, depobj_list);
}

EXPORT int omp_target_memcpy_rect_async(void *dst, const void *src, size_t element_size,
                                        int num_dims, const size_t *volume,
                                        const size_t *dst_offsets, const size_t *src_offsets,
                                        const size_t *dst_dimensions,
                                        const size_t *src_dimensions, int dst_device_num,
                                        int src_device_num, int depobj_count,
                                        void *depobj_list)
{
    if (!dst && !src)
        return omp_target_memcpy_rect(dst, src, element_size, num_dims, volume, dst_offsets,
                                      src_offsets, dst_dimensions, src_dimensions,
                                      dst_device_num, src_device_num);
    if (num_dims < 1)
        return EINVAL;
    size_t n = num_dims, size = sizeof(struct async_copy) + 5 * n * sizeof(size_t);
    struct async_copy *c = malloc(size);
    if (!c)
        return ENOMEM;
    *c = (struct async_copy){dst, src, element_size, 0, 0, 0, num_dims, dst_device_num,
                             src_device_num};
    const size_t *arrays[5] = {volume, dst_offsets, src_offsets, dst_dimensions,
                               src_dimensions};
    for (int i = 0; i < 5; i++)
        memcpy(c->dims + i * n, arrays[i], n * sizeof(size_t));
    int r = async_copy(c, size, depobj_count, depobj_list);
    free(c);
    return r;
}

/* -- offload tables ------------------------------------------------------------------ */

/* pygomp's tables (pygomp/build.py) and GCC's nvptx images wait here from the
   program's constructors on, until Python starts; then they, and every later one, go
   to Python (pygomp/runtime/images.py).  Every other target type is libgomp's. */
static int ours(int target_type)
{
    return target_type == TARGET_TYPE || target_type == NVIDIA_PTX;
}

struct table {
    unsigned version;
    int type;
    const void *host_table, *data;
    struct table *next;
};
static struct table *waiting;        /* registered before Python started, in order */
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static int tables_to_python;         /* Python has them, and gets new ones at once */

static void to_python(int registering, unsigned version, int type, const void *host_table,
                      const void *data)
{
    ensure();
    if (!pg_py_table(registering, type, version, (uintptr_t)host_table, (uintptr_t)data))
        fail();
}

static void hand_over_tables(void)
{
    pthread_mutex_lock(&tables_lock);
    tables_to_python = 1;
    struct table *t = waiting;
    waiting = NULL;
    pthread_mutex_unlock(&tables_lock);
    while (t) {
        struct table *next = t->next;
        if (!pg_py_table(1, t->type, t->version, (uintptr_t)t->host_table,
                         (uintptr_t)t->data))
            fail();
        free(t);
        t = next;
    }
}

EXPORT void GOMP_offload_register_ver(unsigned version, const void *host_table,
                                      int target_type, const void *data)
{
    pthread_once(&found, find_libgomp);
    if (!ours(target_type)) {
        real_register(version, host_table, target_type, data);
        return;
    }
    pthread_mutex_lock(&tables_lock);
    int now = tables_to_python;
    if (!now) {
        struct table *t = malloc(sizeof *t), **end = &waiting;
        if (!t)
            fatal("pygomp: out of memory registering an offload table");
        *t = (struct table){version, target_type, host_table, data, NULL};
        while (*end)
            end = &(*end)->next;
        *end = t;
    }
    pthread_mutex_unlock(&tables_lock);
    if (now)
        to_python(1, version, target_type, host_table, data);
}

EXPORT void GOMP_offload_unregister_ver(unsigned version, const void *host_table,
                                        int target_type, const void *data)
{
    pthread_once(&found, find_libgomp);
    if (!ours(target_type)) {
        real_unregister(version, host_table, target_type, data);
        return;
    }
    pthread_mutex_lock(&tables_lock);
    int now = tables_to_python && !finished && Py_IsInitialized();   /* not after exit */
    for (struct table **p = &waiting; *p; p = &(*p)->next)
        if ((*p)->host_table == host_table) {      /* never handed over: forget it */
            struct table *gone = *p;
            *p = gone->next;
            free(gone);
            break;
        }
    pthread_mutex_unlock(&tables_lock);
    if (now)
        to_python(0, version, target_type, host_table, data);
}

/* The unversioned entry points (binaries of GCC 5 and 6). */
EXPORT void GOMP_offload_register(const void *host_table, int target_type, const void *data)
{
    GOMP_offload_register_ver(0, host_table, target_type, data);
}

EXPORT void GOMP_offload_unregister(const void *host_table, int target_type,
                                    const void *data)
{
    GOMP_offload_unregister_ver(0, host_table, target_type, data);
}

/* -- OpenACC: the GOACC_* entry points and the acc_* routines ------------------------ */

/* gomp-constants.h (GCC 12) */
#define LAUNCH_DIM 1
#define LAUNCH_ASYNC 2
#define LAUNCH_WAIT 3
#define LAUNCH_OP_MAX 0xffff

/* The device type of the compute region this thread runs (0: none, the host). */
static __thread int acc_region_type;

/* Run a compute region's host code (called by goacc.py and hostcode.py without the
   GIL). */
static void pg_call_acc(uintptr_t fn, uintptr_t *args, int type)
{
    int outer = acc_region_type;
    acc_region_type = type;
    ((void (*)(void *))fn)(args);
    acc_region_type = outer;
}

/* A construct's wait list (the async queues it waits for). */
struct waits {
    int n, room, *v, small[16];
};

static void add_wait(struct waits *w, int q)
{
    if (w->n == w->room) {
        int room = w->room ? 2 * w->room : 16;
        int *v = w->v == w->small ? malloc(room * sizeof *v) : realloc(w->v, room * sizeof *v);
        if (!v)
            fatal("pygomp: out of memory for the wait list of a construct");
        if (w->v == w->small)
            memcpy(v, w->small, w->n * sizeof *v);
        w->v = v;
        w->room = room;
    }
    w->v[w->n++] = q;
}

static void init_waits(struct waits *w)
{
    w->n = 0;
    w->room = 16;
    w->v = w->small;
}

static void drop_waits(struct waits *w)
{
    if (w->v != w->small)
        free(w->v);
}

/* The wait list that follows the last named argument, num_waits. */
#define READ_WAITS(w, num_waits)                   \
    struct waits w;                                \
    init_waits(&w);                                \
    {                                              \
        va_list ap;                                \
        va_start(ap, num_waits);                   \
        for (int i_ = 0; i_ < (num_waits); i_++)   \
            add_wait(&w, va_arg(ap, int));         \
        va_end(ap);                                \
    }

/* GOMP_DEBUG (a nonzero number, read as libgomp reads it): libgomp's trace lines for
   the OpenACC constructs. */
static int debug_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = secure_getenv("GOMP_DEBUG");
        on = v && atoi(v) != 0;
    }
    return on;
}

static void trace_construct(const char *name, size_t mapnum, void **hostaddrs, size_t *sizes,
                            unsigned short *kinds)
{
    if (debug_on())
        fprintf(stderr, "%s: mapnum=%" PRIu64 ", hostaddrs=%p, size=%p, kinds=%p\n", name,
                (uint64_t)mapnum, (void *)hostaddrs, (void *)sizes, (void *)kinds);
}

static void trace(const char *text, const char *name)
{
    if (debug_on())
        fprintf(stderr, "  %s: %s\n", name, text);
}

/* OpenACC's map items keep the alignment byte of their kinds: Python lays out the
   entries a construct makes in one device block, as libgomp does (entries.Block). */
static uint64_t *acc_pack(size_t n, void **hostaddrs, size_t *sizes, unsigned short *kinds,
                          uint64_t *small)
{
    uint64_t *items = pack(n, hostaddrs, sizes, kinds, small);
    for (size_t i = 0; i < n; i++)
        items[3 * i + 2] = kinds[i];
    return items;
}

static void acc_parallel(int flags_m, void (*fn)(void *), size_t mapnum, void **hostaddrs,
                         size_t *sizes, unsigned short *kinds, int async, struct waits *w,
                         unsigned *dims)
{
    ensure();
    uint64_t small[3 * SMALL], *items = acc_pack(mapnum, hostaddrs, sizes, kinds, small);
    int ok = pg_py_acc_parallel(~flags_m, (uintptr_t)fn, mapnum, items, (uintptr_t *)hostaddrs,
                                async, w->n, w->v, dims);
    if (items != small)
        free(items);
    drop_waits(w);
    if (!ok)
        fail();
}

EXPORT void GOACC_parallel_keyed(int flags_m, void (*fn)(void *), size_t mapnum,
                                 void **hostaddrs, size_t *sizes, unsigned short *kinds, ...)
{
    trace_construct(__func__, mapnum, hostaddrs, sizes, kinds);
    int async = ASYNC_SYNC;
    unsigned tag, dims[3] = {0, 0, 0};
    struct waits w;
    char text[128];
    va_list ap;
    init_waits(&w);
    va_start(ap, kinds);
    while ((tag = va_arg(ap, unsigned)) != 0) {
        unsigned op = tag & 0xffff;
        if ((tag >> 16) & 0xfff) {
            snprintf(text, sizeof text, "device_type '%d' offload parameters, libgomp is too old",
                     (tag >> 16) & 0xfff);
            fatal(text);
        }
        switch (tag >> 28) {
        case LAUNCH_DIM:
            for (int i = 0; i < 3; i++)
                if (op & (1u << i))
                    dims[i] = va_arg(ap, unsigned);
            break;
        case LAUNCH_ASYNC:
            async = op == LAUNCH_OP_MAX ? (int)va_arg(ap, unsigned) : (int)op;
            break;
        case LAUNCH_WAIT:
            for (unsigned i = 0; i < op; i++)
                add_wait(&w, va_arg(ap, int));
            break;
        default:
            snprintf(text, sizeof text, "unrecognized offload code '%d', libgomp is too old",
                     tag >> 28);
            fatal(text);
        }
    }
    va_end(ap);
    acc_parallel(flags_m, fn, mapnum, hostaddrs, sizes, kinds, async, &w, dims);
}

/* GCC 5's OpenACC entry point: the launch dimensions as arguments. */
EXPORT void GOACC_parallel(int flags_m, void (*fn)(void *), size_t mapnum, void **hostaddrs,
                           size_t *sizes, unsigned short *kinds, int num_gangs,
                           int num_workers, int vector_length, int async, int num_waits, ...)
{
    READ_WAITS(w, num_waits);
    unsigned dims[3] = {num_gangs, num_workers, vector_length};
    acc_parallel(flags_m, fn, mapnum, hostaddrs, sizes, kinds, async, &w, dims);
}

static int64_t acc_data(int op, int flags_m, size_t n, void **hostaddrs, size_t *sizes,
                        unsigned short *kinds, int async, struct waits *w)
{
    ensure();
    uint64_t small[3 * SMALL], *items = acc_pack(n, hostaddrs, sizes, kinds, small);
    int64_t r = pg_py_acc_data(op, ~flags_m, n, items, (uintptr_t *)hostaddrs, async,
                               w ? w->n : 0, w ? w->v : NULL);
    if (items != small)
        free(items);
    if (w)
        drop_waits(w);
    if (!r)
        fail();
    return r;
}

EXPORT void GOACC_data_start(int flags_m, size_t mapnum, void **hostaddrs, size_t *sizes,
                             unsigned short *kinds)
{
    /* host_data use_device: Python writes the device addresses back into hostaddrs. */
    trace_construct(__func__, mapnum, hostaddrs, sizes, kinds);
    trace("prepare mappings", __func__);
    push_region(&acc_regions, acc_data(ACC_DATA, flags_m, mapnum, hostaddrs, sizes, kinds,
                                       ASYNC_SYNC, NULL));
    trace("mappings prepared", __func__);
}

EXPORT void GOACC_data_end(void)
{
    trace("restore mappings", __func__);
    end_region(&acc_regions);
    trace("mappings restored", __func__);
}

/* The data constructs that take an async queue and a wait list. */
#define ACC_DATA_CONSTRUCT(name, op)                                                        \
    EXPORT void name(int flags_m, size_t mapnum, void **hostaddrs, size_t *sizes,          \
                     unsigned short *kinds, int async, int num_waits, ...)                 \
    {                                                                                       \
        READ_WAITS(w, num_waits);                                                           \
        acc_data(op, flags_m, mapnum, hostaddrs, sizes, kinds, async, &w);                  \
    }

ACC_DATA_CONSTRUCT(GOACC_enter_data, ACC_ENTER)
ACC_DATA_CONSTRUCT(GOACC_exit_data, ACC_EXIT)
ACC_DATA_CONSTRUCT(GOACC_enter_exit_data, ACC_ENTER_EXIT)   /* GCC 11: the kinds tell which */
ACC_DATA_CONSTRUCT(GOACC_update, ACC_UPDATE)

EXPORT void GOACC_wait(int async, int num_waits, ...)
{
    READ_WAITS(w, num_waits);
    acc_data(ACC_WAIT, ~0, 0, NULL, NULL, NULL, async, &w);
}

EXPORT void GOACC_declare(int flags_m, size_t mapnum, void **hostaddrs, size_t *sizes,
                          unsigned short *kinds)
{
    acc_data(ACC_DECLARE, flags_m, mapnum, hostaddrs, sizes, kinds, ASYNC_SYNC, NULL);
}

/* Legacy entry points (GCC 5): a region's host code runs in one thread. */
EXPORT int GOACC_get_num_threads(void)
{
    return 1;
}

EXPORT int GOACC_get_thread_num(void)
{
    return 0;
}

/* The acc_* routines, answered by acc_routines.py: one call with a routine number (R_*), three
   argument words and an async queue. */
static uint64_t acc_call(int routine, uint64_t a, uint64_t b, uint64_t c, int async)
{
    uint64_t words[3] = {a, b, c}, result = 0;
    ensure();
    if (!pg_py_acc(routine, words, async, &result))
        fail();
    return result;
}

#define W(x) ((uint64_t)(uintptr_t)(x))
#define I(x) ((uint64_t)(int64_t)(x))
#define SYNC ASYNC_SYNC

EXPORT int acc_get_num_devices(int d) { return acc_call(R_GET_NUM_DEVICES, I(d), 0, 0, SYNC); }
EXPORT void acc_set_device_type(int d) { acc_call(R_SET_DEVICE_TYPE, I(d), 0, 0, SYNC); }
EXPORT int acc_get_device_type(void) { return acc_call(R_GET_DEVICE_TYPE, 0, 0, 0, SYNC); }
EXPORT void acc_set_device_num(int n, int d) { acc_call(R_SET_DEVICE_NUM, I(n), I(d), 0, SYNC); }
EXPORT int acc_get_device_num(int d) { return acc_call(R_GET_DEVICE_NUM, I(d), 0, 0, SYNC); }
EXPORT void acc_init(int d) { acc_call(R_INIT, I(d), 0, 0, SYNC); }
EXPORT size_t acc_get_property(int n, int d, int p)
{
    return acc_call(R_GET_PROPERTY, I(n), I(d), I(p), SYNC);
}
EXPORT const char *acc_get_property_string(int n, int d, int p)
{
    return (const char *)acc_call(R_GET_PROPERTY_STRING, I(n), I(d), I(p), SYNC);
}
EXPORT void acc_shutdown(int d) { acc_call(R_SHUTDOWN, I(d), 0, 0, SYNC); }

/* Code outside a compute region runs on the host; inside one, on its device (GCC
   folds a direct call of acc_on_device in optimized code to the host's answer). */
EXPORT int acc_on_device(int d)
{
    int t = acc_region_type;
    if (!t || t == ACC_DEVICE_HOST)
        return d == ACC_DEVICE_HOST || d == ACC_DEVICE_NONE;
    if (t == ACC_DEVICE_HOST_NONSHM)    /* host code, memory of its own */
        return d == ACC_DEVICE_HOST || d == ACC_DEVICE_NONE || d == ACC_DEVICE_HOST_NONSHM;
    return d == t || d == ACC_DEVICE_NOT_HOST;
}

EXPORT void *acc_malloc(size_t s) { return (void *)acc_call(R_MALLOC, s, 0, 0, SYNC); }
EXPORT void acc_free(void *d) { acc_call(R_FREE, W(d), 0, 0, SYNC); }

EXPORT void *acc_copyin(void *h, size_t s) { return (void *)acc_call(R_COPYIN, W(h), s, 0, SYNC); }
EXPORT void *acc_present_or_copyin(void *h, size_t s) { return acc_copyin(h, s); }
EXPORT void *acc_pcopyin(void *h, size_t s) { return acc_copyin(h, s); }
EXPORT void acc_copyin_async(void *h, size_t s, int q) { acc_call(R_COPYIN, W(h), s, 0, q); }
EXPORT void *acc_create(void *h, size_t s) { return (void *)acc_call(R_CREATE, W(h), s, 0, SYNC); }
EXPORT void *acc_present_or_create(void *h, size_t s) { return acc_create(h, s); }
EXPORT void *acc_pcreate(void *h, size_t s) { return acc_create(h, s); }
EXPORT void acc_create_async(void *h, size_t s, int q) { acc_call(R_CREATE, W(h), s, 0, q); }
EXPORT void acc_copyout(void *h, size_t s) { acc_call(R_COPYOUT, W(h), s, 0, SYNC); }
EXPORT void acc_copyout_async(void *h, size_t s, int q) { acc_call(R_COPYOUT, W(h), s, 0, q); }
EXPORT void acc_copyout_finalize(void *h, size_t s)
{
    acc_call(R_COPYOUT_FINALIZE, W(h), s, 0, SYNC);
}
EXPORT void acc_copyout_finalize_async(void *h, size_t s, int q)
{
    acc_call(R_COPYOUT_FINALIZE, W(h), s, 0, q);
}
EXPORT void acc_delete(void *h, size_t s) { acc_call(R_DELETE, W(h), s, 0, SYNC); }
EXPORT void acc_delete_async(void *h, size_t s, int q) { acc_call(R_DELETE, W(h), s, 0, q); }
EXPORT void acc_delete_finalize(void *h, size_t s) { acc_call(R_DELETE_FINALIZE, W(h), s, 0, SYNC); }
EXPORT void acc_delete_finalize_async(void *h, size_t s, int q)
{
    acc_call(R_DELETE_FINALIZE, W(h), s, 0, q);
}
EXPORT void acc_update_device(void *h, size_t s) { acc_call(R_UPDATE_DEVICE, W(h), s, 0, SYNC); }
EXPORT void acc_update_device_async(void *h, size_t s, int q)
{
    acc_call(R_UPDATE_DEVICE, W(h), s, 0, q);
}
EXPORT void acc_update_self(void *h, size_t s) { acc_call(R_UPDATE_SELF, W(h), s, 0, SYNC); }
EXPORT void acc_update_self_async(void *h, size_t s, int q)
{
    acc_call(R_UPDATE_SELF, W(h), s, 0, q);
}
EXPORT int acc_is_present(void *h, size_t s) { return acc_call(R_IS_PRESENT, W(h), s, 0, SYNC); }
EXPORT void *acc_deviceptr(void *h) { return (void *)acc_call(R_DEVICEPTR, W(h), 0, 0, SYNC); }
EXPORT void *acc_hostptr(void *d) { return (void *)acc_call(R_HOSTPTR, W(d), 0, 0, SYNC); }
EXPORT void acc_map_data(void *h, void *d, size_t s) { acc_call(R_MAP_DATA, W(h), W(d), s, SYNC); }
EXPORT void acc_unmap_data(void *h) { acc_call(R_UNMAP_DATA, W(h), 0, 0, SYNC); }
EXPORT void acc_memcpy_to_device(void *d, void *h, size_t s)
{
    acc_call(R_MEMCPY_TO_DEVICE, W(d), W(h), s, SYNC);
}
EXPORT void acc_memcpy_to_device_async(void *d, void *h, size_t s, int q)
{
    acc_call(R_MEMCPY_TO_DEVICE, W(d), W(h), s, q);
}
EXPORT void acc_memcpy_from_device(void *h, void *d, size_t s)
{
    acc_call(R_MEMCPY_FROM_DEVICE, W(h), W(d), s, SYNC);
}
EXPORT void acc_memcpy_from_device_async(void *h, void *d, size_t s, int q)
{
    acc_call(R_MEMCPY_FROM_DEVICE, W(h), W(d), s, q);
}
EXPORT void acc_attach(void **p) { acc_call(R_ATTACH, W(p), 0, 0, SYNC); }
EXPORT void acc_attach_async(void **p, int q) { acc_call(R_ATTACH, W(p), 0, 0, q); }
EXPORT void acc_detach(void **p) { acc_call(R_DETACH, W(p), 0, 0, SYNC); }
EXPORT void acc_detach_async(void **p, int q) { acc_call(R_DETACH, W(p), 0, 0, q); }
EXPORT void acc_detach_finalize(void **p) { acc_call(R_DETACH_FINALIZE, W(p), 0, 0, SYNC); }
EXPORT void acc_detach_finalize_async(void **p, int q)
{
    acc_call(R_DETACH_FINALIZE, W(p), 0, 0, q);
}

EXPORT int acc_async_test(int q) { return acc_call(R_ASYNC_TEST, I(q), 0, 0, SYNC); }
EXPORT int acc_async_test_all(void) { return acc_call(R_ASYNC_TEST_ALL, 0, 0, 0, SYNC); }
EXPORT void acc_wait(int q) { acc_call(R_WAIT, I(q), 0, 0, SYNC); }
EXPORT void acc_async_wait(int q) { acc_wait(q); }
EXPORT void acc_wait_all(void) { acc_call(R_WAIT_ALL, 0, 0, 0, SYNC); }
EXPORT void acc_async_wait_all(void) { acc_wait_all(); }
EXPORT void acc_wait_async(int q1, int q2) { acc_call(R_WAIT_ASYNC, I(q1), I(q2), 0, SYNC); }
EXPORT void acc_wait_all_async(int q) { acc_call(R_WAIT_ALL_ASYNC, I(q), 0, 0, SYNC); }

/* OpenACC's CUDA interop: NULL (0) unless the thread's device is a CUDA one. */
EXPORT void *acc_get_current_cuda_device(void)
{
    return (void *)acc_call(R_CUDA_DEVICE, 0, 0, 0, SYNC);
}
EXPORT void *acc_get_current_cuda_context(void)
{
    return (void *)acc_call(R_CUDA_CONTEXT, 0, 0, 0, SYNC);
}
EXPORT void *acc_get_cuda_stream(int q)
{
    return (void *)acc_call(R_CUDA_STREAM, I(q), 0, 0, SYNC);
}
EXPORT int acc_set_cuda_stream(int q, void *stream)
{
    return acc_call(R_SET_CUDA_STREAM, I(q), W(stream), 0, SYNC);
}

/* -- GCC 5's OpenMP entry points: 8-bit map kinds ----------------------------------- */

/* The kind in the low 3 bits and log2 of the alignment above them, widened to the
   16-bit kinds of GCC 6 and later (kind in the low byte, alignment in the high one). */
static unsigned short *wide_kinds(size_t n, const unsigned char *kinds, unsigned short *small)
{
    unsigned short *k = n <= SMALL ? small : malloc(n * sizeof *k);
    if (!k)
        fatal("pygomp: out of memory for map kinds");
    for (size_t i = 0; i < n; i++)
        k[i] = (unsigned short)((kinds[i] & 7) | (kinds[i] >> 3) << 8);
    return k;
}

#define WIDE_KINDS(k, n, kinds) \
    unsigned short small_[SMALL], *k = wide_kinds(n, kinds, small_)
#define FREE_KINDS(k) \
    if (k != small_)    \
        free(k)

EXPORT void GOMP_target(int device, void (*fn)(void *), const void *unused, size_t mapnum,
                        void **hostaddrs, size_t *sizes, unsigned char *kinds)
{
    WIDE_KINDS(k, mapnum, kinds);
    GOMP_target_ext(device, fn, mapnum, hostaddrs, sizes, k, 0, NULL, NULL);
    FREE_KINDS(k);
}

EXPORT void GOMP_target_data(int device, const void *unused, size_t mapnum, void **hostaddrs,
                             size_t *sizes, unsigned char *kinds)
{
    WIDE_KINDS(k, mapnum, kinds);
    GOMP_target_data_ext(device, mapnum, hostaddrs, sizes, k);
    FREE_KINDS(k);
}

EXPORT void GOMP_target_update(int device, const void *unused, size_t mapnum,
                               void **hostaddrs, size_t *sizes, unsigned char *kinds)
{
    WIDE_KINDS(k, mapnum, kinds);
    GOMP_target_update_ext(device, mapnum, hostaddrs, sizes, k, 0, NULL);
    FREE_KINDS(k);
}

/* -- omp_pause_resource: offload devices keep nothing to release; the initial
   device's threads are libgomp's ------------------------------------------------------ */

EXPORT int omp_pause_resource(int kind, int device_num)
{
    static int (*real_pause_all)(int);
    if (!real_pause_all)
        real_pause_all = (int (*)(int))next_symbol("omp_pause_resource_all");
    ensure();
    int n = pg_py_num_devices();
    if (device_num == n)
        return real_pause_all(kind);
    return device_num < 0 || device_num > n ? -1 : 0;
}

EXPORT int omp_pause_resource_all(int kind)
{
    ensure();
    return omp_pause_resource(kind, pg_py_num_devices());
}

/* -- Fortran's names of the device routines (libgomp's own call its C routines
   directly, past this library; its acc_*_h_ ones call them through the PLT) ----------- */

static int clamp(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int)v;
}

EXPORT int32_t omp_get_num_devices_(void) { return omp_get_num_devices(); }
EXPORT int32_t omp_get_default_device_(void) { return omp_get_default_device(); }
EXPORT void omp_set_default_device_(const int32_t *d) { omp_set_default_device(*d); }
EXPORT void omp_set_default_device_8_(const int64_t *d) { omp_set_default_device(clamp(*d)); }
EXPORT int32_t omp_is_initial_device_(void) { return omp_is_initial_device(); }
EXPORT int32_t omp_get_initial_device_(void) { return omp_get_initial_device(); }
EXPORT int32_t omp_get_device_num_(void) { return omp_get_device_num(); }
EXPORT int32_t omp_pause_resource_(const int32_t *kind, const int32_t *device_num)
{
    return omp_pause_resource(*kind, *device_num);
}
EXPORT int32_t omp_pause_resource_all_(const int32_t *kind)
{
    return omp_pause_resource_all(*kind);
}
