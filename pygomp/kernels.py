"""``@target`` kernels: specialization, compilation for a device's target, dispatch.

    import numpy as np, pygomp as omp

    @omp.target(map={"x": "to", "y": "tofrom"})   # default: arrays tofrom, scalars firstprivate
    def saxpy(a: float, x, y):
        for i in omp.parallel_range(x.shape[0]):  # teams distribute parallel for simd
            y[i] = a * x[i] + y[i]

    saxpy(2.0, x, y)                     # the default device
    saxpy.on(1)(2.0, x, y)               # device 1
    f = saxpy.on(1)(2.0, x, y, nowait=True, depend={"inout": [y]}); f.wait()

A kernel is compiled once per signature (the dtypes and ranks of its array arguments and
the types of its scalars; a scalar annotation fixes its type) into source text once per
target (host, opencl, ...), and the device's plugin builds that once per device
identity, when such a device first runs the kernel; builds are cached on disk.  A call
maps its arrays (default ``tofrom``; ``map={"x": "to"}`` overrides, with
"always"/"present" modifiers) as explicit maps, since a kernel may use every element: an
array that extends a mapped section is a `MappingError` naming both ranges and the
argument.  It passes scalars firstprivate and the array extents as extra words, and goes
through the runtime's ``mapping.target``: data already present on the device
(``target_data``) is not copied.  ``nowait``/``depend`` calls are tasks
(`pygomp.runtime.tasks`): on a device with a queue they are started at once and ordered
by its events; on every device the kernel is built and the arguments checked at the
call, so such errors raise there.  A kernel that returns a scalar returns it from the
call; one that returns a tuple of scalars, a tuple of numpy scalars.  Launch sizes:
``num_gangs``, ``num_workers``, ``vector_length`` on the decorator (0: the device's
choice).  ``kernel.py_func`` is the plain Python function (it runs sequentially, for
debugging).  Arrays must be C-contiguous.  The kernel language is
described in `pygomp.compiler.frontend` and `pygomp.compiler.lang`.

``@target(boundscheck=True)`` (or ``PYGOMP_BOUNDSCHECK=1`` for every kernel whose
decorator leaves it unset) checks every array access against the array's extents
(`pygomp.compiler.boundscheck`): the first access out of range is not done, and the
call raises ``IndexError`` with its Python file and line, the index, the axis and the
extent, once the kernel has ended.  The setting is part of the specialization (its own
name, source and builds): changing ``kernel.boundscheck`` switches to the other one.

``@target(wraparound=False)`` drops numpy's negative indices: an index is used as it
is, without the test that adds the extent to a negative one (a negative index is then
the caller's error; with bounds checking it raises ``IndexError``).  It too is part of
the specialization.
"""
from __future__ import annotations

import inspect
import math
import struct
import sys
import _thread          # threading's own locks: importing threading takes 0.5 ms

import numpy as np

from . import kernel_cache
from .errors import CompileError
from .runtime import devices, env, faults, images, kinds, mapping
from .repeats import MISS, Repeat, address
from .runtime.plugin import DeviceArray, PluginError

_LANG = ("declare_target", "gang", "worker", "vector", "parallel_range", "shared_array",
         "barrier", "atomic_add", "atomic_max", "atomic_min", "atomic_exchange",
         "atomic_cas", "inclusive", "exclusive", "gang_id", "worker_id", "vector_id", "num_gangs",
         "num_workers", "vector_length")
__all__ = ["target", "Kernel", "CompileError", *_LANG]


def __getattr__(name):
    """The kernel language's names (`pygomp.compiler.lang`), imported on first use."""
    if name in _LANG:
        from .compiler import lang
        return getattr(lang, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_MASK = (1 << 64) - 1
_D, _Q = struct.Struct("<d"), struct.Struct("<Q")
_F, _I = struct.Struct("<f"), struct.Struct("<I")
_FPI = kinds.FIRSTPRIVATE_INT
_Item = mapping.Item

_CHECKED = ("boundscheck",)     # ends the specialization key of a checked call
_NOWRAP = ("wraparound=False",)
_SMALL = ("extents<2**31",)     # every array argument has fewer than 2**31 elements
_INT32_MAX = 2**31 - 1
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


def _word(t):
    """How a scalar of type ``t`` becomes its argument word (a complex: a tuple of two,
    its parts)."""
    from .compiler import types as T
    if t.is_complex:
        part = _word(t.real)

        def parts(v):
            z = complex(v)
            return part(z.real), part(z.imag)
        return parts
    if t == T.FLOAT64:
        return _f64
    if t == T.FLOAT32:
        return _f32
    if t.is_bool:
        return lambda v: 1 if v else 0
    return lambda v: int(v) & _MASK


def _key(args):
    return tuple([(a.dtype.num if a.dtype.names is None else a.dtype, a.ndim)
                  if isinstance(a, (np.ndarray, DeviceArray))
                  else type(a) for a in args])


def _extents32(args) -> bool:
    """Whether a call has arrays, each with fewer than 2**31 elements and extents (its
    specialization may then compute indices in 32 bits: compiler/narrow.py)."""
    seen = False
    for a in args:
        if isinstance(a, (np.ndarray, DeviceArray)):
            n = a.size if type(a) is np.ndarray else math.prod(a.shape)
            if n > _INT32_MAX or n == 0 and max(a.shape, default=0) > _INT32_MAX:
                return False
            seen = True
    return seen


def _arrays(args):
    """The arguments with every array-like (see `constructs.as_array`) as an ndarray."""
    out = []
    for a in args:
        if not isinstance(a, (np.ndarray, int, float, complex, np.generic)):
            from .constructs import as_array
            view = as_array(a)
            a = a if view is None else view
        out.append(a)
    return out


def _on_gpu(a) -> bool:
    """Whether an argument is an array in GPU memory: it has the CUDA array interface,
    or DLPack says it lives on a device other than the CPU."""
    if hasattr(a, "__cuda_array_interface__"):
        return True
    where = getattr(a, "__dlpack_device__", None)
    try:
        return where is not None and where()[0] != 1          # 1: kDLCPU
    except Exception:       # noqa: BLE001  (a broken protocol: not a GPU array)
        return False


def _in_place(kernel, args, dev):
    """``args`` with each array in GPU memory replaced by the device's view of it (a
    `DeviceArray`, used in place like OpenMP's is_device_ptr data), or the error that
    says why the device cannot use it."""
    out = None
    for pos, a in enumerate(args):
        if isinstance(a, (np.ndarray, int, float, complex)) or not _on_gpu(a):
            continue
        try:
            view = dev.plugin.device_array(dev.local, a)
        except (TypeError, ValueError) as e:
            where = ("the initial device" if dev.is_initial else
                     f"device {dev.number} ({dev.plugin.name})")
            raise type(e)(f"{kernel.__name__}: argument {kernel.param_names[pos]!r} "
                          f"({type(a).__name__}) cannot be used on {where}: {e}") from None
        out = out or list(args)
        out[pos] = view
    return args if out is None else out


class Spec:
    """One signature of a kernel: its sources (and KernelInfo) per target, its images
    per device identity, and the recipe that turns a call's arguments into map items.  The
    compiler runs only for a target whose source is not on disk (`kernel_cache`)."""

    def __init__(self, kernel, argtypes, boundscheck=False, weak=(), extents32=False):
        from .compiler import types as T
        self.kernel = kernel
        self.extents32 = extents32      # its arrays are smaller than 2**31 elements
        self.checked = boundscheck      # every access checked, the record its last array
        self.wraparound = kernel.wraparound     # negative indices count from the end
        # Python scalars (not annotated) are weak, as NEP 50 makes them
        self.weak = tuple(p for p in weak if kernel.annotations.get(p) is None)
        self.name = (f"{kernel.__name__}__{_tag(argtypes, kernel.param_names, self.weak)}"
                     + ("__bc" if boundscheck else "")
                     + ("" if self.wraparound else "__nw")
                     + ("__small" if extents32 else ""))
        # annotations win over the scalar types of a call, as in the compiler
        anns = [kernel.annotations.get(pname) for pname in kernel.param_names]
        self.argtypes = [a if isinstance(t, T.Scalar) and isinstance(a, T.Scalar) else t
                         for a, t in zip(anns, argtypes)]
        self._ir = None
        self._params = self._ret = None         # known once compiled or loaded
        self._written = None
        self.symbol = images.HostSymbol(self.name)
        self.units = {}           # target kind -> unit (an emit.Unit or kernel_cache.Unit)
        self.tables = {}          # device identity -> registered OffloadImage
        self.lock = _thread.allocate_lock()
        self.steps = []
        for t, pname in zip(self.argtypes, kernel.param_names):
            if isinstance(t, T.Array):
                self.steps.append((True, kernel.kinds.get(pname, kinds.TOFROM),
                                   f"{kernel.__name__}: argument {pname!r}"))
            else:
                self.steps.append((False, _word(t), pname))
        faults.note(self.name, kernel.py_func.__code__,
                    [p for t, p in zip(self.argtypes, kernel.param_names)
                     if isinstance(t, T.Array)] + (["the bounds check's record"]
                                                   if boundscheck else []))
        self.repeats = {}         # device -> the `Repeat` of its last call
        self.alike = {}           # device -> a `Repeat` for any arrays like those

    @property
    def ir(self):
        """The kernel's typed IR (the compiler runs on first use)."""
        if self._ir is None:
            from .compiler import frontend, narrow, reductions
            ir = frontend.compile_function(self.kernel.py_func, self.argtypes,
                                           name=self.name, boundscheck=self.checked,
                                           wraparound=self.wraparound, weak=self.weak)
            reductions.lower(ir)
            narrow.mark(ir, self.extents32)
            self._params, self._ret, self._ir = ir.params, ir.ret, ir
        return self._ir

    @property
    def params(self):
        """``[(C name, type)]`` per parameter, as the compiler types them."""
        if self._params is None:
            self.ir
        return self._params

    @property
    def ret(self):
        """The result type (a `types.Void` for none)."""
        if self._ret is None:
            self.ir
        return self._ret

    @property
    def written(self):
        """``{position: (name, "file:line")}`` of the array arguments the kernel stores
        into (from a unit when one is made or loaded, else from the compiler)."""
        if self._written is None:
            u = next(iter(self.units.values()), None)
            if u is not None:
                where = u.written
            else:
                from .compiler import argwords
                where = argwords.written(self.ir)
            self._written = {pos: (pname, where[cname]) for pos, ((cname, _), pname)
                             in enumerate(zip(self.params, self.kernel.param_names))
                             if cname in where}
        return self._written

    @property
    def ret_dtype(self):
        """The dtype of the kernel's result, None if it returns nothing."""
        from .compiler import types as T
        return None if isinstance(self.ret, T.Void) else self.ret.dtype

    @property
    def rets(self):
        """The dtypes of the tuple the kernel returns (its last parameters are arrays of
        one element, one per value: see `compiler.forms.Tuples`), else ()."""
        return tuple(t.elem.dtype for c, t in self.params if c.startswith("pyg_ret"))

    def unit(self, dialect):
        """The kernel's source in ``dialect`` (the compiler runs)."""
        u = self.units.get(dialect.target)
        if u is None:
            from .compiler import emit
            u = self.units[dialect.target] = emit.emit(self.ir, dialect)
        return u

    def _unit_for(self, plugin):
        """The kernel's source for a plugin's target: from the disk when it holds it,
        else from the compiler (and kept on disk for the next process)."""
        u = self.units.get(plugin.target)
        if u is None:
            fn = self.kernel.py_func
            got = kernel_cache.load(fn, self.name, self.argtypes, plugin)
            if got is not None:
                u, self._params = got
                self.units[plugin.target], self._ret = u, u.ret
            else:
                u = self.unit(plugin.target_hooks())
                kernel_cache.store(fn, self.name, self.argtypes, plugin, u, self.params)
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
                unit = self._unit_for(plugin)
            except NotImplementedError:
                raise CompileError(f"device {dev.number} ({plugin.name}) has no kernel "
                                   f"compiler target") from None
            try:
                image = plugin.compile(dev.local, unit)
            except PluginError as e:
                raise CompileError(f"{plugin.title or plugin.name} compilation of kernel "
                                   f"{self.kernel.__name__} failed:\n{e}") from None
            table = images.OffloadImage(functions=[self.symbol.address], variables=[],
                                        images=(image,), name=self.symbol.name,
                                        keepalive=[self.symbol])
            images.register(table)
            self.tables[ident] = table

    def items(self, args):
        """The map items of a call: arrays (address, bytes, kind), then their extents and
        the scalars as firstprivate words."""
        items = []
        add = items.append
        for pos, ((is_array, how, pname), a) in enumerate(zip(self.steps, args)):
            if not is_array:
                w = how(a)
                for x in w if isinstance(w, tuple) else (w,):
                    add(_Item(x, 0, _FPI, None))
                continue
            if isinstance(a, DeviceArray):      # used in place: its address is the word
                items += [_Item(a.address, 0, _FPI, None)] + [_Item(n, 0, _FPI, None)
                                                               for n in a.shape]
                continue
            if not isinstance(a, np.ndarray):
                from .constructs import ARRAYS
                raise TypeError(f"{pname} must be an array ({ARRAYS}), not "
                                f"{type(a).__name__}")
            if not a.flags.c_contiguous:
                raise TypeError(f"{pname} is not C-contiguous (strides {a.strides}); "
                                f"pass a contiguous copy (np.ascontiguousarray)")
            if not a.flags.writeable:       # nothing may be copied back into it
                self.refuse_read_only(pos)
                how &= ~kinds.FLAG_FROM
            add(_Item(address(a), a.nbytes, how, a, pname))
            items += [_Item(n, 0, _FPI, None) for n in a.shape]
        for dtype in self.rets:         # a returned tuple's values, fresh per call
            out = np.zeros(1, dtype)
            add(_Item(out.ctypes.data, out.nbytes, kinds.TOFROM, out,
                      f"{self.kernel.__name__}: its result"))
            add(_Item(1, 0, _FPI, None))
        if self.checked:                # a fresh record per call, then its extent
            from .compiler import boundscheck as BC
            record = np.zeros(BC.WORDS, np.int64)
            add(_Item(record.ctypes.data, record.nbytes, kinds.TOFROM, record,
                      f"{self.kernel.__name__}: its bounds-check record"))
            add(_Item(BC.WORDS, 0, _FPI, None))
        return items

    @staticmethod
    def record(items):
        """The record among a checked call's items (before a result is added)."""
        return items[-2].obj

    def tuple_of(self, items):
        """The tuple a kernel returning one left in a call's items: numpy scalars."""
        end = len(items) - 2 * self.checked
        return tuple(items[k].obj[0] for k in range(end - 2 * len(self.rets), end, 2))

    def check(self, dev, record):
        """The IndexError a checked run left in its record, raised."""
        if record[0]:
            u = self.units.get(dev.plugin.target)
            sites = getattr(u, "sites", None)
            if not sites:               # a unit from the disk: the compiler numbers again
                from .compiler import emit
                sites = emit.emit(self.ir, dev.plugin.target_hooks()).sites
            from .compiler import boundscheck as BC
            raise IndexError(BC.message(record, sites))

    def refuse_read_only(self, pos):
        """A ValueError, before anything runs, if the kernel writes argument ``pos``."""
        w = self.written.get(pos)
        if w is not None:
            raise ValueError(f"{self.kernel.__name__}: argument {w[0]!r} is read-only "
                             f"(flags.writeable is False) and the kernel writes it ({w[1]})")


def _tag(argtypes, names, weak):
    """The part of a specialization's name its types make (``w``: a weak scalar)."""
    from .compiler import types as T
    out = []
    for t, name in zip(argtypes, names):
        if isinstance(t, T.Array):
            out.append(f"{_short(t.elem)}{t.ndim}")
        else:
            out.append(_short(t) + ("w" if name in weak else ""))
    return "_".join(out) or "void"


def _python_scalars(names, args):
    """The parameters given Python scalars (bool, int, float, complex): NEP 50's weak
    ones."""
    return tuple(n for n, a in zip(names, args) if type(a) in (bool, int, float, complex))


def _short(t):
    if t.name == "record":              # a structured dtype: its struct's hash
        return t.c.removeprefix("pyg_")
    return {"float32": "f4", "float64": "f8", "bool": "b"}.get(
        t.name, t.name.replace("uint", "u").replace("int", "i"))


class Kernel:
    """A compiled-on-demand offload kernel; call it like the Python function."""

    def __init__(self, fn, map=None, num_gangs=0, num_workers=0, vector_length=0,
                 device=None, nowait=False, depend=None, boundscheck=None, wraparound=True):
        from .compiler import annotate
        lang = sys.modules.get("pygomp.compiler.lang")     # none made before its import
        if isinstance(fn, Kernel) or lang and isinstance(fn, lang.DeclareTarget):
            fn = fn.py_func
        if not inspect.isfunction(fn):
            raise TypeError(f"@target needs a function, not {type(fn).__name__}")
        if not kernel_cache.checked(fn):    # the same source passed in an earlier process
            from .compiler import precheck
            precheck.check(fn)          # what needs no types fails here, not at a call
            kernel_cache.mark_checked(fn)
        self.py_func = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        sig = self.signature = inspect.signature(fn)
        self.param_names = list(sig.parameters)
        self.defaults = {p.name: p.default for p in sig.parameters.values()
                         if p.default is not inspect.Parameter.empty}
        self.annotations = annotate.of_function(fn)     # Scalar or ArrayAnn
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
        self._hit = None            # (device number, `Repeat`s) of a plain call
        self._lock = _thread.allocate_lock()
        self._bound = {}
        self._boundscheck = None if boundscheck is None else bool(boundscheck)
        self._wraparound = bool(wraparound)

    @property
    def boundscheck(self) -> bool:
        """Whether calls check every array access: the decorator's ``boundscheck``,
        else ``PYGOMP_BOUNDSCHECK``.  Setting it (None: back to the environment's)
        makes the next calls use the specializations of the new value."""
        b = self._boundscheck
        return env.settings().boundscheck if b is None else b

    @boundscheck.setter
    def boundscheck(self, value):
        self._boundscheck = None if value is None else bool(value)
        self._forget()

    @property
    def wraparound(self) -> bool:
        """Whether a negative index counts from the end (the decorator's
        ``wraparound``); setting it makes the next calls use its specializations."""
        return self._wraparound

    @wraparound.setter
    def wraparound(self, value):
        self._wraparound = bool(value)
        self._forget()

    def _forget(self):
        """Drop what repeated calls reuse: the next call looks its specialization up."""
        self._last = self._hit = None
        for b in list(self._bound.values()):
            b.repeats = ()

    def _spec_key(self, args, check):
        return _key(args) + (_CHECKED if check else ()) + (
            () if self._wraparound else _NOWRAP) + (_SMALL if _extents32(args) else ())

    def __repr__(self):
        return f"<pygomp kernel {self.__qualname__}>"

    # -- specialization ---------------------------------------------------------
    def spec(self, args, boundscheck=None) -> Spec:
        """The specialization for ``args`` (checked as ``boundscheck`` says, else as
        `boundscheck` is now)."""
        check = self.boundscheck if boundscheck is None else bool(boundscheck)
        key = self._spec_key(args, check)
        s = self._specs.get(key)
        if s is None:
            with self._lock:
                s = self._specs.get(key)
                if s is None:
                    s = self._specs[key] = Spec(self, self.argtypes(args), check,
                                                _python_scalars(self.param_names, args),
                                                _SMALL[0] in key)
        return s

    def argtypes(self, args):
        """The types of a call's arguments, as the annotations fix or check them."""
        from .compiler import annotate
        from .compiler import types as T
        if len(args) != len(self.param_names):
            raise TypeError(f"{self.__name__}() takes {len(self.param_names)} arguments, "
                            f"{len(args)} given")
        out = []
        for name, a in zip(self.param_names, args):
            t = T.Array(T.scalar(a.dtype), a.ndim) if isinstance(a, DeviceArray) \
                else T.of_value(a)
            out.append(annotate.check(self.__name__, name, self.annotations.get(name), t))
        return out

    def specialize(self, *types, boundscheck=False) -> Spec:
        """Compile for explicit types (`types.Scalar`/`types.Array`, or dtypes for scalars)."""
        from .compiler import types as T
        types = [t if isinstance(t, (T.Array, T.Scalar)) else T.scalar(t) for t in types]
        return Spec(self, types, boundscheck)

    def source(self, *args, target="host", boundscheck=None) -> str:
        """The generated source of the specialization for ``args`` on ``target`` (checked
        as ``boundscheck`` says, else as `boundscheck` is now)."""
        dialect = dialect_for(target) if isinstance(target, str) else target
        return self.spec(args, boundscheck).unit(dialect).source

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
    def __call__(self, *args, **kwargs):
        hit = self._hit
        if hit is not None and not kwargs and not (self.nowait or self.depend) and hit[0] == (
                devices.get_default() if self.device is None else self.device):
            for r in hit[1]:
                out = r.attempt(args)
                if out is not MISS:
                    return out
        nowait, depend = kwargs.pop("nowait", None), kwargs.pop("depend", None)
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
        from .runtime import tasks
        dev = devices.resolve(device)
        # compiled and checked here, on every device: a kernel that does not build
        # raises at the call, before the tasks' lock is taken
        s, _, items = self._prepare(args, dev)
        if dev.plugin.asynchronous:
            task = tasks.submit_queued(dev, lambda wait_for: self._start(dev, s, items,
                                                                         wait_for),
                                       lambda: self._run(device, args, dev),
                                       depend=_depend(depend))
        else:
            task = tasks.submit(self._run, device, args, dev, depend=_depend(depend))
        return task if nowait else task.wait()

    def _prepare(self, args, dev):
        """The specialization for ``args``, ready on ``dev``, and the call's map items."""
        args = _in_place(self, _arrays(args), dev)
        key = self._spec_key(args, self.boundscheck)
        s = self._specs.get(key) or self.spec(args)
        self._last = s
        if dev.identity not in s.tables:
            s.ready(dev)
        return s, args, s.items(args)

    def _run(self, device, args, dev=None):
        number = None                   # the number dev was resolved from, in this thread
        if dev is None:
            number = devices.get_default() if device is None else device
            dev = devices.resolve(number)
        s = self._last
        if s is not None:
            for r in self._repeats(s, dev):
                out = r.attempt(args)
                if out is not MISS:
                    return out
        s, args, items = self._prepare(args, dev)
        r = Repeat(s, dev, args, items, self.launch)
        if s.checked or s.rets:         # a record or results of its own: never repeated
            out = r.run([items[i].addr for i in r.call.slots])
            if s.checked:
                s.check(dev, s.record(items))
            return s.tuple_of(items) if s.rets else out
        if all(isinstance(args[pos], np.ndarray) and args[pos].flags.writeable
               for pos in r.arrays):
            s.repeats[dev] = r
            a = s.alike.get(dev)        # new arrays: their addresses as per-call words
            if a is None:
                a = s.alike[dev] = Repeat(s, dev, args, items, self.launch, alike=True)
            a.call.look_up()
            if number is not None:      # a plain call with that number tries r first
                self._hit = (number, self._repeats(s, dev))
        return r.run([items[i].addr for i in r.call.slots])

    @staticmethod
    def _repeats(s, dev):
        """The `Repeat`s of specialization ``s`` on ``dev`` to try, in order."""
        return tuple(r for r in (s.repeats.get(dev), s.alike.get(dev)) if r is not None)

    def _start(self, dev, s, items, wait_for):
        """Start specialization ``s`` with map items ``items`` on a device with a queue
        (see `tasks.submit_queued`)."""
        out = None
        record = s.record(items) if s.checked else None
        if s.ret_dtype is not None:
            out = np.empty(1, s.ret_dtype)
            items.append(_Item(out.ctypes.data, out.nbytes, kinds.FROM, out))
        event, region = mapping.start(dev, s.symbol.address, items, self.launch, wait_for)

        def finish(ok):
            mapping.end(region, copy_back=ok)
            if ok and record is not None:
                s.check(dev, record)
            if s.rets:
                return s.tuple_of(items)
            return None if out is None else out[0].item()
        return event, finish, not region.created


class Bound:
    """A kernel bound to a device (``kernel.on(device)``)."""
    __slots__ = ("kernel", "device", "nowait", "depend", "repeats")

    def __init__(self, kernel, device, nowait, depend):
        self.kernel, self.device, self.nowait, self.depend = kernel, device, nowait, depend
        self.repeats = ()               # the `Repeat`s of the last call, to try first

    def __call__(self, *args, **kwargs):
        if not kwargs:
            for r in self.repeats:
                out = r.attempt(args)
                if out is not MISS:
                    return out
        return self._call(args, kwargs.pop("nowait", None), kwargs.pop("depend", None),
                          kwargs)

    def _call(self, args, nowait, depend, kwargs):
        k = self.kernel
        if kwargs or len(args) != len(k.param_names):
            args = k.bind(args, kwargs)
        nowait = self.nowait if nowait is None else nowait
        depend = self.depend if depend is None else depend
        if not (nowait or depend or k.nowait or k.depend):
            if self.device is None:     # the default device: an ICV that may change
                return k._run(None, args)
            dev = devices.resolve(self.device)
            out = k._run(self.device, args, dev)
            self.repeats = () if self.nowait or self.depend else k._repeats(k._last, dev)
            return out
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
           nowait=False, depend=None, boundscheck=None, wraparound=True):
    """Make ``fn`` an offload kernel: ``@target`` or ``@target(map={...}, num_gangs=...)``;
    ``boundscheck=True`` checks every array access (None: as PYGOMP_BOUNDSCHECK says);
    ``wraparound=False`` takes every index as it is (no negative index from the end)."""
    def wrap(f):
        return Kernel(f, map=map, num_gangs=num_gangs, num_workers=num_workers,
                      vector_length=vector_length, device=device, nowait=nowait,
                      depend=depend, boundscheck=boundscheck, wraparound=wraparound)
    return wrap(fn) if fn is not None else wrap
