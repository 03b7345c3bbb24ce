"""Ctrl-C that stops a running C kernel (the host device and the initial device).

A kernel's entry takes ``pygomp_stops`` when it starts, and each sequential loop of the
kernel leaves when that count has changed (`plugins.host.target`): a SIGINT adds one,
in the handler of a small shared object (`SOURCE`) that then calls the handler it
replaced, Python's.  The object
is loaded with RTLD_GLOBAL before any kernel, so every kernel's own (weak) definition
of the count gives way to its one; a kernel compiled into a C program keeps its own,
which nothing changes, and SIGINT ends that program as under libgomp.

The handler goes in only where SIGINT's Python handler is the runtime's
(`pygomp.runtime.interrupt`, put in where the program kept Python's default): a
program's own handler may go on after SIGINT, and must then not find a kernel's
results cut short.  A handler the program sets later replaces both (kernels then run to
their end, as before).  A launch that the count's change stopped raises KeyboardInterrupt
(`checked`), in whichever thread, so that its construct copies nothing back.
"""
from __future__ import annotations

import _thread
import os

from pygomp.runtime import cache, interrupt

SOURCE = r"""
#include <signal.h>
#include <string.h>

volatile unsigned pygomp_stops;
static struct sigaction previous;

static void on_sigint(int sig, siginfo_t *info, void *context)
{
    __atomic_add_fetch(&pygomp_stops, 1, __ATOMIC_SEQ_CST);
    if (previous.sa_flags & SA_SIGINFO)
        previous.sa_sigaction(sig, info, context);
    else if (previous.sa_handler != SIG_IGN && previous.sa_handler != SIG_DFL)
        previous.sa_handler(sig);
}

/* Puts on_sigint before SIGINT's handler, unless it is there already. */
int pygomp_stop_install(void)
{
    struct sigaction now, mine;
    if (sigaction(SIGINT, NULL, &now) != 0)
        return -1;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigint)
        return 0;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_sigint;
    mine.sa_flags = SA_SIGINFO | (now.sa_flags & (SA_ONSTACK | SA_RESTART));
    sigemptyset(&mine.sa_mask);
    previous = now;
    return sigaction(SIGINT, &mine, NULL);
}
"""

RTLD_NOW, RTLD_GLOBAL = 2, 0x100
_lock = _thread.allocate_lock()
_loaded = []                # [(pygomp_stop_install, the count)] once the object is loaded


def install(libc, ffi, compile_c, compiler_id):
    """The count (an ``unsigned *``), its handler put in before SIGINT's, where the
    runtime's own SIGINT handler is in (`pygomp.runtime.interrupt`); else None (also
    where the object cannot be built: kernels then run to their end)."""
    if not interrupt.ours():
        return None
    with _lock:
        if not _loaded:
            path = cache.helper_object("host stop", SOURCE, compiler_id, compile_c,
                                       "pygomp_stop")
            if path is None:
                return None
            handle = libc.dlopen(os.fsencode(path), RTLD_NOW | RTLD_GLOBAL)
            if handle == ffi.NULL:
                return None
            put_in = libc.dlsym(handle, b"pygomp_stop_install")
            _loaded.append((ffi.cast("int (*)(void)", put_in),
                            ffi.cast("unsigned *", libc.dlsym(handle, b"pygomp_stops"))))
        put_in, count = _loaded[0]
        return count if put_in() == 0 else None


def checked(entry, count):
    """``entry`` called as it is, raising `interrupt.stopped` when Ctrl-C stopped it."""
    def run(words, plan):
        before = count[0]
        entry(words, plan)
        if count[0] != before:
            raise interrupt.stopped()
    return run
