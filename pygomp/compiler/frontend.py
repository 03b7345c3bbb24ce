"""Python AST -> typed IR.  `SUPPORTED` lists the Python a kernel may contain: each
supported AST node kind with the method that turns it into IR (and a line of doc); the
functions a kernel may call are `callables.ENTRIES`.  Any other kind is a
`CompileError` naming the construct, with the file, line and source (`Frontend.visit`).

A kernel computes what the same function computes run by Python on numpy arrays (with
numpy scalars): ``//`` and ``%`` floor (the remainder takes the divisor's sign), integer
division or modulo by zero gives 0 and ``MIN // -1`` gives MIN (nothing traps), float
division gives numpy's inf and nan, shifts and ``**`` are numpy's, a negative index counts
from the end, a ``range`` loop's variable keeps its last value.  The differences:
- integers have fixed width (Python ints are int64 in kernels) and overflow wraps around,
  as numpy's do, where Python's own ints would grow;
- what Python reports as an error is not checked: an index out of range (unless the
  kernel is compiled with bounds checking, ``@omp.target(boundscheck=True)`` or
  ``PYGOMP_BOUNDSCHECK=1``: then the first access out of range is not done, a read
  gives 0, and the call raises numpy's IndexError at its Python line once the kernel
  ends), a negative integer power (it gives the integer part of the result);
- with ``@omp.target(wraparound=False)`` a negative index does not count from the end;
  otherwise every index `nonneg` cannot prove non-negative carries that test;
- a variable keeps one type, the widest assigned to it (``s = 0`` then ``s += x[i]``
  with float64 ``x`` makes ``s`` float64 from the start).  A variable that only Python
  scalars assign (``ax = 0.0``; a loop index; ``int()``, ``float()`` and ``complex()``
  of a value) is weak, as a Python scalar is in numpy 2 (NEP 50): it takes the type of
  the typed values it meets (``ax += dx[i]`` with float32 ``dx`` makes ``ax``
  float32); so is a parameter given a Python scalar (a kernel's
  unannotated one, or a helper's given a weak value): ``saxpy(2.0, x, y)`` with float32
  arrays computes ``a * x[i]`` in float32, as numpy 2 does, and ``np.float64(2.0)``
  makes it float64;
- global scalars (module constants) are read once, when the kernel is compiled;
- a complex np.exp or np.sqrt with an infinite or NaN part may differ from numpy's, whose
  special cases the kernels do not all follow (finite values agree);
- ``a * b + c`` may be one fused multiply-add (one rounding, as C compilers contract it
  by default) where numpy rounds twice: the last bit may differ.

Scoping in parallel loops, as in Python: a variable first assigned in a parallel loop
belongs to one iteration (and is undefined after the loop); an enclosing scalar that the
loop assigns is private to each iteration when every iteration assigns it before reading
it (it must then not be read after the loop, where Python would see the last value), and
an error that suggests ``reduction=`` or ``private=`` when an iteration may read it
first.  Read-only enclosing variables are shared.
"""
from __future__ import annotations

import ast
import copy
from typing import NamedTuple

from ..errors import CompileError  # noqa: F401  (compiler users catch it here)
from . import annotate, ir, precheck, scoping
from . import types as T
from .arrays import Arrays
from .boundscheck import RECORD
from .callables import MATH
from .calls import Calls
from .computed import Computed
from .expressions import Expressions
from .forms import Forms, Nested, Tuples
from .inscan import Inscan
from .loops import Loops, Scope
from .npcalls import NumpyCalls
from .records import Records
from .scans import Scans
from .statements import Statements
from .views import Strided, Views

class Kind(NamedTuple):
    method: object      # the Frontend method that turns the node into IR
    doc: str            # one line


SUPPORTED = {
    # statements
    ast.Assign: Kind(Statements.stmt_Assign, "x = e; also a, b = e, f and local arrays"),
    ast.AugAssign: Kind(Statements.stmt_AugAssign, "x += e (and the other operators)"),
    ast.AnnAssign: Kind(Statements.stmt_AnnAssign, "x: float32 = e"),
    ast.Expr: Kind(Statements.stmt_Expr, "a call as a statement; a docstring"),
    ast.If: Kind(Statements.stmt_If, "if / elif / else"),
    ast.For: Kind(Loops.stmt_For, "range, arrays, enumerate, zip and the omp loops"),
    ast.While: Kind(Statements.stmt_While, "a sequential loop"),
    ast.Break: Kind(Statements.stmt_Break, "out of a sequential loop"),
    ast.Continue: Kind(Statements.stmt_Continue, "to a loop's next iteration"),
    ast.Return: Kind(Statements.stmt_Return, "a scalar or a tuple of scalars"),
    ast.Pass: Kind(Statements.stmt_Pass, "nothing"),
    ast.FunctionDef: Kind(Nested.stmt_FunctionDef, "a nested def: a helper"),
    # expressions
    ast.Constant: Kind(Expressions.expr_Constant, "numbers, True, False; strings in print"),
    ast.Name: Kind(Expressions.expr_Name, "variables, parameters, module constants"),
    ast.Attribute: Kind(Expressions.expr_Attribute, "a.shape, a.size, a.ndim, a.T, z.real, "
                                                    "z.imag; module constants"),
    ast.Subscript: Kind(Expressions.expr_Subscript, "indices, slices, record fields"),
    ast.BinOp: Kind(Expressions.expr_BinOp, "+ - * / // % ** << >> & | ^ @"),
    ast.UnaryOp: Kind(Expressions.expr_UnaryOp, "-x, +x, ~x, not x"),
    ast.Compare: Kind(Expressions.expr_Compare, "< <= > >= == !=, chained"),
    ast.BoolOp: Kind(Expressions.expr_BoolOp, "and, or"),
    ast.IfExp: Kind(Expressions.expr_IfExp, "a if c else b"),
    ast.Call: Kind(Calls.expr_Call, "the functions of `callables`; declare_target helpers"),
}
assert SUPPORTED.keys() == precheck.KINDS       # what @omp.target checks at once

RESERVED = set("""auto break case char const continue default do double else enum extern float
for goto if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while bool half uchar ushort uint ulong kernel global local
private constant launch args min max abs""".split()) | {m[0] for m in MATH.values()}


class Registry:
    """Helper specializations compiled for one kernel (shared by nested compilations),
    and whether its negative indices count from the end (``wraparound``)."""

    def __init__(self, wraparound=True):
        self.wraparound = wraparound
        self.done = {}              # (DeclareTarget, argtypes) -> ir.Function
        self.order = []
        self.busy = set()


def compile_function(fn, argtypes, *, is_kernel=True, registry=None, name=None,
                     boundscheck=False, wraparound=True, weak=()) -> ir.Function:
    """The typed IR of a Python function for the given argument types (a list with one
    `types.Scalar`/`types.Array` per parameter; annotations win over scalars given).
    ``boundscheck``: a kernel whose every array access is checked; it takes the error
    record as one more array parameter (see `boundscheck`).  ``wraparound=False``: every
    index is taken as it is, a negative one is not counted from the end.  ``weak``: the
    parameters given Python scalars, weak as NEP 50 makes them."""
    fe = Frontend(fn, argtypes, is_kernel=is_kernel,
                  registry=registry or Registry(wraparound), name=name)
    for p in weak:
        fe.mark_weak(p, True)
    out = fe.build()
    if not wraparound and is_kernel:
        out.wraparound = False
    if boundscheck and is_kernel:
        out.boundscheck = True
        out.params.append((RECORD, T.Array(T.INT64, 1)))
    return out


class Frontend(Statements, Loops, Forms, Tuples, Nested, Expressions, Calls, Arrays,
               NumpyCalls, Computed, Views, Scans, Inscan, Records):
    """The visitor: the methods of `SUPPORTED`, from the mixins in statements.py,
    loops.py, forms.py, expressions.py and calls.py (array expressions: arrays.py,
    npcalls.py, computed.py, views.py, scans.py; scan directives: inscan.py; record
    arrays: records.py)."""

    def __init__(self, fn, argtypes, is_kernel, registry, name, local=None):
        self.fn = fn
        self.is_kernel = is_kernel
        self.registry = registry
        self.file, self.lines, self.offset, self.node = precheck.source(fn)
        self.name = name or fn.__name__
        self.env = dict(fn.__globals__)
        if fn.__closure__:
            for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.env[var] = cell.cell_contents
                except ValueError:
                    pass
        if local is not None:       # a function defined in fn (`forms.Local`)
            self.node, self.env = local.node, dict(local.env)
        self.base_env = self.env
        self.locals, self.lambdas = {}, {}      # nested functions, kept across passes
        self.argtypes = list(argtypes)
        self.vtypes = {}            # variable type (widened across passes)
        self.fixed = {}             # annotated variables
        self.weakvars = set()       # variables only Python scalars assigned (NEP 50)
        self.strong = set()         # and those a typed value was assigned to
        self.ret = None
        self.rets = None            # the types of a tuple returned (`forms.Tuples`)

    # -- errors and source ------------------------------------------------------------
    def line(self, node):
        return getattr(node, "lineno", 1) + self.offset

    def error(self, node, message):
        return precheck.error(self.file, self.lines, self.offset, node, message)

    # -- driver ---------------------------------------------------------------------
    def build(self) -> ir.Function:
        args = self.node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(self.node, precheck.PARAMS)
        if len(args.args) != len(self.argtypes):
            raise self.error(self.node, f"{self.name} takes {len(args.args)} arguments, "
                                        f"{len(self.argtypes)} given")
        self.node = self.normalize(self.node)       # record fields (records.py)
        for _ in range(10):
            self.changed = False
            fn = self._build_once()
            if not self.changed:
                return fn
        raise self.error(self.node, "the variable types do not settle; add annotations")

    def _build_once(self):
        self.env = dict(self.base_env)          # a nested function is known once defined
        self.scopes = [Scope()]
        self.gone = {}              # name -> line of the parallel loop it was private to
        self.arrays = {}            # python name -> its ArrayRef or View, visible now
        self.views = {}             # python name -> the strided Slab bound to it (views.py)
        self.view_stmts = {}        # python name -> the statement binding it
        self.bounds = {}            # C name of a loop variable (in the loop) or of a name
                                    # assigned once -> its lower bound
        self.seqvars = []           # loop variables of the enclosing range loops
        self.levels = []            # levels of enclosing parallel loops
        self.rid = 0
        self.decl_lines = {}
        self.loopdepth = 0
        params, first = [], []      # all of them; the first of each Python parameter
        for a, t in zip(self.node.args.args, self.argtypes):
            if isinstance(t, Strided):              # a view (views.py): several words
                params += self.view_parameter(a.arg, self.cname(a.arg), t)
                first.append(params[-1])
                continue
            try:
                t = annotate.check(self.fn.__name__, a.arg, self.annotation(a), t)
            except TypeError as e:
                raise self.error(a, str(e)) from None
            c = self.cname(a.arg)
            params.append((c, t))
            first.append((c, t))
            if isinstance(t, T.Array):
                self.arrays[a.arg] = ir.ArrayRef(c, type=t)
                if isinstance(t.elem, T.Record):
                    self.bind_fields(a.arg, self.arrays[a.arg])
            else:
                self.scopes[0].names[a.arg] = c
                self.vtypes[a.arg] = t
        self.params = {a.arg for a in self.node.args.args}
        self.live_after = scoping.live_after(self.node.body)
        self.counts = scoping.assignments(self.node.body)
        self.assigned = set(self.counts)
        self.facts = {c: None for a, (c, t) in zip(self.node.args.args, first)
                      if isinstance(t, T.Scalar) and a.arg not in self.counts}   # nonneg.py
        self.top = {id(s) for s in self.node.body}   # statements at the function's top
        self.made = []              # statements made from those (tuple assignments)
        self.defs = {}              # C name -> the value of a variable assigned once there
        self.sizes = {}             # C name of a private array -> its run-time extents
        self.copies = set()         # C names of array reduction copies
        self.scratch = {}           # C name -> type of an array in the global scratch
        self.pre = []               # statements to go before the current one (arrays.py)
        self.elems = {}             # id of an array operand -> its element (arrays.py)
        self.inner, self.inner_decls = [], []   # what computes them (computed.py)
        self.nesting = 0            # in such a computation: reductions are sequential
        body = self.block(self.node.body)
        params += self.out_params()
        ret = self.ret or T.VOID
        fn = ir.Function(self.name, self.fn.__qualname__, params, body, ret,
                         self.scopes[0].decls, self.file, self.line(self.node), self.is_kernel)
        fn.helpers = list(self.registry.order) if self.is_kernel else []
        fn.rets = self.rets
        fn.decl_lines = self.decl_lines
        fn.sizes = self.sizes
        fn.scratch = self.scratch
        fn.written = ir.stores(fn)
        return fn

    def annotation(self, a):
        """The Scalar or `annotate.ArrayAnn` of a parameter's annotation, or None."""
        node = a.annotation
        if node is None:
            return None
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            else ast.unparse(node)
        try:
            return annotate.parse(text, self.env)
        except TypeError as e:
            raise self.error(a, f"parameter {a.arg!r}: {e}") from None

    def cname(self, name):
        return name + "_" if name in RESERVED or name.startswith("__") else name

    # -- dispatch through SUPPORTED ------------------------------------------------------
    def visit(self, node):
        """``node`` in IR, by the method `SUPPORTED` gives its kind; any other kind is
        refused here."""
        if id(node) in self.elems:
            return copy.deepcopy(self.elems[id(node)])
        kind = SUPPORTED.get(type(node))
        if kind is None:
            raise self.error(node, precheck.refusal(node))
        return kind.method(self, node)

    def block(self, stmts):
        out = []
        facts = dict(self.facts)        # what the block's assignments say ends with it
        outer, self.pre = self.pre, []
        for s in stmts:
            r = self.visit(s)
            pre, self.pre = self.pre, []    # the loops of its reductions and slices
            if pre and isinstance(s, ast.While):
                raise self.error(s, "a numpy reduction or slice in a while condition: "
                                    "compute it into a variable before the loop and at "
                                    "the end of its body")
            r = pre + ([] if r is None else r if isinstance(r, list) else [r])
            for x in r:
                if not x.line:
                    x.line = self.line(s)
                out.append(x)
        self.facts = facts
        self.pre = outer
        return out

    def expr(self, node) -> ir.Expr:
        """An expression in IR."""
        return self.visit(node)

