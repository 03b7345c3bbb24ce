"""The typed IR: a small tree of statements and expressions, each with its Python line.

Expressions carry their type (`pygomp.compiler.types`). Statements are plain dataclasses;
an emitter dispatches on the class name. `dump()` prints a stable text form (used in
cache keys and in tests).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from .types import Array, Scalar

# -- expressions ---------------------------------------------------------------------


@dataclass
class Expr:
    type: object = field(default=None, kw_only=True)
    weak: bool = field(default=False, kw_only=True)   # a Python literal (NEP 50)
    # an int64 value that fits in int32, written so by dialects with 32-bit indices
    i32: bool = field(default=False, kw_only=True, compare=False, repr=False)


@dataclass
class Const(Expr):
    value: object


@dataclass
class Var(Expr):
    name: str


@dataclass
class ArrayRef(Expr):
    """An array used as a value: a parameter, a local/shared array (type is Array)."""
    name: str


@dataclass
class FieldRef(ArrayRef):
    """A field of the record array ``name`` (records.py), used as an array of its own:
    the struct member ``member``, a sub-array of shape ``sub`` (() for a scalar); its
    first ``nrec`` axes are the record array's (of type ``rtype``)."""
    member: str
    sub: tuple
    nrec: int
    rtype: object


@dataclass
class Index(Expr):
    """An element; ``fixed``: how many of the indices are a named view's (``row = A[i]``),
    so that a checked access names the view's own axis (left out of dump and ==)."""
    array: ArrayRef
    indices: list
    fixed: int = field(default=0, kw_only=True, compare=False)


@dataclass
class View(Expr):
    """A sub-array (``A[i]`` of a 2-d A): ``array`` with its first indices fixed to
    ``prefix``; its type is the Array of the remaining dimensions."""
    array: ArrayRef
    prefix: list


@dataclass
class Shape(Expr):
    array: ArrayRef
    dim: int


@dataclass
class BinOp(Expr):
    op: str            # C operator: + - * / % << >> & | ^
    left: Expr
    right: Expr


@dataclass
class Unary(Expr):
    op: str            # - + ! ~
    operand: Expr


@dataclass
class Compare(Expr):
    op: str            # < <= > >= == !=
    left: Expr
    right: Expr


@dataclass
class Logical(Expr):
    op: str            # && ||
    left: Expr
    right: Expr


@dataclass
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr


@dataclass
class Cast(Expr):
    operand: Expr


@dataclass
class Call(Expr):
    """A math function by its generic name (sqrt, exp, pow, min, max, abs, floor, ...)."""
    fn: str
    args: list


@dataclass
class Builtin(Expr):
    """gang_id, worker_id, vector_id, num_gangs, num_workers, vector_length."""
    name: str


@dataclass
class HelperCall(Expr):
    fn: "Function"
    args: list


# -- statements --------------------------------------------------------------------


@dataclass
class Stmt:
    line: int = field(default=0, kw_only=True)


@dataclass
class Assign(Stmt):
    target: Expr       # Var or Index
    value: Expr


@dataclass
class ExprStmt(Stmt):
    expr: Expr


@dataclass
class If(Stmt):
    cond: Expr
    body: list
    orelse: list


@dataclass
class While(Stmt):
    cond: Expr
    body: list


@dataclass
class For(Stmt):
    """A sequential counted loop: var = start; var < stop (or > for a negative step)."""
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: list
    i32: bool = field(default=False, kw_only=True, compare=False)   # its counter (narrow.py)


@dataclass
class Dim:
    var: str
    start: Expr
    stop: Expr
    step: Expr


@dataclass
class Reduction:
    op: str            # + * max min & | ^ and or
    var: str           # the variable outside the loop
    local: str         # the private copy the body uses
    type: Scalar
    rid: int = 0       # reduction id, unique in the kernel


@dataclass
class ParLoop(Stmt):
    """A partitioned loop. ``levels`` is a tuple out of ("gang", "worker", "vector").
    ``dims`` has more than one entry under collapse. ``decls`` are the variables private
    to one iteration. The reductions pass fills the four phase lists."""
    levels: tuple
    dims: list
    body: list
    reductions: list = field(default_factory=list)     # [Reduction]
    decls: list = field(default_factory=list)          # [(name, type)]
    setup: list = field(default_factory=list)          # [RedCall]
    init: list = field(default_factory=list)
    fini: list = field(default_factory=list)
    teardown: list = field(default_factory=list)
    has_sync: bool = False      # contains atomics or barriers (no simd on the host)


@dataclass
class RedCall(Stmt):
    """One of the four internal reduction calls (GCC's IFN_GOACC_REDUCTION)."""
    phase: str         # SETUP, INIT, FINI, TEARDOWN
    level: str         # gang, worker, vector
    op: str
    type: Scalar
    outer: str         # the variable of the enclosing level (the result)
    local: str         # the copy of this level
    rid: int           # reduction id, unique in the kernel


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class Barrier(Stmt):
    pass


@dataclass
class AtomicAdd(Stmt):
    target: Index
    value: Expr


@dataclass
class Print(Stmt):
    """``print(*items, sep=sep, end=end)``: each item a scalar Expr or a str."""
    items: list
    sep: str = " "
    end: str = "\n"


@dataclass
class Atomic(Expr):
    """``op`` ("add", "max", "min", "exchange", "cas") on ``target`` (an Index), atomically;
    its value is the old one.  Only a statement's call or an assignment's whole value."""
    op: str
    target: Index
    value: Expr
    expected: Expr = None       # for "cas"


@dataclass
class ArrayInit(Stmt):
    """Where a private or local array is created (``np.zeros``, ``omp.shared_array``).
    The array itself is declared with its scope's ``decls``; this zero-fills if asked."""
    name: str
    type: Array
    zero: bool = False


# -- functions ---------------------------------------------------------------------


@dataclass(eq=False)
class Function:
    name: str                   # C name (mangled for helpers and specializations)
    pyname: str
    params: list                # [(name, type)]
    body: list
    ret: object                 # Scalar or VOID
    decls: list                 # function-scope variables [(name, type)]
    file: str
    line: int
    is_kernel: bool
    helpers: list = field(default_factory=list)     # Functions called, callees first
    ret_param: str = "__ret"                        # kernels: the result pointer's name
    decl_lines: dict = field(default_factory=dict)  # C name -> line of its first assignment
    written: dict = field(default_factory=dict)     # array parameter -> line of a store
    sizes: dict = field(default_factory=dict)       # private array -> run-time extents
    scratch: dict = field(default_factory=dict)     # kernels: array -> its type, shared
                                                    # by all work-items and launches
    boundscheck: bool = False                       # kernels: every access is checked
    wraparound: bool = True                         # kernels: negative indices wrap
    rets: list = None           # a tuple's types, stored into the last params (forms.py)
    # 32-bit indices (narrow.py): the int64 variables that fit in int32, and the arrays
    # with fewer than 2**31 elements (their flat offsets fit)
    narrow: frozenset = frozenset()
    small: frozenset = frozenset()


def stores(fn: Function) -> dict:
    """{array parameter of fn: the line of a statement that writes into it}: element
    stores, atomics, and arrays passed to a helper that writes its parameter."""
    out = {}
    for st in walk(fn.body):
        if not isinstance(st, Stmt):
            continue
        roots = []
        if isinstance(st, (Assign, AtomicAdd)) and isinstance(st.target, Index):
            roots.append(st.target.array.name)
        own = [getattr(st, f.name) for f in fields(st)]
        own = [v for v in own if isinstance(v, Expr) or isinstance(v, Dim)
               or (isinstance(v, list) and v and not isinstance(v[0], Stmt))]
        for n in walk(own):
            if isinstance(n, Atomic):
                roots.append(n.target.array.name)
            if isinstance(n, HelperCall):
                for a, (p, _) in zip(n.args, n.fn.params):
                    if isinstance(a, (ArrayRef, View)) and p in n.fn.written:
                        roots.append(a.array.name if isinstance(a, View) else a.name)
        for r in roots:
            out.setdefault(r, st.line)
    params = {n for n, t in fn.params if isinstance(t, Array)}
    return {n: line for n, line in out.items() if n in params}


def walk(node):
    """Every IR node under ``node`` (statements and expressions), depth first."""
    yield node
    if isinstance(node, list):
        for x in node:
            yield from walk(x)
        return
    if not hasattr(node, "__dataclass_fields__"):
        return
    for f in fields(node):
        v = getattr(node, f.name)
        if isinstance(v, (Expr, Stmt, Dim, list)):
            yield from walk(v)


def dump(node, indent=0) -> str:
    """A stable text form of the IR (for cache keys and debugging)."""
    pad = "  " * indent
    if isinstance(node, Function):
        head = f"{pad}function {node.name}({', '.join(f'{n}: {t}' for n, t in node.params)})" \
               f" -> {node.ret} [{', '.join(f'{n}: {t}' for n, t in node.decls)}]"
        return "\n".join([head] + [dump(h, indent + 1) for h in node.helpers]
                         + [dump(s, indent + 1) for s in node.body])
    if isinstance(node, list):
        return "\n".join(dump(s, indent) for s in node)
    if isinstance(node, Stmt):
        parts, subs = [], []
        for f in fields(node):
            v = getattr(node, f.name)
            if isinstance(v, list) and v and isinstance(v[0], Stmt):
                subs.append(f"{pad}  {f.name}:\n" + dump(v, indent + 2))
            elif f.name not in ("line", "i32"):
                parts.append(f"{f.name}={_e(v)}")
        return "\n".join([f"{pad}{type(node).__name__}@{node.line} " + " ".join(parts)] + subs)
    return pad + _e(node)


def _e(v):
    if isinstance(v, HelperCall):
        return f"{v.fn.name}({', '.join(_e(a) for a in v.args)})"
    if isinstance(v, Expr):
        inner = ", ".join(_e(getattr(v, f.name)) for f in fields(v)
                          if f.name not in ("type", "weak", "fixed", "i32"))
        return f"{type(v).__name__}<{v.type}>({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_e(x) for x in v) + "]"
    if isinstance(v, Dim):
        return f"{v.var}:{_e(v.start)}..{_e(v.stop)}:{_e(v.step)}"
    return repr(v) if not isinstance(v, (Scalar, Array)) else str(v)
