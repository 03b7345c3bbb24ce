"""A kernel that faults says which it was; a store past the end of host-device memory
is caught when the kernel returns.

The report.  A small shared object (`SOURCE`, built once by the C compiler and kept in
the disk cache) puts a handler before SIGSEGV's and SIGBUS's.  The runtime keeps
records of the kernels in flight, each a line made once per kernel and device
(`line`, kept for the life of the process): a thread that runs a kernel from C
(`pygomp_fault_run`, the host device and the initial device) holds its kernel's line in
a thread-local word and in a slot of a shared table; a device whose kernels run in
threads of its own (an OpenCL device on the CPU) has a slot that holds its last launched
kernel (`queue_slot`, written at each launch).  The handler writes, with write(2)
alone, the faulting thread's own line, or where that thread never ran a kernel (an
OpenMP or OpenCL worker) the line of every slot in use; then it gives the signal back
its previous action (Python's faulthandler, or the default), so that the fault, taken
again, ends the process as it would have (status 139 or 135).  One line a process.  A
C program under libpygomp.so runs its own regions without a line: the handler
writes nothing for them.

The guard.  On the host device (memory of its own), each allocation (`alloc`) has a
header before it (its address and size, so that C finds the end from the address) and
`TAIL` bytes of a known pattern after it.  `pygomp_fault_run` compares the guards of the
kernel's array words once the kernel returns; a damaged one is put back and the call
raises `OverrunError` naming the kernel and the array (`overrun`).  The small items that
libpygomp.so's C makes for the regions it runs have the same header and guard
(these numbers, which the C face gives C as GUARD_*), so that Python frees them once
it adopted them.
"""
from __future__ import annotations

import _thread
import linecache
import os
import re

from . import cache, hostmem
from .hostmem import c_function, ffi
from .plugin import PluginError

HEAD = 64                   # bytes before an allocation: its address ^ MAGIC, its size
TAIL = 64                   # bytes of PATTERN after it
MAGIC = 0x7079676F6D70      # "pygomp"
PATTERN = 0xFD
SLOTS = 64                  # threads and queues that may hold a record at once
HINT = ": a read or write outside an array? Rerun with PYGOMP_BOUNDSCHECK=1 to find it.\n"

SOURCE = r"""
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define SLOTS %(SLOTS)d
#define HEAD %(HEAD)d
#define TAIL %(TAIL)d
#define MAGIC %(MAGIC)dULL
#define PATTERN %(PATTERN)d

#define MINE __thread __attribute__((tls_model("initial-exec")))

const char *volatile pygomp_fault_slots[SLOTS];
static int taken, said;
static MINE int slot;                   /* 1 + this thread's slot; -1: none was free */
static MINE const char *running;        /* the line of the kernel this thread runs */
static struct sigaction previous[2];    /* SIGSEGV's and SIGBUS's */

static void say(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    while (n) {
        ssize_t w = write(2, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void on_fault(int sig, siginfo_t *info, void *context)
{
    (void)context;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_SEQ_CST)) {
        const char *mine = running;
        if (mine)
            say(mine);
        else if (slot == 0)             /* a worker thread: every kernel in flight */
            for (int i = 0; i < SLOTS; i++) {
                const char *s = pygomp_fault_slots[i];
                if (s)
                    say(s);
            }
    }
    sigaction(sig, &previous[sig == SIGBUS], NULL);
    if (info->si_code <= 0)             /* sent, not a fault: send it again */
        raise(sig);
}

int pygomp_fault_install(void)
{
    static const int sigs[2] = {SIGSEGV, SIGBUS};
    for (int i = 0; i < 2; i++) {
        struct sigaction now, mine;
        if (sigaction(sigs[i], NULL, &now) != 0)
            return -1;
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault)
            continue;
        memset(&mine, 0, sizeof mine);
        mine.sa_sigaction = on_fault;
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&mine.sa_mask);
        previous[i] = now;
        if (sigaction(sigs[i], &mine, NULL) != 0)
            return -1;
    }
    return 0;
}

/* A free slot of the table, or -1. */
int pygomp_fault_slot(void)
{
    int s = __atomic_fetch_add(&taken, 1, __ATOMIC_SEQ_CST);
    return s < SLOTS ? s : -1;
}

/* A kernel's record `k`: its entry, its line, then the indices of its address words,
   ending with -1.  entry(words, plan) with the line as this thread's record; then the
   guards of those words: the position of the first damaged one among them (every
   damaged one put back), or -1. */
int pygomp_fault_run(const uint64_t *k, uint64_t *words, const int64_t *plan)
{
    static const unsigned char pattern[TAIL] = {[0 ... TAIL - 1] = PATTERN};
    void (*entry)(uint64_t *, const int64_t *) =
        (void (*)(uint64_t *, const int64_t *))(uintptr_t)k[0];
    const char *who = (const char *)(uintptr_t)k[1];
    int s = slot;
    if (s == 0) {
        s = pygomp_fault_slot();
        s = slot = s < 0 ? -1 : s + 1;
    }
    const char *before = running;
    running = who;
    if (s > 0)
        pygomp_fault_slots[s - 1] = who;
    entry(words, plan);
    running = before;
    if (s > 0)
        pygomp_fault_slots[s - 1] = before;
    int bad = -1;
    for (int i = 0; k[2 + i] != (uint64_t)-1; i++) {
        uint64_t a = words[k[2 + i]];
        if (a < HEAD)
            continue;
        const uint64_t *head = (const uint64_t *)(uintptr_t)(a - HEAD);
        if (head[0] != (a ^ MAGIC))     /* inside an allocation, not its start */
            continue;
        unsigned char *tail = (unsigned char *)(uintptr_t)(a + head[1]);
        if (memcmp(tail, pattern, TAIL) != 0) {
            memcpy(tail, pattern, TAIL);
            if (bad < 0)
                bad = i;
        }
    }
    return bad;
}
""" % {"SLOTS": SLOTS, "HEAD": HEAD, "TAIL": TAIL, "MAGIC": MAGIC, "PATTERN": PATTERN}

RTLD_NOW, RTLD_GLOBAL = 2, 0x100
RUN_TYPE = "int (*)(const uint64_t *, uint64_t *, const int64_t *)"
_lock = _thread.allocate_lock()
_lib = []                   # [(run, slot, slots)] once loaded; [None] where it cannot be
_lines = {}                 # text -> its C string, kept for the life of the process
_where = {}                 # an entry's name -> (the code of its kernel, arrays' names)
_memset = c_function("memset", "void *(*)(uintptr_t, int, size_t)")
_madvise = hostmem._madvise
MADV_NOHUGEPAGE = 15


class OverrunError(PluginError):
    """A kernel wrote past the end of an array on the host device (its guard)."""


def note(name: str, code, arrays) -> None:
    """Say that the kernel whose (first) entry is ``name`` is the function of ``code``,
    and the names of its array words in order (a face says it before the kernel is
    loaded)."""
    _where[name] = (code, tuple(arrays))


def where(info):
    """``("file:line" of the def, array names)`` of a noted kernel, or None (a C
    program's)."""
    name = re.sub(r"__e\d+$", "", info.entries[0]) if info.entries else info.name
    noted = _where.get(name)
    if noted is None:
        return None
    code, arrays = noted
    first = code.co_firstlineno         # a decorated function's: its first decorator
    for n in range(first, first + 50):
        if linecache.getline(code.co_filename, n).lstrip().startswith(("def ", "async def")):
            first = n
            break
    return f"{code.co_filename}:{first}", arrays


def _load(compile_c, compiler_id):
    """``(run, slot, slots)`` of the loaded object with its handler put in, or None
    (no compiler, no cache: kernels then run without a record)."""
    with _lock:
        if not _lib:
            _lib.append(None)
            path = cache.helper_object("fault report", SOURCE, compiler_id, compile_c,
                                       "pygomp_fault")
            if path is None:
                return None
            dlopen = c_function("dlopen", "void *(*)(const char *, int)")
            dlsym = c_function("dlsym", "void *(*)(void *, const char *)")
            handle = dlopen(os.fsencode(path), RTLD_NOW | RTLD_GLOBAL)
            if handle == ffi.NULL:
                return None
            install = ffi.cast("int (*)(void)", dlsym(handle, b"pygomp_fault_install"))
            if install() != 0:
                return None
            _lib[0] = (ffi.cast(RUN_TYPE, dlsym(handle, b"pygomp_fault_run")),
                       ffi.cast("int (*)(void)", dlsym(handle, b"pygomp_fault_slot")),
                       ffi.cast("const char **", dlsym(handle, b"pygomp_fault_slots")))
        return _lib[0]


def line(info, device: str, queued: bool = False):
    """The C string the handler writes for kernel ``info`` on ``device`` (a plugin's
    label), or None for a kernel no face noted (a C program's region).  ``queued``: the
    kernel runs in the device's own threads, so the line names the last launched."""
    noted = where(info)
    if noted is None:
        return None
    how = f", the last launched on {device}," if queued else f" on {device}"
    text = f"pygomp: kernel '{info.name}' ({noted[0]}){how} faulted{HINT}"
    with _lock:
        c = _lines.get(text)
        if c is None:
            c = _lines[text] = ffi.new("char[]", text.encode(errors="replace"))
    return c


def runner(compile_c, compiler_id):
    """`pygomp_fault_run` (see the module's docstring), its handler put in; None where
    the object cannot be built."""
    lib = _load(compile_c, compiler_id)
    return lib and lib[0]


def queue_slot(compile_c, compiler_id):
    """``(table, index)``: a slot for a device's last launched kernel (``table[index] =
    line``), or None."""
    lib = _load(compile_c, compiler_id)
    if lib is None:
        return None
    s = lib[1]()
    return None if s < 0 else (lib[2], s)


def record(info, entry: int, who, guarded: bool):
    """The record `pygomp_fault_run` takes for a kernel's entry (an address) and line
    ``who`` (from `line`): with ``guarded``, the indices of its address words."""
    words = [i for i, c in enumerate(info.args) if c == "p"] if guarded else []
    return ffi.new("uint64_t[]", [entry, int(ffi.cast("uintptr_t", who)), *words,
                                  (1 << 64) - 1])


def overrun(info, device: str, position: int) -> OverrunError:
    """The error for a damaged guard of the kernel's ``position``-th address word."""
    noted = where(info)
    names = noted[1] if noted else ()
    what = (f"array {names[position]!r}" if position < len(names)
            else "its result" if position == len(names) else f"address word {position}")
    return OverrunError(f"kernel '{info.name}' wrote past the end of {what} on {device}: "
                        f"rerun with PYGOMP_BOUNDSCHECK=1 to find the index")


# -- guarded allocations (the host device) ---------------------------------------------

def alloc(size: int) -> int:
    """The address of ``size`` bytes of new memory with its header and guard, 0 if there
    is none; aligned as `hostmem.alloc` aligns (a huge one's header on a page of its
    own, kept off huge pages)."""
    head = hostmem.PAGE if size + TAIL >= hostmem.HUGE else HEAD
    base = hostmem.alloc(head + size + TAIL)
    if not base:
        return 0
    if head == hostmem.PAGE and _madvise is not None:
        _madvise(base, head, MADV_NOHUGEPAGE)
    a = base + head
    words = ffi.cast("uint64_t *", a - HEAD)
    words[0], words[1], words[2] = a ^ MAGIC, size, head
    _memset(a + size, PATTERN, TAIL)
    return a


def free(addr: int) -> None:
    """Free what `alloc` gave (or libpygomp.so's C made the same way and Python adopted
    into its map)."""
    hostmem.free(addr - ffi.cast("uint64_t *", addr - HEAD)[2])
