/* OpenACC's profiling interface (OpenACC 2.7, chapter 5): the registry of callbacks
   and their dispatch.  build.py appends this file to shim.c (one translation unit).

   The registry lives in C, so that a tool registers before Python starts (from
   ACC_PROFLIB's library, loaded by a constructor here, or from a program's own
   constructor).  Events arise in Python (pygomp/runtime/accprof.py), which fills the
   three structs and calls pg_prof_dispatch for each event.  Python
   tests one word of its own before it does anything: a copy of pg_prof_mask (bit E set
   while a callback for event E is registered and enabled), read again at each change. */

/* acc_prof.h's types (GCC 12's layout, LP64), as this file names them; build.py gives
   cffi this block too (pygomp/runtime/accprof.py fills them). */
/* types: begin */
typedef struct {
    int event_type, valid_bytes, version, device_type, device_number, thread_id;
    long async, async_queue;
    const char *src_file, *func_name;
    int line_no, end_line_no, func_line_no, func_end_line_no;
} pg_prof_info;

typedef struct {
    int event_type, valid_bytes, parent_construct, implicit;
    void *tool_info;
    const char *var_name;
    unsigned long bytes;
    const void *host_ptr, *device_ptr;
} pg_data_event_info;

typedef struct {
    int event_type, valid_bytes, parent_construct, implicit;
    void *tool_info;
    const char *kernel_name;
    unsigned long num_gangs, num_workers, vector_length;
} pg_launch_event_info;

typedef struct {
    int event_type, valid_bytes, parent_construct, implicit;
    void *tool_info;
} pg_other_event_info;

typedef union {
    int event_type;
    pg_data_event_info data_event;
    pg_launch_event_info launch_event;
    pg_other_event_info other_event;
} pg_event_info;

typedef struct {
    int device_api, valid_bytes, device_type, vendor;
    const void *device_handle, *context_handle, *async_handle;
} pg_api_info;
/* types: end */

typedef void (*pg_prof_callback)(pg_prof_info *, pg_event_info *, pg_api_info *);
typedef void (*pg_prof_reg)(int, pg_prof_callback, int);
typedef void (*pg_query_fn)(void);
typedef pg_query_fn (*pg_prof_lookup_func)(const char *);

enum { EV_NONE = 0, EV_LAST = 26 };
enum { REG = 0, TOGGLE = 1, TOGGLE_PER_THREAD = 2 };

struct prof_entry {
    pg_prof_callback cb;
    int ref, enabled;
    struct prof_entry *next;
};

static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prof_entry *prof_entries[EV_LAST];
static int prof_off[EV_LAST];           /* acc_toggle with no callback: event off */
static __thread int prof_thread_off;    /* acc_toggle_per_thread */
static uint64_t pg_prof_mask;
static int prof_python;                 /* Python reads the mask: tell it of changes */

/* End events call their callbacks in the reverse order of registration. */
static int is_end_event(int ev)
{
    switch (ev) {
    case 2: case 4: case 11: case 13: case 15: case 17: case 19: case 21: case 23: case 25:
        return 1;
    }
    return 0;
}

/* The mask from the registry (prof_lock held). */
static uint64_t prof_new_mask(void)
{
    uint64_t m = 0;
    if (prof_off[EV_NONE])
        return 0;
    for (int ev = 1; ev < EV_LAST; ev++) {
        if (prof_off[ev])
            continue;
        for (struct prof_entry *e = prof_entries[ev]; e; e = e->next)
            if (e->enabled) {
                m |= (uint64_t)1 << ev;
                break;
            }
    }
    return m;
}

static void prof_changed(void)     /* prof_lock held on entry, released on return */
{
    uint64_t m = prof_new_mask();
    int tell = m != pg_prof_mask && prof_python;
    pg_prof_mask = m;
    pthread_mutex_unlock(&prof_lock);
    if (tell) {             /* Python reads the mask again (pg_prof_attach) */
        ensure();
        pg_py_prof_mask();
    }
}

static int prof_enabled;                /* a register call was made (libgomp's flag) */

/* GOMP_DEBUG: libgomp's lines for what a request did (shim.c's debug_on). */
static void prof_debug(const char *text)
{
    if (debug_on())
        fputs(text, stderr);
}

/* Register (add = 1) or unregister (0), with libgomp's rules: acc_reg counts, an
   acc_toggle with a callback enables or disables it, without one the whole event
   (acc_ev_none: every event), and acc_toggle_per_thread with acc_ev_none and no
   callback this thread's dispatch.  Anything else is ignored, and so is an unregister
   before any register. */
static void prof_change(int ev, pg_prof_callback cb, int reg, int add)
{
    if (debug_on())
        fprintf(stderr, "%s: ev=%d, cb=%p, reg=%d\n",
                add ? "acc_prof_register" : "acc_prof_unregister", ev, (void *)cb, reg);
    if (add)
        prof_enabled = 1;
    else if (!prof_enabled)
        return;
    if (ev < EV_NONE || ev >= EV_LAST) {
        prof_debug("  ignoring request for bogus 'acc_event_t'\n");
        return;
    }
    if (reg != REG && reg != TOGGLE && reg != TOGGLE_PER_THREAD) {
        prof_debug("  ignoring request with bogus 'acc_register_t'\n");
        return;
    }
    if (reg == REG && (ev == EV_NONE || !cb))
        return;
    if (reg == TOGGLE_PER_THREAD) {
        if (ev == EV_NONE && !cb) {
            prof_debug(add ? "  thread: enabling callbacks\n" : "  thread: disabling callbacks\n");
            prof_thread_off = !add;
        } else {
            prof_debug("  ignoring bogus request\n");
        }
        return;
    }
    if (reg == TOGGLE && (!cb || ev == EV_NONE)) {
        if (cb) {
            prof_debug("  ignoring request\n");
            return;
        }
        prof_debug(add ? "  globally enabling callbacks\n" : "  globally disabling callbacks\n");
        pthread_mutex_lock(&prof_lock);
        prof_off[ev] = !add;
        prof_changed();
        return;
    }
    pthread_mutex_lock(&prof_lock);
    struct prof_entry **at = &prof_entries[ev], *e;
    while (*at && (*at)->cb != cb)
        at = &(*at)->next;
    e = *at;
    if (reg == TOGGLE) {
        prof_debug(!e ? "  ignoring request: is not registered\n"
                       : add ? "  enabling\n" : "  disabling\n");
        if (e)
            e->enabled = add;
    } else if (add && e) {
        e->ref++;
        if (debug_on())
            fprintf(stderr, "  already registered; incrementing reference count to: %d\n",
                    e->ref);
    } else if (add) {
        e = malloc(sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&prof_lock);
            fatal("pygomp: out of memory registering a profiling callback");
        }
        *e = (struct prof_entry){cb, 1, 1, NULL};
        if (is_end_event(ev) || !prof_entries[ev]) {
            prof_debug("  prepending\n");
            e->next = prof_entries[ev];
            prof_entries[ev] = e;
        } else {
            prof_debug("  appending\n");
            *at = e;
        }
    } else if (!e) {
        prof_debug("  ignoring bogus request: is not registered\n");
    } else {
        if (debug_on())
            fprintf(stderr, "  decrementing reference count to: %d\n", e->ref - 1);
        if (--e->ref == 0) {
            *at = e->next;
            free(e);
        }
    }
    prof_changed();
}

EXPORT void acc_prof_register(int ev, pg_prof_callback cb, int reg)
{
    prof_change(ev, cb, reg, 1);
}

EXPORT void acc_prof_unregister(int ev, pg_prof_callback cb, int reg)
{
    prof_change(ev, cb, reg, 0);
}

/* No runtime-specific query routines. */
EXPORT pg_query_fn acc_prof_lookup(const char *name)
{
    if (debug_on())
        fprintf(stderr, "acc_prof_lookup (%s)\n", name ? name : "NULL");
    return NULL;
}

/* A tool's library defines its own; the runtime's does nothing. */
EXPORT void acc_register_library(pg_prof_reg reg, pg_prof_reg unreg,
                                 pg_prof_lookup_func lookup)
{
    (void)reg, (void)unreg, (void)lookup;
}

/* Call the callbacks of one event (prof->event_type), in order; a callback may register
   or unregister others meanwhile (that counts from the next event on). */
static void pg_prof_dispatch(pg_prof_info *prof, pg_event_info *event, pg_api_info *api)
{
    int ev = prof->event_type;
    if (prof_thread_off || ev <= EV_NONE || ev >= EV_LAST)
        return;
    pg_prof_callback small[16], *cbs = small;
    size_t n = 0, room = 16;
    pthread_mutex_lock(&prof_lock);
    if (!prof_off[EV_NONE] && !prof_off[ev])
        for (struct prof_entry *e = prof_entries[ev]; e; e = e->next) {
            if (!e->enabled)
                continue;
            if (n == room) {
                pg_prof_callback *more = malloc(2 * room * sizeof *more);
                if (!more)
                    break;
                memcpy(more, cbs, n * sizeof *more);
                if (cbs != small)
                    free(cbs);
                cbs = more;
                room *= 2;
            }
            cbs[n++] = e->cb;
        }
    pthread_mutex_unlock(&prof_lock);
    for (size_t i = 0; i < n; i++)
        cbs[i](prof, event, api);
    if (cbs != small)
        free(cbs);
}

/* The mask now; from the first call on, Python is told of every change. */
static uint64_t pg_prof_attach(void)
{
    pthread_mutex_lock(&prof_lock);
    prof_python = 1;
    uint64_t m = pg_prof_mask;
    pthread_mutex_unlock(&prof_lock);
    return m;
}

/* ACC_PROFLIB: libraries separated by ';', each loaded and its acc_register_library
   called, at load time (before the program's main).  libgomp's initializer, which runs
   first, does so too, and the acc_prof_register it hands over is this one (it
   interposes on libgomp's): a library already loaded is left alone. */
__attribute__((constructor)) static void prof_load_libraries(void)
{
    const char *list = getenv("ACC_PROFLIB");
    if (!list || !*list)
        return;
    char *copy = strdup(list), *rest = copy, *name;
    if (!copy)
        fatal("pygomp: out of memory reading ACC_PROFLIB");
    while ((name = strsep(&rest, ";")) != NULL) {
        if (!*name)
            continue;
        void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            continue;
        }
        if (debug_on())
            fprintf(stderr, "goacc_profiling_initialize: dlopen (\"%s\")\n", name);
        h = dlopen(name, RTLD_LAZY);
        void (*init)(pg_prof_reg, pg_prof_reg, pg_prof_lookup_func) =
            h ? (void (*)(pg_prof_reg, pg_prof_reg, pg_prof_lookup_func))dlsym(
                    h, "acc_register_library")
              : NULL;
        if (!init || init == acc_register_library) {
            fprintf(stderr, "\nlibgomp: while loading ACC_PROFLIB \"%s\": %s\n", name,
                    h ? "no acc_register_library in it" : dlerror());
            if (h)
                dlclose(h);
            continue;
        }
        if (debug_on())
            fprintf(stderr, "  goacc_profiling_initialize: calling %s:acc_register_library\n",
                    name);
        init(acc_prof_register, acc_prof_unregister, acc_prof_lookup);
    }
    free(copy);
}
