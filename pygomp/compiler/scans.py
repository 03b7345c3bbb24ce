"""Prefix sums and products: ``y[:] = np.cumsum(x)`` and ``np.cumprod``, of a 1-d array
or elementwise expression, stored into a 1-d array or sub-array.

At a kernel's top level (when the target keeps numpy's accumulator type, as np.cumsum
of float64 into float64 does) it is a two-pass parallel scan that uses the target as
its scratch: a parallel loop over blocks of ``BLOCKS`` equal chunks scans each chunk
into the target, a sequential loop over the blocks turns each chunk's last element
into the prefix up to it, and a second parallel loop adds the prefix of the previous
chunk to the other elements of each.  Elsewhere (in a parallel loop, a helper, or into
another type) it is the thread's sequential loop.  Floating-point sums are associated
by chunks, so they may differ from numpy's (sequential) ones in the last bits.
"""
from __future__ import annotations

import ast

import numpy as np

from . import ir
from . import types as T
from .callables import CUMULATIVE
from .expressions import _i
from .reductions import combine

BLOCKS = 1024


class Scans:
    """Mixin of `frontend.Frontend`: ``target[...] = np.cumsum(...)``."""

    def is_scan(self, value):
        return isinstance(value, ast.Call) and _known(self.callee(value.func))

    def scan_assign(self, target, call, s):
        name = ast.unparse(call.func)
        op = CUMULATIVE[self.callee(call.func)]
        if len(call.args) != 1 or call.keywords:
            raise self.error(call, f"{name}(x) takes one array in kernels (axis= and "
                                   f"dtype= are not supported)")
        tslab = self.slab(target)
        leaves = self.leaves(call.args[0], [])
        shape = self.shape_of(leaves)
        if len(tslab.axes) != 1 or len(shape) != 1:
            raise self.error(s, f"{name}() in kernels scans a 1-d array into a 1-d array "
                                f"(here {len(shape)} and {len(tslab.axes)} dimensions)")
        self.check_shapes(leaves, [(tslab.axes[0][3], tslab.axes[0][4])], s,
                          ast.unparse(target))
        self.check_overlap(leaves, tslab, target, s)
        n = self.hoist(ir.Call("max", [tslab.axes[0][3], _i(0)], type=T.INT64), s, "sn")
        tag = f"__scan{s.lineno}_{s.col_offset}"
        i = ir.Var(tag + "_i", type=T.INT64)
        v = self.element(call.args[0], leaves, [i])
        acc_t = T.scalar(np.cumsum(np.zeros(1, v.type.dtype)).dtype if op == "+"
                         else np.cumprod(np.zeros(1, v.type.dtype)).dtype)
        v = self.convert(v, acc_t, s)
        inner, decls, self.inner, self.inner_decls = self.inner, self.inner_decls, [], []
        acc = ir.Var(tag + "_acc", type=acc_t)
        elem = tslab.root.type.elem
        line = self.line(s)
        at = tslab.element

        def scan(lo, hi):           # acc = identity; for i in [lo, hi): y[i] = acc op= v
            body = inner + [ir.Assign(acc, combine(op, acc_t, acc, v), line=line),
                            ir.Assign(at([i]), self.convert(acc, elem, s), line=line)]
            return [ir.Assign(acc, ir.Const(int(op == "*"), type=acc_t), line=line),
                    ir.For(i.name, lo, hi, _i(1), body, line=line)]
        private = [(i.name, T.INT64), (acc.name, acc_t)] + decls
        if self.levels or not self.is_kernel or elem != acc_t:
            self.scopes[-1].decls += private
            return scan(_i(0), n)
        chunk = self.temp(s, "sc", T.INT64, _max(_div(_add(n, BLOCKS - 1), _i(BLOCKS)), 1))
        blocks = self.temp(s, "sb", T.INT64, _div(_add(n, chunk, -1), chunk))

        def bounds(b):              # block b: [lo, hi)
            lo = ir.BinOp("*", b, chunk, type=T.INT64)
            return lo, ir.Call("min", [_add(lo, chunk), n], type=T.INT64)

        def before(b):              # the element before block b
            return at([_add(bounds(b)[0], -1)])
        b, e = (ir.Var(f"{tag}_{x}", type=T.INT64) for x in "be")
        par = ("gang", "worker", "vector")
        first = ir.ParLoop(par, [ir.Dim(b.name, _i(0), blocks, _i(1))], scan(*bounds(b)),
                           line=line)
        first.decls = private
        end = at([_add(bounds(e)[1], -1)])
        self.scopes[-1].decls.append((e.name, T.INT64))
        ends = ir.For(e.name, _i(1), blocks, _i(1), [ir.Assign(
            end, combine(op, elem, end, before(e)), line=line)], line=line)
        off = ir.Var(tag + "_off", type=elem)         # the prefix before block b
        add = ir.Assign(at([i]), combine(op, elem, at([i]), off), line=line)
        lo, hi = bounds(b)
        second = ir.ParLoop(par, [ir.Dim(b.name, _i(1), blocks, _i(1))],
                            [ir.Assign(off, before(b), line=line),
                             ir.For(i.name, lo, _add(hi, -1), _i(1), [add], line=line)],
                            line=line)
        second.decls = [(i.name, T.INT64), (off.name, elem)]
        return [first, ends, second]


def _known(obj):
    try:
        return obj in CUMULATIVE
    except TypeError:
        return False


def _add(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = ir.BinOp("+", out, x if isinstance(x, ir.Expr) else _i(x), type=T.INT64)
    return out


def _div(a, b):
    return ir.Call("floordiv", [a, b], type=T.INT64)


def _max(a, c):
    return ir.Call("max", [a, _i(c)], type=T.INT64)
