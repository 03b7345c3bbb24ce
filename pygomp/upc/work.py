"""Work where the data lives: `forall` and `all_reduce`."""
from __future__ import annotations

import numpy as np

import pygomp as omp
from pygomp.kernels import map_kind

from .array import SharedArray

_UFUNCS = {"+": np.add, "*": np.multiply, "max": np.maximum, "min": np.minimum,
           "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}


def _on_my_threads(a, kernel, args_of):
    """kernel(*args_of(t)) on the device of each of this rank's threads that holds part
    of a, all at once (nowait tasks); {thread: result}, or the first error once every
    task has finished."""
    threads = [t for t in a.world.my_threads if a.layout.count(t)]
    if len(threads) == 1:               # one device: no task needed
        t = threads[0]
        return {t: kernel.on(a.world.device_of(t))(*args_of(t))}
    tasks = {t: kernel.on(a.world.device_of(t))(*args_of(t), nowait=True) for t in threads}
    results, error = {}, None
    for t, task in tasks.items():
        try:
            results[t] = task.wait()
        except Exception as e:          # noqa: BLE001  (the others still finish first)
            error = error or e
    if error is not None:
        raise error
    return results


def combine(world, values, op):
    """The reduction by op of every rank's values (collective, same result everywhere):
    each rank reduces its own, MPI gathers those, each rank reduces them in rank order."""
    ufunc = _ufunc(op)
    mine = ufunc.reduce(np.asarray(values)) if len(values) else None
    got = [x for x in world.gather_objects("reduce", mine) if x is not None]
    if not got:
        raise ValueError(f"upc: reduction {op!r} over no elements")
    return ufunc.reduce(np.asarray(got)).item()


def _ufunc(op):
    try:
        return _UFUNCS[op]
    except (KeyError, TypeError):
        raise ValueError(f"unknown reduction {op!r}: use one of "
                         f"{', '.join(_UFUNCS)}") from None


@omp.declare_target
def global_index(j, thread, block, threads):
    """In a forall kernel: the flat index of element j of the thread's part, from the
    layout's scalars that forall passes (thread, block size, THREADS)."""
    if block == 0:
        return j
    return ((j // block) * threads + thread) * block + j % block


_TO, _TOFROM = map_kind("to"), map_kind("tofrom")
_ALWAYS = map_kind("always to") ^ _TO


def _reads_only(kernel, name) -> bool:
    """Whether the kernel maps the parameter "to"; a ValueError if it maps it
    "always", which would copy over the device's part."""
    k = kernel.kinds.get(name)
    if k is not None and k & _ALWAYS:
        raise ValueError(f"forall: {kernel.__name__} maps {name!r} \"always\": a shared "
                         f"array's part stays on its device and is copied only as "
                         f"needed; drop \"always\"")
    return k is not None and k & _TOFROM == _TO


def _run(kernel, arrays, args_of, written):
    """args_of(t) on every thread of this rank that holds part of arrays[0], with the
    parts of ``arrays`` on their devices (handed-out host copies pushed first); the
    parts of ``written`` may be newer on the device afterwards."""
    a, world = arrays[0], arrays[0].world
    for x in arrays:
        x._live()
    slots = [world.slot(t) for t in world.my_threads if a.layout.count(t)]
    for x in arrays:
        for s in slots:
            x.parts.before_kernel(s)
    try:
        return _on_my_threads(a, kernel, args_of)
    finally:
        for x in written:
            for s in slots:
                x.parts.after_kernel(s)


def forall(kernel, a: SharedArray, *args, affinity: SharedArray | None = None, reduce=None):
    """Run ``kernel(local, thread, block, threads, *args)`` once for each of this rank's
    threads, on its device, all devices at once: ``local`` is the thread's part of
    ``a``, which stays on the device (what the kernel writes is a's), and ``thread``,
    ``block`` (a's block size) and ``threads`` (THREADS) place it:
    ``upc.global_index(j, thread, block, threads)`` is the flat index of ``local[j]``.
    A shared array among ``args`` is passed as the thread's part of it, so it must be
    laid out like ``a``, as must ``affinity`` (default ``a``).  A shared array the
    kernel maps "to" is one it does not write.  Returns {thread: result}, or with
    ``reduce=op`` the reduction of every thread's result over all ranks (then forall is
    collective).  Like upc_forall, no barrier."""
    if not isinstance(a, SharedArray):
        raise TypeError(f"forall: a must be a shared array, not {type(a).__name__}")
    if not callable(getattr(kernel, "on", None)):
        raise TypeError(f"forall: {kernel!r} is not an @omp.target kernel")
    if reduce is not None:
        _ufunc(reduce)
    same = (a.shape, a.layout.blocksize)
    for what, x in (("affinity", affinity), *((f"argument {i + 5}", x)
                                               for i, x in enumerate(args))):
        if isinstance(x, SharedArray) and (x.shape, x.layout.blocksize) != same:
            raise ValueError(f"forall: {what} is not laid out like a: shape {x.shape}, "
                             f"blocksize {x.layout.blocksize} against shape {a.shape}, "
                             f"blocksize {a.layout.blocksize}")
    if affinity is not None and not isinstance(affinity, SharedArray):
        raise TypeError("forall: affinity must be a shared array laid out like a")
    names = list(getattr(kernel, "param_names", ()))
    needed = sum(n not in getattr(kernel, "defaults", {}) for n in names)
    if not needed <= len(args) + 4 <= len(names):
        raise TypeError(f"forall: {getattr(kernel, '__name__', kernel)} takes "
                        f"{len(names)} arguments; forall passes local, thread, block, "
                        f"threads and the {len(args)} given, {len(args) + 4} in all")
    B, T = a.layout.blocksize, a.layout.threads
    arrays, written = [a], []
    for name, x in zip([names[0]] + names[4:], (a, *args)):
        if isinstance(x, SharedArray):
            if x not in arrays:
                arrays.append(x)
            if not _reads_only(kernel, name):
                written.append(x)

    def args_of(t):
        return (a._part(t), t, B, T,
                *(x._part(t) if isinstance(x, SharedArray) else x for x in args))

    results = _run(kernel, arrays, args_of, written)
    if reduce is None:
        return results
    return combine(a.world, list(results.values()), reduce)


def all_reduce(a: SharedArray, op: str):
    """The reduction of every element of a by op ("+", "*", "max", "min", "&", "|",
    "^"), in a's dtype: a kernel on each thread's device, then MPI across the ranks
    (collective)."""
    kernel = _REDUCERS.get(op) if isinstance(op, str) else None
    if kernel is None:
        _ufunc(op)
    if op in ("&", "|", "^") and a.dtype.kind not in "iub":
        raise TypeError(f"all_reduce: {op!r} needs an integer array, not {a.dtype}")
    parts = _run(kernel, [a], lambda t: (a._part(t),), [])
    values = np.asarray(list(parts.values()), dtype=a.dtype)
    if a.size == 0:
        return _ufunc(op).reduce(values).item()
    return combine(a.world, values, op)


# -- the device-level reductions (x is never empty: empty parts are skipped) -----------

@omp.target(map={"x": "to"})
def _sum(x):
    s = x[0]
    for i in omp.parallel_range(x.shape[0] - 1, reduction="+:s"):
        s += x[i + 1]
    return s


@omp.target(map={"x": "to"})
def _prod(x):
    s = x[0]
    for i in omp.parallel_range(x.shape[0] - 1, reduction="*:s"):
        s *= x[i + 1]
    return s


@omp.target(map={"x": "to"})
def _max(x):
    s = x[0]
    for i in omp.parallel_range(x.shape[0] - 1, reduction="max:s"):
        s = max(s, x[i + 1])
    return s


@omp.target(map={"x": "to"})
def _min(x):
    s = x[0]
    for i in omp.parallel_range(x.shape[0] - 1, reduction="min:s"):
        s = min(s, x[i + 1])
    return s


@omp.target(map={"x": "to"})
def _and(x):
    s = x[0]
    for i in omp.parallel_range(x.shape[0] - 1, reduction="&:s"):
        s &= x[i + 1]
    return s


@omp.target(map={"x": "to"})
def _or(x):
    s = x[0]
    for i in omp.parallel_range(x.shape[0] - 1, reduction="|:s"):
        s |= x[i + 1]
    return s


@omp.target(map={"x": "to"})
def _xor(x):
    s = x[0]
    for i in omp.parallel_range(x.shape[0] - 1, reduction="^:s"):
        s ^= x[i + 1]
    return s


_REDUCERS = {"+": _sum, "*": _prod, "max": _max, "min": _min, "&": _and, "|": _or,
             "^": _xor}
