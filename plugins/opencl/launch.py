"""A kernel's looping program issued from C: one call makes all its launches.

A kernel whose program loops (`KernelInfo.program`: a sequential loop around a gang
loop) makes thousands of launches a run, with a read of a scratch word now and then.
From Python each costs a pyopencl call and an Event object; here one C call walks the
program: ``clEnqueueNDRangeKernel`` for each entry (the first after the run's events),
a blocking ``clEnqueueReadBuffer`` of the word a ``repeat`` or ``while`` reads, and only
the last launch's event kept, which the run returns.  The call releases the GIL.

The C code is built once by the C compiler and kept in the disk cache.  Where there is
none, `launcher()` is None and the plugin enqueues each launch from Python.  The program
is flattened once per launch plan (`Prepared`): an entry's index k >= 0 launches it;
``-1, w, n`` repeats the next n ops as often as word w says; ``-2, w, n`` runs them
while word w (read before each round) is nonzero.
"""
from __future__ import annotations

import ctypes
import glob
import os
import threading

import _cffi_backend

from pygomp.errors import CompileError
from pygomp.runtime import cache

SOURCE = r"""
#include <stddef.h>
#include <stdint.h>
typedef int32_t cl_int;
typedef cl_int (*enqueue_t)(void *, void *, uint32_t, const size_t *, const size_t *,
                            const size_t *, uint32_t, void *const *, void **);
typedef cl_int (*read_t)(void *, void *, uint32_t, size_t, size_t, void *, uint32_t,
                         void *const *, void **);
typedef cl_int (*release_t)(void *);

struct run {
    enqueue_t enqueue; read_t read; release_t release;
    void *queue, *scratch, *const *kernels, *const *wait, *event;
    const size_t *sizes;            /* per entry: global size[2], local size[2] */
    uint32_t nwait;
};

static cl_int launch(struct run *r, int64_t k)
{
    void *ev = NULL;
    cl_int err = r->enqueue(r->queue, r->kernels[k], 2, NULL, r->sizes + 4 * k,
                            r->sizes + 4 * k + 2, r->nwait, r->nwait ? r->wait : NULL, &ev);
    if (err)
        return err;
    r->nwait = 0;
    if (r->event)
        r->release(r->event);
    r->event = ev;
    return 0;
}

static cl_int word(struct run *r, int64_t w, int64_t *out)
{
    cl_int err = r->read(r->queue, r->scratch, 1, 8 * (size_t)w, 8, out, r->nwait,
                         r->nwait ? r->wait : NULL, NULL);
    r->nwait = 0;
    return err;
}

static cl_int ops(struct run *r, const int64_t *op, int64_t n)
{
    const int64_t *end = op + n;
    cl_int err;
    while (op < end) {
        if (*op >= 0) {
            if ((err = launch(r, *op++)))
                return err;
            continue;
        }
        int64_t kind = op[0], w = op[1], len = op[2], v;
        op += 3;
        if ((err = word(r, w, &v)))
            return err;
        if (kind == -1) {
            for (; v > 0; v--)
                if ((err = ops(r, op, len)))
                    return err;
        } else {
            while (v) {
                if ((err = ops(r, op, len)) || (err = word(r, w, &v)))
                    return err;
            }
        }
        op += len;
    }
    return 0;
}

/* Run the program; *event is the last launch's event (NULL: none launched, or an
   error, which is returned). */
cl_int pyg_cl_run(void *const *fns, void *queue, void *const *kernels, const size_t *sizes,
                  void *scratch, uint32_t nwait, void *const *wait, const int64_t *op,
                  int64_t n, void **event)
{
    struct run r = {(enqueue_t)fns[0], (read_t)fns[1], (release_t)fns[2], queue, scratch,
                    kernels, wait, NULL, sizes, nwait};
    cl_int err = ops(&r, op, n);
    if (err && r.event) {
        r.release(r.event);
        r.event = NULL;
    }
    *event = r.event;
    return err;
}
"""

FN_TYPE = ("int32_t (*)(void **, void *, void **, size_t *, void *, uint32_t, void **, "
           "int64_t *, int64_t, void **)")
_ffi = _cffi_backend.FFI()
_state = {}
_lock = threading.Lock()


def launcher():
    """``(pyg_cl_run, its three OpenCL functions)`` as cffi objects, built on first use;
    None where there is no C compiler (or no OpenCL library to find them in)."""
    if "run" not in _state:
        with _lock:
            if "run" not in _state:
                _state["run"] = _build()
    return _state["run"]


def built(what: str, source: str, *parts, flags=()) -> str | None:
    """The path of a shared object the C compiler built from ``source`` (``flags`` added),
    kept in the disk cache under ``what``, the source, the compiler, the machine and
    ``parts``; None where there is no C compiler or the build fails."""
    from ..host.plugin import _compiler_id, _machine_id, compile_c
    if _compiler_id() is None:
        return None
    k = cache.key(what, source, _compiler_id(), _machine_id(), *parts)
    try:
        code = cache.get_or_build(k, lambda: compile_c(source, what, flags))
        return cache.materialize(k, code, ".so")
    except (CompileError, OSError):
        return None


def _build():
    lib = _opencl_library()
    path = lib and built("the OpenCL launcher", SOURCE)
    if not path:
        return None
    try:
        so = ctypes.CDLL(path)
    except OSError:
        return None
    address = ctypes.cast(so.pyg_cl_run, ctypes.c_void_p).value
    fns = _ffi.new("void *[3]", [
        _ffi.cast("void *", ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
        for name in ("clEnqueueNDRangeKernel", "clEnqueueReadBuffer", "clReleaseEvent")])
    _state["keep"] = (so, lib)          # the libraries stay loaded while fns is used
    return _ffi.cast(FN_TYPE, address), fns


def _opencl_library():
    """The OpenCL ICD loader pyopencl uses (its wheel's own copy, else the system's)."""
    import pyopencl
    here = os.path.join(os.path.dirname(pyopencl.__file__), ".libs")
    for path in sorted(glob.glob(os.path.join(here, "libOpenCL*"))) + ["libOpenCL.so.1"]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


class Prepared:
    """What the C launcher needs of a launch plan, made once: the entries' cl_kernel
    handles (``owners`` keeps them alive), their sizes and the flattened program."""
    __slots__ = ("kernels", "sizes", "ops", "n", "owners")

    def __init__(self, steps, program):
        self.owners = [kernel for kernel, _, _, _ in steps]
        self.kernels = _ffi.new("void *[]", [_ffi.cast("void *", k.int_ptr)
                                             for k in self.owners])
        self.sizes = _ffi.new("size_t[]", [v for _, gsize, local, _ in steps
                                           for v in (*gsize, *local)])
        flat = flatten(program)
        self.ops = _ffi.new("int64_t[]", flat)
        self.n = len(flat)


def flatten(ops) -> list:
    """A `KernelInfo.program` as the C launcher's list of int64 (see the module's
    docstring)."""
    out = []
    for op in ops:
        if isinstance(op, int):
            out.append(op)
        else:
            body = flatten(op[2])
            out += [-1 if op[0] == "repeat" else -2, op[1], len(body), *body]
    return out


def run(queue, prepared, scratch, waits):
    """Run a prepared plan on ``queue`` after the cl.Events ``waits``; the last
    launch's cl_event handle (0: none), or a negative OpenCL error code raised as
    RuntimeError."""
    fn, fns = launcher()
    wait = _ffi.new("void *[]", [_ffi.cast("void *", e.int_ptr) for e in waits]) \
        if waits else _ffi.NULL
    event = _ffi.new("void **")
    err = fn(fns, _ffi.cast("void *", queue.int_ptr), prepared.kernels, prepared.sizes,
             _ffi.cast("void *", scratch.int_ptr) if scratch is not None else _ffi.NULL,
             len(waits) if waits else 0, wait, prepared.ops, prepared.n, event)
    if err:
        raise RuntimeError(f"OpenCL error {err} ({_status(err)})")
    return int(_ffi.cast("intptr_t", event[0]))


def _status(code):
    import pyopencl
    names = {v: k for k, v in vars(pyopencl.status_code).items() if isinstance(v, int)}
    return names.get(code, "unknown")
