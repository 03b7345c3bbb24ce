"""A kernel call that repeats on one device (`Repeat`): what it checks each time (the
same arrays, still writeable, of the same shapes, or any writeable, aligned,
C-contiguous ndarrays of the same dtypes and ranks; scalars of the same types), in
straight-line code made once per argument layout, and its prepared `calls.Call`."""
from __future__ import annotations

import ctypes
import functools
import struct
import sys
import weakref

import numpy as np

from .runtime import calls

_STRUCT = {"b1": "?", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H",
           "u4": "I", "u8": "Q", "f4": "f", "f8": "d",
           "c8": "ff", "c16": "dd"}     # a result's dtype -> struct code


class Repeat:
    """A call that may repeat on one device: its arrays (weak references, so that the
    user may let go of them, and their shapes), its scalars' positions and Python types,
    the prepared `calls.Call` (its items hold their arrays' dtypes, not the arrays, so
    that PYGOMP_POISON fills what it maps with the dtype's pattern), and how its
    result's bytes read.  ``attempt(args)`` runs a call with the same arrays (still
    writeable, of the same shapes; with ``alike``, any arrays like them: the initial
    device uses them in place, an offload device looks them up at each call,
    `calls.Call.run_alike`) and scalars of the same types while the call's look-up is
    fresh, and returns its result; else it returns `MISS` and runs nothing.
    Its code is made at the first attempt: a call that never repeats does without it."""
    __slots__ = ("arrays", "call", "result", "attempt", "_layout", "_cells")

    def __init__(self, spec, dev, args, items, launch, alike=False):
        dtype = spec.ret_dtype
        self.result = None if dtype is None else \
            struct.Struct("<" + _STRUCT[dtype.kind + str(dtype.itemsize)])
        self.arrays, layout, cells, slots = [], [], [], []
        ranks = {}                      # an alike call's array items: their ranks
        i = 0
        for pos, ((is_array, how, _), a) in enumerate(zip(spec.steps, args)):
            if is_array:
                self.arrays.append(pos)
                if alike:               # any array of its dtype and rank (in place)
                    layout.append(-1)
                    cells += (a.dtype, a.ndim)
                    slots += range(i, i + 1 + a.ndim)
                    ranks[i] = a.ndim
                else:
                    layout.append(0)
                    cells += (_weak(a), a.shape)
                i += 1 + a.ndim
            else:
                w = how(a)
                n = len(w) if isinstance(w, tuple) else 1
                layout.append(n)
                cells += (type(a), how)
                slots += range(i, i + n)
                i += n
        items = [it if it.obj is None else it._replace(obj=it.obj.dtype) for it in items]
        self.call = calls.Call(dev, spec.symbol.address, items, slots, launch,
                               self.result.size if self.result else 0,
                               alike=None if dev.is_initial or not alike else ranks)
        self._layout, self._cells = tuple(layout), cells
        self.attempt = self._first

    def _first(self, args):
        """The first `attempt`: makes the code that the next ones run, and runs it."""
        c = self.call
        self.attempt = _attempts(self._layout, self.result is not None)(
            *((c.usable, c.run_alike) if c.alike else (c.fresh, c.run)), self.finish,
            *self._cells)
        return self.attempt(args)

    def run(self, values):
        """Run with these scalar words; the kernel's result, or None."""
        return self.finish(self.call.run(values))

    def finish(self, got):
        """The kernel's result from the bytes of its result slot."""
        if not self.result:
            return None
        v = self.result.unpack(got)
        return v[0] if len(v) == 1 else complex(*v)


MISS = calls.MISS       # what `Repeat.attempt` returns when it runs nothing


@functools.lru_cache(maxsize=256)
def _attempts(layout, result):
    """The maker of `Repeat.attempt` for calls whose arguments are laid out as
    ``layout`` says (per parameter: 0 an array, -1 an array of the initial device,
    else a scalar of that many words): straight-line code, with each array's weak
    reference and shape (its dtype and rank on the initial device) and each scalar's
    type and word function in cells of its own, as it runs at every repeated call."""
    names, body, words = [], [], []
    for pos, n in enumerate(layout):
        a = f"a{pos}"
        if n == 0:
            names += (f"r{pos}", f"s{pos}")
            body.append(f"if {a} is not r{pos}() or {a}.shape != s{pos} "
                        f"or not {a}.flags.writeable:")
        elif n < 0:             # a new array is fine: its address and extents are words
            names += (f"d{pos}", f"n{pos}")
            body.append(f"if type({a}) is not ndarray or {a}.dtype is not d{pos} or "
                        f"{a}.ndim != n{pos} or not {a}.flags.carray:")
            words += (f"address({a})", f"*{a}.shape")
        else:
            names += (f"t{pos}", f"w{pos}")
            body.append(f"if type({a}) is not t{pos}:")
            words.append(f"w{pos}({a})" if n == 1 else f"*w{pos}({a})")
        body.append("    return MISS")
    run = f"run([{', '.join(words)}])" if words else "run(())"
    got = ""
    if -1 in layout:            # `calls.Call.run_alike` may run nothing
        run, got = "got", (f"        got = {run}\n"
                           f"        if got is MISS:\n            return MISS\n")
    args = "".join(f"a{pos}, " for pos in range(len(layout)))
    src = (f"def make(fresh, run, finish, {', '.join(names)}):\n"
           f"    def attempt(args):\n"
           f"        if len(args) != {len(layout)}:\n"
           f"            return MISS\n"
           + (f"        {args}= args\n" if layout else "")
           + "".join(f"        {line}\n" for line in body)
           + "        if not fresh():\n            return MISS\n"     # the arguments first:
           + got                                                       # a miss costs less
           + f"        return {f'finish({run})' if result else run}\n"
           f"    return attempt\n")
    ns = {"MISS": MISS, "ndarray": np.ndarray, "address": address}
    exec(compile(src, f"<pygomp repeated call {layout}>", "exec"), ns)
    return ns["make"]


def _address_reader():
    """How to read an ndarray's data address fast: numpy's array object holds it right
    after CPython's object header (``a.ctypes.data`` takes ten times as long); checked
    on a probe array, else ``a.ctypes.data``."""
    probe = np.empty(2)
    if sys.implementation.name == "cpython":
        at, off = ctypes.c_void_p.from_address, object.__basicsize__
        if at(id(probe) + off).value == probe.ctypes.data:
            return lambda a: at(id(a) + off).value or 0
    return lambda a: a.ctypes.data


address = _address_reader()


def _weak(a):
    """A weak reference to an array argument (a dead one for what takes none)."""
    try:
        return weakref.ref(a)
    except TypeError:
        return _dead


def _dead():
    return None
