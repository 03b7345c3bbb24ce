"""A looping kernel as one work-group: the variant a CPU device may run instead of its
program of launches.

A kernel whose gang loops sit in a sequential loop runs as thousands of launches
(`steps`), and on a CPU each costs the driver a few microseconds whatever the work:
seidel-2d's wavefronts are 30,000 launches of a few hundred points.  Its variant is the
same body in a gang loop of one iteration: every gang loop becomes the worker and
vector loop it holds, with the barriers that the work-group lowering puts around loops
nested in a gang, so the whole run is one launch of one work-group.  The plugin decides
which one runs (see ``KernelInfo.one_group``).

A kernel has no variant where the one-group body could mean something else: it reads
``gang_id()`` or ``num_gangs()``, holds a barrier, team-shared memory, a ``return``
before its last statement, a gang loop alone (``omp.gang``, whose body may hold worker
loops) or an array reduction.
"""
from __future__ import annotations

import copy

from . import ir, reductions
from . import types as T

SUFFIX = "__one"
_GANG_BUILTINS = {"gang_id", "num_gangs"}


def variant(fn: ir.Function, program: tuple) -> ir.Function | None:
    """A copy of ``fn`` (its helpers shared) that runs as one work-group, named
    ``fn.name + SUFFIX``; None where ``program`` (the kernel's launches) does not loop
    or the body does not allow it."""
    ends = bool(fn.body) and isinstance(fn.body[-1], ir.Return)
    rest, value = (fn.body[:-1], fn.body[-1].value) if ends else (fn.body, None)
    if all(isinstance(op, int) for op in program) or not _allowed([rest, value]):
        return None
    memo = {id(h): h for h in fn.helpers}
    body = copy.deepcopy(fn.body, memo)
    for n in ir.walk(body):
        if isinstance(n, ir.ParLoop) and "gang" in n.levels:
            n.levels = tuple(lv for lv in n.levels if lv != "gang")
    one = ir.Dim("pyg_one", _long(0), _long(1), _long(1))
    v = copy.copy(fn)
    v.name = fn.name + SUFFIX
    v.body = [ir.ParLoop(("gang",), [one], body, line=fn.line)]
    return reductions.lower(v)


def _allowed(body) -> bool:
    for n in ir.walk(body):
        if isinstance(n, (ir.Barrier, ir.Return)) or \
                isinstance(n, ir.Builtin) and n.name in _GANG_BUILTINS or \
                isinstance(n, ir.ArrayInit) and n.type.space == "local":
            return False
        if isinstance(n, ir.ParLoop) and (n.levels == ("gang",) or any(
                isinstance(r.type, T.Array) for r in n.reductions)):
            return False
    return True


def _long(v):
    return ir.Const(v, type=T.INT64)
