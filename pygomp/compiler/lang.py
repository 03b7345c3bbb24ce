"""The names a kernel uses (``omp.gang``, ``omp.barrier``, ...).

The compiler recognizes these objects by identity. Called from plain Python they run
sequentially, so a kernel's ``py_func`` still works as ordinary (slow) Python code.

Loops (each takes ``range``'s arguments, plus the clauses ``reduction="op:var[,var]"``
(several groups: ``"+:s,t,max:m"`` or ``"+:s,t;max:m"``; a variable may be an array,
reduced element by element), ``private="a,b"`` and ``collapse=k``, whose inner loops'
bounds may use the outer loop variables):

- ``gang(n)``: iterations spread over gangs (OpenMP teams, OpenCL work-groups)
- ``worker(n)``: over the workers of a gang (OpenMP threads of a team)
- ``vector(n)``: over vector lanes (simd)
- ``parallel_range(n)``: over all three levels ("teams distribute parallel for simd")

Thread numbers: ``gang_id()``, ``worker_id()``, ``vector_id()``, ``num_gangs()``,
``num_workers()``, ``vector_length()``.  Memory: ``shared_array(shape, dtype)`` (one array
per gang, shared by its workers), ``barrier()`` (all workers of a gang),
``atomic_add(array, index, value)``, ``atomic_max``, ``atomic_min``, ``atomic_exchange``
(same arguments) and ``atomic_cas(array, index, expected, new)``: each returns the old
value of ``array[index]``, as OpenMP's ``atomic capture`` does.

Scans: ``inclusive(s)`` and ``exclusive(s)``, OpenMP's ``scan`` directive, in the body
of a parallel loop with ``reduction="inscan,+:s"`` (they do nothing when run by Python).
"""
from __future__ import annotations

import numpy as np


def gang(*args, reduction=None, private=None, collapse=1):
    """A loop partitioned over gangs (teams)."""
    return range(*args)


def worker(*args, reduction=None, private=None, collapse=1):
    """A loop partitioned over the workers of a gang (threads)."""
    return range(*args)


def vector(*args, reduction=None, private=None, collapse=1):
    """A loop partitioned over vector lanes (simd)."""
    return range(*args)


def parallel_range(*args, reduction=None, private=None, collapse=1):
    """A loop partitioned over gangs, workers and vector lanes."""
    return range(*args)


def shared_array(shape, dtype):
    """An array shared by the workers of one gang (team-local memory)."""
    return np.zeros(shape, dtype)


def barrier():
    """Wait for every worker of the gang."""


def atomic_add(array, index, value):
    """array[index] += value, atomically; returns the old value."""
    old = array[index]
    array[index] += value
    return old


def atomic_max(array, index, value):
    """array[index] = value if value > array[index], atomically; returns the old value."""
    old = array[index]
    if value > old:
        array[index] = value
    return old


def atomic_min(array, index, value):
    """array[index] = value if value < array[index], atomically; returns the old value."""
    old = array[index]
    if value < old:
        array[index] = value
    return old


def atomic_exchange(array, index, value):
    """array[index] = value, atomically; returns the old value."""
    old = array[index]
    array[index] = value
    return old


def atomic_cas(array, index, expected, new):
    """array[index] = new if array[index] == expected, atomically; returns the old value
    (the swap happened if it equals ``expected``)."""
    old = array[index]
    if old == expected:
        array[index] = new
    return old


def inclusive(*names):
    """The scan directive: the statements after it see the prefix including this
    iteration (OpenMP's ``scan inclusive``)."""


def exclusive(*names):
    """The scan directive: the statements before it see the prefix excluding this
    iteration (OpenMP's ``scan exclusive``)."""


def gang_id():
    """This gang's number, from 0."""
    return 0


def worker_id():
    """This worker's number in its gang, from 0."""
    return 0


def vector_id():
    """This vector lane's number, from 0."""
    return 0


def num_gangs():
    """The number of gangs running."""
    return 1


def num_workers():
    """The number of workers in each gang."""
    return 1


def vector_length():
    """The number of vector lanes of a worker."""
    return 1


class DeclareTarget:
    """A helper function callable from kernels (``@omp.declare_target``); it stays
    callable from Python."""

    def __init__(self, fn):
        self.py_func = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        return self.py_func(*args, **kwargs)

    def __repr__(self):
        return f"<declare_target {self.py_func.__qualname__}>"


def declare_target(fn):
    """Make ``fn`` callable from kernels (it is compiled for each device as needed)."""
    return fn if isinstance(fn, DeclareTarget) else DeclareTarget(fn)
