"""A single launch of a kernel whose arguments are already set, from C.

The Python path of a launch (the base's `Plugin.run_async`, then the kernel's hooks)
looks the kernel up, compares its words with the ones set, takes the kernel's lock and
enqueues: about twice pyopencl's bare enqueue.  The `Runner` here is a small CPython
extension type, the plugin's `_fast_impl`, which the base installs as the plugin's
``run_async`` (`Plugin.fast_path`; its launchers call it too): for a call ``(dev, fn,
words[, launch[, wait_for]])`` with no events to wait for, it finds the kernel's record
in the plugin's ``records`` dict, checks that the words, device and launch are the ones
the record was made for, and calls ``clEnqueueNDRangeKernel`` itself, returning a
pyopencl Event, which it also keeps in the ``last`` dict under the queue's handle
(`memory.Quiet`).  Any other call, a missing record, or an enqueue that fails goes to the
Python path (which says what is wrong).

A record is ``(dev, words, launch, queue, kernel, g0, g1, l0, l1, owners, slot, line)``:
the plugin's `_Kernel.record`; ``slot`` (an address, or 0) is the device's record of its
last launched kernel, set to ``line`` (`pygomp.runtime.faults`) before the enqueue. A
record is true while it is in the dict, and the plugin keeps it so: it drops a kernel's
record before setting its arguments and every record when a buffer is freed or an image
unloaded, and records a kernel again on the Python path. The GIL is held from the
look-up to the enqueue, so no Python thread changes a kernel's arguments in between;
``owners`` keeps the queue and cl.Kernel (whose handles the record holds) alive.

Built once by the C compiler with Python's headers and kept in the disk cache; where
either is missing, `runner()` is None and the Python path does everything.
"""
from __future__ import annotations

import sys
import sysconfig
import threading

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

typedef int32_t (*enqueue_t)(void *, void *, uint32_t, const size_t *, const size_t *,
                             const size_t *, uint32_t, void *const *, void **);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *records, *fallback, *event, *launch, *last;
    enqueue_t enqueue;
} Runner;

static int same(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    int eq = PyObject_RichCompareBool(a, b, Py_EQ);
    if (eq < 0)
        PyErr_Clear();
    return eq == 1;
}

/* The event of the launch the record describes, or NULL without an exception when
   the call is not the record's or the enqueue failed. */
static PyObject *fast(Runner *self, PyObject *rec, PyObject *const *args, Py_ssize_t n)
{
    if (!same(args[2], PyTuple_GET_ITEM(rec, 1)) || !same(args[0], PyTuple_GET_ITEM(rec, 0))
            || !same(n > 3 ? args[3] : self->launch, PyTuple_GET_ITEM(rec, 2)))
        return NULL;
    void *queue = PyLong_AsVoidPtr(PyTuple_GET_ITEM(rec, 3));
    void *kernel = queue ? PyLong_AsVoidPtr(PyTuple_GET_ITEM(rec, 4)) : NULL;
    size_t sizes[4];                        /* global size[2], local size[2] */
    for (int i = 0; i < 4 && kernel; i++)
        if ((sizes[i] = PyLong_AsSize_t(PyTuple_GET_ITEM(rec, 5 + i))) == (size_t)-1)
            kernel = NULL;
    if (kernel == NULL) {                   /* not a record of ours */
        PyErr_Clear();
        return NULL;
    }
    void *slot = PyLong_AsVoidPtr(PyTuple_GET_ITEM(rec, 10));
    void *line = slot ? PyLong_AsVoidPtr(PyTuple_GET_ITEM(rec, 11)) : NULL;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (slot)
        *(void *volatile *)slot = line;
    void *ev = NULL;
    if (self->enqueue(queue, kernel, 2, NULL, sizes, sizes + 2, 0, NULL, &ev) != 0 || !ev)
        return NULL;
    PyObject *ptr = PyLong_FromVoidPtr(ev);
    if (ptr == NULL)
        return NULL;
    PyObject *a[2] = {ptr, Py_False};       /* the Event owns the handle */
    PyObject *event = PyObject_Vectorcall(self->event, a, 2, NULL);
    Py_DECREF(ptr);
    if (event != NULL && PyDict_SetItem(self->last, PyTuple_GET_ITEM(rec, 3), event) < 0)
        Py_CLEAR(event);
    return event;
}

static PyObject *runner_call(Runner *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    int none = n < 5 ? 1 : n == 5 ? PyObject_Not(args[4]) : 0;    /* no wait_for */
    if (none < 0)
        PyErr_Clear();
    if (kwnames == NULL && n >= 3 && none == 1) {
        PyObject *rec = PyDict_GetItemWithError(self->records, args[1]);
        if (rec != NULL && PyTuple_CheckExact(rec) && PyTuple_GET_SIZE(rec) == 12) {
            Py_INCREF(rec);
            PyObject *event = fast(self, rec, args, n);
            Py_DECREF(rec);
            if (event != NULL || PyErr_Occurred())
                return event;
        } else if (PyErr_Occurred()) {
            return NULL;
        }
    }
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *runner_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *records, *fallback, *event, *launch, *last;
    unsigned long long enqueue;
    if (!PyArg_ParseTuple(args, "O!OOO!KO!", &PyDict_Type, &records, &fallback, &event,
                          &PyTuple_Type, &launch, &enqueue, &PyDict_Type, &last))
        return NULL;
    Runner *self = (Runner *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)runner_call;
    Py_INCREF(records); Py_INCREF(fallback); Py_INCREF(event); Py_INCREF(launch);
    Py_INCREF(last);
    self->last = last;
    self->records = records;
    self->fallback = fallback;
    self->event = event;
    self->launch = launch;
    self->enqueue = (enqueue_t)(uintptr_t)enqueue;
    return (PyObject *)self;
}

static int runner_traverse(Runner *self, visitproc visit, void *arg)
{
    Py_VISIT(self->records);
    Py_VISIT(self->fallback);
    Py_VISIT(self->event);
    Py_VISIT(self->launch);
    Py_VISIT(self->last);
    return 0;
}

static int runner_clear(Runner *self)
{
    Py_CLEAR(self->records);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->event);
    Py_CLEAR(self->launch);
    Py_CLEAR(self->last);
    return 0;
}

static void runner_dealloc(Runner *self)
{
    PyObject_GC_UnTrack(self);
    runner_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pyg_fastlaunch.Runner",
    .tp_basicsize = sizeof(Runner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Runner, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = runner_new,
    .tp_traverse = (traverseproc)runner_traverse,
    .tp_clear = (inquiry)runner_clear,
    .tp_dealloc = (destructor)runner_dealloc,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pyg_fastlaunch", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_pyg_fastlaunch(void)
{
    if (PyType_Ready(&RunnerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&RunnerType);
    if (PyModule_AddObject(m, "Runner", (PyObject *)&RunnerType) < 0) {
        Py_DECREF(&RunnerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
"""

_state = {}
_lock = threading.Lock()


def runner(records: dict, fallback, last: dict):
    """A `Runner` over ``records`` that calls ``fallback`` (the Python path) for what it
    does not do itself and keeps each launch's event in ``last``; None where the
    extension cannot be built or loaded."""
    with _lock:
        if "module" not in _state:
            _state["module"] = _build()
    mod, enqueue = _state["module"] or (None, None)
    if mod is None:
        return None
    from .plugin import cl
    return mod.Runner(records, fallback, cl.Event.from_int_ptr, (0, 0, 0), enqueue, last)


def _build():
    import ctypes
    import importlib.machinery
    import importlib.util
    import os
    from .launch import _opencl_library, built
    include = sysconfig.get_paths().get("include", "")
    lib = _opencl_library()
    if lib is None or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    path = built("the OpenCL fast launch", SOURCE, sys.version,
                 sysconfig.get_config_var("EXT_SUFFIX"), flags=("-I" + include,))
    if path is None:
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader("pyg_fastlaunch", path)
        spec = importlib.util.spec_from_file_location("pyg_fastlaunch", path, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except (ImportError, OSError):
        return None
    _state["keep"] = lib                # the enqueue's library stays loaded
    return mod, ctypes.cast(lib.clEnqueueNDRangeKernel, ctypes.c_void_p).value
