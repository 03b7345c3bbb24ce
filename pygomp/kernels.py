"""``@target`` kernels: specialization, compilation for a device's target, dispatch.

    import numpy as np, pygomp as omp

    @omp.target(map={"x": "to", "y": "tofrom"})   # default: arrays tofrom, scalars firstprivate
    def saxpy(a: float, x, y):
        for i in omp.parallel_range(x.shape[0]):  # teams distribute parallel for simd
            y[i] = a * x[i] + y[i]

    saxpy(2.0, x, y)                     # the default device
    saxpy.on(1)(2.0, x, y)               # device 1
    f = saxpy.on(1)(2.0, x, y, nowait=True, depend={"inout": [y]}); f.wait()

A kernel is compiled once a signature (the dtypes and ranks of its array arguments and
the types of its scalars; a scalar annotation fixes its type) into source text once a
target (host, opencl, ...), and the device's plugin builds that once a device identity,
when such a device first runs the kernel; builds are cached on disk.  A call maps its
arrays (default ``tofrom``; ``map={"x": "to"}`` overrides, with "always"/"present"
modifiers) as explicit maps, since a kernel may use every element: an array that extends
a mapped section is a `MappingError` naming both ranges and the argument.  It passes
scalars firstprivate and the array extents as extra words, and goes through the
runtime's ``mapping.target``: data already present on the device (``target_data``) is
not copied.  ``nowait``/``depend`` calls are tasks (`pygomp.runtime.tasks`): on a device
with a queue they are started at once and ordered by its events.  A kernel that
returns a scalar returns it from the call.  Launch sizes: ``num_gangs``, ``num_workers``,
``vector_length`` on the decorator (0: the device's choice).  ``kernel.py_func`` is the
plain Python function (it runs sequentially, for debugging).  Arrays must be
C-contiguous.  The kernel language is described in `pygomp.compiler.frontend` and
`pygomp.compiler.lang`.
"""
from __future__ import annotations

import inspect
import struct
import threading
import weakref

import numpy as np

from .compiler import emit as _emit
from .compiler import frontend, reductions
from .compiler import types as T
from .errors import CompileError
from .compiler.lang import (DeclareTarget, atomic_add, barrier, declare_target,  # noqa: F401
                            gang, gang_id, num_gangs, num_workers, parallel_range,
                            shared_array, vector, vector_id, vector_length, worker,
                            worker_id)
from .constructs import ARRAYS, as_array
from .runtime import devices, images, kinds, mapping, tasks
from .runtime.plugin import PluginError

__all__ = ["target", "declare_target", "Kernel", "CompileError", "gang", "worker", "vector",
           "parallel_range", "shared_array", "barrier", "atomic_add", "gang_id", "worker_id",
           "vector_id", "num_gangs", "num_workers", "vector_length"]

_MASK = (1 << 64) - 1
_D, _Q = struct.Struct("<d"), struct.Struct("<Q")
_F, _I = struct.Struct("<f"), struct.Struct("<I")
_FPI = kinds.FIRSTPRIVATE_INT
_Item = mapping.Item

_KINDS = {"to": kinds.TO, "from": kinds.FROM, "tofrom": kinds.TOFROM, "alloc": kinds.ALLOC}
_MODS = {"always": kinds.FLAG_SPECIAL_2, "present": kinds.FLAG_PRESENT}


def map_kind(spec: str) -> int:
    """A map kind from text: "to", "from", "tofrom", "alloc", optionally preceded by the
    modifiers "always" and/or "present" ("always,to", "present tofrom")."""
    words = spec.replace(",", " ").replace(":", " ").split()
    if not words or words[-1] not in _KINDS or any(w not in _MODS for w in words[:-1]):
        raise ValueError(f"bad map kind {spec!r}: use to, from, tofrom or alloc, optionally "
                         f"after always and/or present")
    k = _KINDS[words[-1]]
    for w in words[:-1]:
        k |= _MODS[w]
    return k


def _f64(v):
    return _Q.unpack(_D.pack(v))[0]


def _f32(v):
    try:
        return _I.unpack(_F.pack(v))[0]
    except OverflowError:
        return int(np.float32(v).view(np.uint32))


def _word(t: T.Scalar):
    if t == T.FLOAT64:
        return _f64
    if t == T.FLOAT32:
        return _f32
    if t.is_bool:
        return lambda v: 1 if v else 0
    return lambda v: int(v) & _MASK


def _key(args):
    return tuple([(a.dtype.num, a.ndim) if isinstance(a, np.ndarray) else type(a)
                  for a in args])


def _arrays(args):
    """The arguments with every array-like (see `constructs.as_array`) as an ndarray."""
    out = []
    for a in args:
        if not isinstance(a, (np.ndarray, int, float, np.generic)):
            view = as_array(a)
            a = a if view is None else view
        out.append(a)
    return out


class Spec:
    """One signature of a kernel: its IR, its sources and images a target, and the
    precomputed recipe that turns a call's arguments into map items."""

    def __init__(self, kernel, argtypes):
        self.kernel = kernel
        name = f"{kernel.__name__}__{_tag(argtypes)}"
        self.ir = frontend.compile_function(kernel.py_func, argtypes, name=name)
        reductions.lower(self.ir)
        self.params = self.ir.params
        self.ret = self.ir.ret
        self.symbol = images.HostSymbol(name)
        self.units = {}           # target kind -> emit.Unit
        self.tables = {}          # device identity -> registered OffloadImage
        self.lock = threading.Lock()
        self.steps = []
        for (cname, t), pname in zip(self.params, kernel.param_names):
            if isinstance(t, T.Array):
                self.steps.append((True, kernel.kinds.get(pname, kinds.TOFROM),
                                   f"{kernel.__name__}: argument {pname!r}"))
            else:
                self.steps.append((False, _word(t), pname))
        self.ret_dtype = None if self.ret is T.VOID else self.ret.dtype
        self.memo = [None] * len(self.steps)
        self.stypes = [None] * len(self.steps)     # Python types of the scalars

    def unit(self, dialect) -> _emit.Unit:
        u = self.units.get(dialect.target)
        if u is None:
            u = self.units[dialect.target] = _emit.emit(self.ir, dialect)
        return u

    def ready(self, dev):
        """Make sure a table with this specialization's image for dev exists."""
        ident = dev.identity
        if ident in self.tables:
            return
        with self.lock:
            if ident in self.tables:
                return
            plugin = dev.plugin
            try:
                dialect = plugin.target_hooks()
            except NotImplementedError:
                raise CompileError(f"device {dev.number} ({plugin.name}) has no kernel "
                                   f"compiler target") from None
            unit = self.unit(dialect)
            try:
                image = plugin.compile(dev.local, unit)
            except PluginError as e:
                raise CompileError(f"{plugin.title or plugin.name} compilation of kernel "
                                   f"{self.ir.pyname} failed:\n{e}") from None
            table = images.OffloadImage(functions=[self.symbol.address], variables=[],
                                        images=(image,), name=self.symbol.name,
                                        keepalive=[self.symbol])
            images.register(table)
            self.tables[ident] = table

    def items(self, args):
        """The map items of a call: arrays (address, bytes, kind), then their extents and
        the scalars as firstprivate words.  An array seen at the same position in the
        previous call reuses its items (numpy's address lookup is the slow part)."""
        items = []
        add, extend = items.append, items.extend
        memo = self.memo
        for pos, ((is_array, how, pname), a) in enumerate(zip(self.steps, args)):
            if is_array:
                m = memo[pos]
                if m is not None and m[0]() is a and m[1] == a.shape:
                    extend(m[2])
                    continue
                if not isinstance(a, np.ndarray):
                    raise TypeError(f"{pname} must be an array ({ARRAYS}), not "
                                    f"{type(a).__name__}")
                if not a.flags.c_contiguous:
                    raise TypeError(f"{pname} is not C-contiguous (strides {a.strides}); "
                                    f"pass a contiguous copy (np.ascontiguousarray)")
                writeable = a.flags.writeable
                if not writeable:           # nothing may be copied back into it
                    how &= ~kinds.FLAG_FROM
                mine = [_Item(a.ctypes.data, a.nbytes, how, a, pname)]
                mine += [_Item(s, 0, _FPI, None) for s in a.shape]
                memo[pos] = (weakref.ref(a), a.shape, mine) if writeable else None
                extend(mine)
            else:
                add(_Item(how(a), 0, _FPI, None))
        return items

    def quick_items(self, args):
        """`items` when ``args`` are the same arrays as in the previous call and scalars
        of the same Python types (so this is the right specialization); else None."""
        if len(args) != len(self.steps):
            return None
        items = []
        memo, stypes = self.memo, self.stypes
        for pos, a in enumerate(args):
            m = memo[pos]
            if m is not None:
                if m[0]() is not a or m[1] != a.shape:
                    return None
                items.extend(m[2])
            elif type(a) is stypes[pos]:
                items.append(_Item(self.steps[pos][1](a), 0, _FPI, None))
            else:
                return None
        return items


def _tag(argtypes):
    out = []
    for t in argtypes:
        if isinstance(t, T.Array):
            out.append(f"{_short(t.elem)}{t.ndim}")
        else:
            out.append(_short(t))
    return "_".join(out) or "void"


def _short(t):
    return {"float32": "f4", "float64": "f8", "bool": "b"}.get(
        t.name, t.name.replace("uint", "u").replace("int", "i"))


class Kernel:
    """A compiled-on-demand offload kernel; call it like the Python function."""

    def __init__(self, fn, map=None, num_gangs=0, num_workers=0, vector_length=0,
                 device=None, nowait=False, depend=None):
        if isinstance(fn, (Kernel, DeclareTarget)):
            fn = fn.py_func
        if not inspect.isfunction(fn):
            raise TypeError(f"@target needs a function, not {type(fn).__name__}")
        self.py_func = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        sig = self.signature = inspect.signature(fn)
        self.param_names = list(sig.parameters)
        self.defaults = {p.name: p.default for p in sig.parameters.values()
                         if p.default is not inspect.Parameter.empty}
        self.annotations = {}
        for p in sig.parameters.values():
            ann = p.annotation
            if ann is not inspect.Parameter.empty and ann is not np.ndarray:
                try:
                    self.annotations[p.name] = T.scalar(ann)
                except TypeError:
                    pass
        self.kinds = {}
        for name, spec in (map or {}).items():
            if name not in self.param_names:
                raise ValueError(f"{fn.__name__}: map names {name!r}, which is not a "
                                 f"parameter ({', '.join(self.param_names)})")
            self.kinds[name] = map_kind(spec) if isinstance(spec, str) else int(spec)
        for n in (num_gangs, num_workers, vector_length):
            if not isinstance(n, int) or n < 0:
                raise ValueError("num_gangs, num_workers and vector_length are ints >= 0")
        self.launch = (num_gangs, num_workers, vector_length)
        self.device = device
        self.nowait = nowait
        self.depend = depend
        self._specs = {}
        self._last = None           # the specialization of the previous call
        self._lock = threading.Lock()
        self._bound = {}

    def __repr__(self):
        return f"<pygomp kernel {self.__qualname__}>"

    # -- specialization ---------------------------------------------------------
    def spec(self, args) -> Spec:
        key = _key(args)
        s = self._specs.get(key)
        if s is None:
            with self._lock:
                s = self._specs.get(key)
                if s is None:
                    s = self._specs[key] = Spec(self, self.argtypes(args))
        return s

    def argtypes(self, args):
        if len(args) != len(self.param_names):
            raise TypeError(f"{self.__name__}() takes {len(self.param_names)} arguments, "
                            f"{len(args)} given")
        out = []
        for name, a in zip(self.param_names, args):
            t = T.of_value(a)
            if isinstance(t, T.Scalar) and name in self.annotations:
                t = self.annotations[name]
            out.append(t)
        return out

    def specialize(self, *types) -> Spec:
        """Compile for explicit types (`types.Scalar`/`types.Array`, or dtypes for scalars)."""
        types = [t if isinstance(t, (T.Array, T.Scalar)) else T.scalar(t) for t in types]
        return Spec(self, types)

    def source(self, *args, target="host") -> str:
        """The generated source of the specialization for ``args`` on ``target``."""
        dialect = target if isinstance(target, _emit.Dialect) else dialect_for(target)
        return self.spec(args).unit(dialect).source

    def bind(self, args, kwargs):
        """The arguments of a call in parameter order, bound as Python binds them
        (keywords, defaults)."""
        try:
            b = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}(): {e}") from None
        b.apply_defaults()
        return tuple(b.arguments[n] for n in self.param_names)

    # -- calls --------------------------------------------------------------------
    def __call__(self, *args, nowait=None, depend=None, **kwargs):
        if kwargs or len(args) != len(self.param_names):
            args = self.bind(args, kwargs)
        return self._launch(self.device, args, nowait, depend)

    def on(self, device, nowait=None, depend=None):
        """This kernel on ``device`` (a device number)."""
        if nowait is None and depend is None:
            b = self._bound.get(device)
            if b is None:
                b = self._bound[device] = Bound(self, device, None, None)
            return b
        return Bound(self, device, nowait, depend)

    def _launch(self, device, args, nowait, depend):
        nowait = self.nowait if nowait is None else nowait
        depend = self.depend if depend is None else depend
        if not (nowait or depend):
            return self._run(device, args)
        dev = devices.resolve(device)
        if dev.plugin.asynchronous:
            s, items = self._prepare(args, dev)     # compiles before taking the tasks' lock
            task = tasks.submit_queued(dev, lambda wait_for: self._start(dev, s, items,
                                                                         wait_for),
                                       lambda: self._run(device, args, dev),
                                       depend=_depend(depend))
        else:
            task = tasks.submit(self._run, device, args, dev, depend=_depend(depend))
        return task if nowait else task.wait()

    def _prepare(self, args, dev):
        """The specialization for ``args``, ready on ``dev``, and the call's map items."""
        s = self._last
        items = s.quick_items(args) if s is not None else None
        if items is None:
            args = _arrays(args)
            s = self._specs.get(_key(args)) or self.spec(args)
            items = s.items(args)
            for pos, a in enumerate(args):
                if not s.steps[pos][0]:
                    s.stypes[pos] = type(a)
            self._last = s
        if dev.identity not in s.tables:
            s.ready(dev)
        return s, items

    def _run(self, device, args, dev=None):
        if dev is None:
            dev = devices.resolve(device)
        s, items = self._prepare(args, dev)
        if s.ret_dtype is None:
            mapping.target(dev, s.symbol.address, items, self.launch)
            return None
        out = np.empty(1, s.ret_dtype)
        items.append(_Item(out.ctypes.data, out.nbytes, kinds.FROM, out))
        mapping.target(dev, s.symbol.address, items, self.launch)
        return out[0].item()

    def _start(self, dev, s, items, wait_for):
        """Start specialization ``s`` with map items ``items`` on a device with a queue
        (see `tasks.submit_queued`)."""
        out = None
        if s.ret_dtype is not None:
            out = np.empty(1, s.ret_dtype)
            items.append(_Item(out.ctypes.data, out.nbytes, kinds.FROM, out))
        event, region = mapping.start(dev, s.symbol.address, items, self.launch, wait_for)

        def finish(ok):
            mapping.end(region, copy_back=ok)
            return None if out is None else out[0].item()
        return event, finish, not region.created


class Bound:
    """A kernel bound to a device (``kernel.on(device)``)."""
    __slots__ = ("kernel", "device", "nowait", "depend", "dev", "devs")

    def __init__(self, kernel, device, nowait, depend):
        self.kernel, self.device, self.nowait, self.depend = kernel, device, nowait, depend
        self.dev = self.devs = None     # the resolved device, and the device list it is of

    def __call__(self, *args, nowait=None, depend=None, **kwargs):
        k = self.kernel
        if kwargs or len(args) != len(k.param_names):
            args = k.bind(args, kwargs)
        nowait = self.nowait if nowait is None else nowait
        depend = self.depend if depend is None else depend
        if not (nowait or depend or k.nowait or k.depend):
            if self.device is None:     # the default device: an ICV that may change
                return k._run(None, args)
            dev = self.dev
            if dev is None or self.devs is not devices.all_devices() \
                    or dev.state != "initialized":
                dev = self.dev = devices.resolve(self.device)
                self.devs = devices.all_devices()
            return k._run(self.device, args, dev)
        return k._launch(self.device, args, nowait, depend)


def _depend(depend):
    if not depend:
        return None
    if isinstance(depend, dict):
        return depend
    raise TypeError('depend= takes a dict like {"in": [x], "out": [y]} '
                    '(also "inout")')


def dialect_for(target: str):
    """The dialect of a target kind, from the plugin that provides it."""
    for p in devices.plugins().values():
        if isinstance(p, Exception):
            continue
        if p.target == target:
            return p.target_hooks()
    raise ValueError(f"no plugin provides the target {target!r}")


def target(fn=None, *, map=None, num_gangs=0, num_workers=0, vector_length=0, device=None,
           nowait=False, depend=None):
    """Make ``fn`` an offload kernel: ``@target`` or ``@target(map={...}, num_gangs=...)``."""
    def wrap(f):
        return Kernel(f, map=map, num_gangs=num_gangs, num_workers=num_workers,
                      vector_length=vector_length, device=device, nowait=nowait,
                      depend=depend)
    return wrap(fn) if fn is not None else wrap
