"""Cutting a kernel into launches where its statements need a grid-wide order.

Gangs run with no order between them, and a device orders one launch after another, not
one gang after another.  So where a kernel's top-level statements need every gang to
see what came before (the stores of a gang loop, its gang reduction, an array element
that sequential code stored before a gang loop reads it), the kernel is cut: each piece
becomes one entry (one launch), and the plugin launches the entries in order, with one
global scratch buffer that persists across them.  `plan(fn)` decides the cuts:

- a gang loop ends its entry (if anything follows it); its gang reduction partials (one
  per gang, in scratch) are combined into the variable by whichever entry runs next; the
  copies of its array reductions (one per work-item) are summed by an entry of their own
  (``Launch.combine``) that follows it at once;
- a gang loop starts a new entry if what precedes it in the entry stores to memory
  (sequential code stores from one work-item; scalars alone are recomputed by every
  gang, so they need no cut), or reads memory that the gang loop stores to (a late
  gang would recompute the scalar from what an early one wrote);
- an ``if`` that holds a cut evaluates its condition once into a flag; each entry it
  spans runs its part under ``if (flag)``;
- a sequential loop that holds a cut becomes a loop of launches that the plugin runs:
  ``("repeat", word, ops)`` runs ``ops`` as many times as the scratch word says, read
  once after the entry before it; ``("while", word, ops)`` runs them while the word,
  read before each round, is nonzero.  Its variable, trip count and flags are scalars
  like the others; ``break`` and ``continue`` in it set flags that guard what follows.

Scalars live across launches ("carried": every function-scope scalar and the ones this
pass adds) are kept in scratch words: an entry loads them at its start and one work-item
(gang 0's first) stores them at its end.  Since a late gang of a launch may start after
gang 0 has finished, an entry reads one copy (area ``parity[k]``) and writes the other;
a loop of launches gets an even number of entries a round so that every path
alternates: a ``repeat`` whose round has an odd number has it made twice, the second
copy under a flag that an iteration is left, and runs ``(n + 1) / 2`` rounds (`twice`);
other loops get an empty entry.  Scratch layout, in 8-byte words: area 0 (``words`` words),
area 1, the kernel's arrays in the scratch (``Function.scratch``: the chunk totals of a
scan), then the gang partials: gang g's partial of gang reduction r at word
``2 * words + g * gang_words + offset(r)`` (a complex128 takes two words, as a carried
one does).  A gang loop with reductions leaves its number of gangs in its ``pending``
word (zero: nothing to combine).

This module only decides; `pygomp.compiler.workgroup` writes the entries, the loads
and stores of carried words, the partials and the ``done`` and ``pending`` words.  The
KernelInfo lists the entries (with their levels), the scratch bytes
(``Plan.scratch_words``, and ``gang_words`` per gang) and the program.  A dialect whose
device orders all statements by itself (the host) needs none of this.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ..errors import CompileError
from . import ir
from . import types as T


@dataclass
class Launch:
    body: list                  # IR statements of one launch
    levels: set = field(default_factory=set)       # the levels it partitions
    combine: object = None      # a gang loop whose array reduction copies this entry sums


@dataclass
class Plan:
    entries: list               # [Launch]
    program: tuple              # entry index | ("repeat"|"while", word, ops)
    carried: list               # [(C name, type)]: the scalars kept between launches
    parity: list                # per entry: the area it loads (it stores the other)
    reductions: list            # [(ParLoop, Reduction)]: gang reductions, by slot
    pending: dict               # id(gang loop) -> the carried name of its pending word
    copies: dict                # id(gang loop with array reductions) -> the carried name
                                # of its launch's work-item count (for the summing entry)
    done: str | None = None     # set by a return: the entries after it do nothing
    flags: list = field(default_factory=list)      # carried names the plugin reads
    arrays: list = field(default_factory=list)     # [(name, type)]: `Function.scratch`

    def before(self, k: int) -> set:
        """The entries that may run right before entry k (the program's back edges
        included)."""
        preds = {}
        _flow(self.program, set(), preds)
        return preds.get(k, set())

    @property
    def words(self) -> int:
        return sum(t.words for _, t in self.carried)

    def word(self, name: str, area: int) -> int:
        """The first scratch word of a carried scalar in an area (0 or 1)."""
        names = [n for n, _ in self.carried]
        return area * self.words + sum(t.words for _, t in self.carried[:names.index(name)])

    @property
    def scratch_words(self) -> int:
        return 2 * self.words + sum(_array_words(t) for _, t in self.arrays)

    def array_word(self, name: str) -> int:
        """The first scratch word of a kernel array in the global scratch (after the
        two areas)."""
        names = [n for n, _ in self.arrays]
        return 2 * self.words + sum(_array_words(t) for _, t in
                                    self.arrays[:names.index(name)])

    def offset(self, r) -> int:
        """The first word of gang reduction ``r``'s partial in a gang's words."""
        rs = [x for _, x in self.reductions]
        return sum(x.type.words for x in rs[:next(k for k, x in enumerate(rs) if x is r)])

    @property
    def gang_words(self) -> int:
        return sum(r.type.words for _, r in self.reductions)


def _array_words(t) -> int:
    return t.elem.words * t.shape[0]


def _flow(ops, before, preds):
    """Record in ``preds`` the entries that may precede each entry of ``ops`` when the
    entries ``before`` may precede them; returns the entries that may come last."""
    cur = set(before)
    for op in ops:
        if isinstance(op, int):
            preds.setdefault(op, set()).update(cur)
            cur = {op}
            continue
        start, entry = set(cur), set(cur)         # a loop of launches runs 0+ times
        while True:
            end = _flow(op[2], entry, preds)
            if start | end == entry:
                break
            entry = start | end
        cur = start | end
    return cur


def is_gang_loop(s) -> bool:
    return isinstance(s, ir.ParLoop) and "gang" in s.levels


def has_gang_loop(stmts) -> bool:
    return any(is_gang_loop(n) for n in ir.walk(stmts))


def stores(stmts, mine=()) -> bool:
    """Whether statements write memory that another gang could read (a store to an
    array that is not private, an atomic, a helper that writes, a kernel result);
    ``mine``: names of arrays private to a work-item whatever their space."""
    for n in ir.walk(stmts):
        if isinstance(n, (ir.Assign, ir.AtomicAdd, ir.Atomic)) and isinstance(n.target, ir.Index) \
                and n.target.array.type.space != "private" and n.target.array.name not in mine:
            return True
        if isinstance(n, ir.HelperCall) and n.fn.written or isinstance(n, ir.Return):
            return True
    return False


def reads(stmts, mine=()) -> bool:
    """Whether statements read memory that another gang could write (an element of an
    array that is not private, a helper's arguments)."""
    for n in ir.walk(stmts):
        if isinstance(n, ir.Index) and n.array.type.space != "private" \
                and n.array.name not in mine or isinstance(n, ir.HelperCall):
            return True
    return False


def plan(fn: ir.Function) -> Plan:
    """Entries, program and carried scalars of a kernel (see the module docstring)."""
    return _Builder(fn).build()


class _Builder:
    def __init__(self, fn):
        self.fn = fn
        self.entries, self.parity = [], []
        self.open = None            # the Launch being filled, or None
        self.chain = []             # the If nodes of `guards` made in the open entry
        self.guards = []            # conditions around what is appended now
        self.effects = False        # the open entry stores to memory
        self.reading = False        # the open entry reads memory outside gang loops
        self.ops = []               # the program ops of the current level
        self.area = 0               # the area the next entry loads
        self.carried = [(n, t) for n, t in fn.decls if isinstance(t, T.Scalar)]
        self.reductions, self.pending, self.copies = [], {}, {}
        self.flags = []
        self.n = 0
        self.line = fn.line

    def build(self):
        self.seq(self.fn.body)
        if not self.entries:
            self.target()
        self.cut(force=not self.entries)
        done, last = None, self.ops[-1] if isinstance(self.ops[-1], int) else None
        if any(isinstance(n, ir.Return) for k, e in enumerate(self.entries) if k != last
               for n in ir.walk(e.body)):
            done = self.var("done", T.BOOL)       # launches after a return do nothing
        self.check_arrays()
        p = Plan(self.entries, (), self.carried, self.parity, self.reductions, self.pending,
                 self.copies, done, self.flags, list(self.fn.scratch.items()))

        def resolve(ops):
            return tuple(op if isinstance(op, int) else (op[0], p.word(*op[1]), resolve(op[2]))
                         for op in ops)

        p.program = resolve(self.ops)
        return p

    # -- helpers ---------------------------------------------------------------------
    def var(self, what, t):
        self.n += 1
        name = f"pyg_{what}{self.n}"
        self.carried.append((name, t))
        return name

    def target(self):
        """The statement list that appending goes to: the open entry, inside its guards."""
        if self.open is None:
            self.open, self.chain, self.effects = Launch([]), [], False
            self.reading = False
        while len(self.chain) < len(self.guards):
            node = ir.If(self.guards[len(self.chain)], [], [])
            (self.chain[-1].body if self.chain else self.open.body).append(node)
            self.chain.append(node)
        return self.chain[-1].body if self.chain else self.open.body

    def add(self, s):
        self.target().append(s)
        self.effects = self.effects or stores([s], self.fn.sizes)
        self.reading = self.reading or not is_gang_loop(s) and reads([s], self.fn.sizes)
        self.open.levels |= {lv for n in ir.walk([s]) if isinstance(n, ir.ParLoop)
                             for lv in n.levels}

    def unguarded(self, name, value, t):
        """``name = value`` where the guards hold, ``name = 0`` elsewhere."""
        cond = None
        for g in self.guards:
            cond = g if cond is None else ir.Logical("&&", cond, g, type=T.BOOL)
        if cond is not None:
            value = ir.Select(cond, value, ir.Const(0, type=t), type=t)
        self.target()
        self.open.body.append(ir.Assign(ir.Var(name, type=t), value, line=self.line))
        self.chain = []             # what follows re-opens the guards after it

    def cut(self, force=False):
        if self.open is not None and (self.open.body or force):
            self.ops.append(len(self.entries))
            self.entries.append(self.open)
            self.parity.append(self.area)
            self.area ^= 1
        self.open, self.chain = None, []

    # -- statements ------------------------------------------------------------------
    def seq(self, stmts):
        for s in stmts:
            if is_gang_loop(s):
                if self.effects or self.reading and stores([s], self.fn.sizes):
                    self.cut()
                self.add(s)
                scalars = [r for r in s.reductions if isinstance(r.type, T.Scalar)]
                if scalars:
                    self.reductions += [(s, r) for r in scalars]
                    self.pending[id(s)] = self.var("pend", T.INT64)
                self.cut()
                if len(scalars) < len(s.reductions):     # array copies: summed at once
                    self.copies[id(s)] = self.var("items", T.INT64)
                    self.open = Launch([], {"gang", "worker", "vector"}, combine=s)
                    self.cut(force=True)
            elif isinstance(s, ir.If) and has_gang_loop([s]):
                flag = self.var("if", T.BOOL)
                self.add(ir.Assign(ir.Var(flag, type=T.BOOL), s.cond, line=s.line))
                f = ir.Var(flag, type=T.BOOL)
                for cond, body in ((f, s.body), (ir.Unary("!", f, type=T.BOOL), s.orelse)):
                    if body:
                        self.guards.append(cond)
                        self.chain = self.chain[:len(self.guards) - 1]
                        self.seq(body)
                        self.guards.pop()
                        self.chain = self.chain[:len(self.guards)]
            elif isinstance(s, (ir.For, ir.While)) and has_gang_loop([s]):
                self.loop(s)
            else:
                self.add(s)

    def loop(self, s):
        """A sequential loop around a cut: a loop of launches."""
        i64, b = T.INT64, T.BOOL
        self.line = s.line
        found = jumps(s.body)
        brk = self.var("brk", b) if "break" in found else None
        cnt = self.var("cnt", b) if "continue" in found else None
        body = guard_jumps(s.body, brk, cnt)
        head, tail = [], []
        if cnt:
            head.append(_set(cnt, ir.Const(False, type=b)))
        if brk:
            self.add(ir.Assign(ir.Var(brk, type=b), ir.Const(False, type=b), line=s.line))
        if isinstance(s, ir.For):
            i, n = self.var("i", i64), self.var("n", i64)
            self.add(ir.Assign(ir.Var(i, type=i64), s.start, line=s.line))
            self.unguarded(n, _trip(s.start, s.stop, s.step), i64)
            head = [_set(s.var, ir.Var(i, type=i64), i64),
                    _set(i, ir.BinOp("+", ir.Var(i, type=i64), s.step, type=i64), i64),
                    _set(n, ir.BinOp("-", ir.Var(n, type=i64), ir.Const(1, type=i64),
                                     type=i64), i64)] + head
            more = ir.Compare(">", ir.Var(n, type=i64), ir.Const(0, type=i64), type=b)
        else:
            more = s.cond
        kind, word = "repeat", n if isinstance(s, ir.For) else None
        if brk or isinstance(s, ir.While):
            kind, word = "while", self.var("go", b)
            self.unguarded(word, more, b)
            tail.append(_set(word, more if brk is None else ir.Logical(
                "&&", ir.Unary("!", ir.Var(brk, type=b), type=b), more, type=b)))
            self.flags.append(word)
        for st in head + tail:
            st.line = s.line
        self.cut()
        before = self.entries[-1] if self.entries else None   # sets the loop's words
        outer_ops, self.ops = self.ops, []
        area = self.area                             # where the plugin reads the word
        outer_guards, self.guards = self.guards, []  # the loop runs only where they hold
        self.seq(head + body + tail)
        self.cut()
        if self.area != area and kind == "repeat" and not cnt and twice_ok(body, self.ops, self.fn):
            word = self.twice(head + body + tail, n, before)
        elif self.area != area:                      # an even number of entries a round
            self.open = Launch([])
            self.cut(force=True)
        self.guards = outer_guards
        body_ops, self.ops = self.ops, outer_ops
        self.ops.append((kind, (word, area), tuple(body_ops)))

    def twice(self, stmts, n, before):
        """A round of an odd number of entries once more, its areas swapped, so that a
        round has an even number without an empty entry: the second copy runs under a
        flag that an iteration is left (``n`` > 0), and the loop repeats ``(n + 1) / 2``
        times; the word of that count (set in ``before``, after ``n``)."""
        i64, b = T.INT64, T.BOOL
        half = self.var("half", i64)
        count = ir.BinOp("/", ir.BinOp("+", ir.Var(n, type=i64), ir.Const(1, type=i64),
                                       type=i64), ir.Const(2, type=i64), type=i64)
        before.body.append(ir.Assign(ir.Var(half, type=i64), count, line=self.line))
        left = self.var("left", b)
        self.add(ir.Assign(ir.Var(left, type=b), ir.Compare(
            ">", ir.Var(n, type=i64), ir.Const(0, type=i64), type=b), line=self.line))
        self.guards.append(ir.Var(left, type=b))
        self.seq(copy.deepcopy(stmts))
        self.guards.pop()
        self.cut()
        return half

    def check_arrays(self):
        """A private or team-shared array outside parallel loops lives in one launch."""
        seen, top = {}, _top_arrays(self.fn)
        for k, e in enumerate(self.entries):
            for n in ir.walk(e.body):
                if isinstance(n, (ir.ArrayRef, ir.ArrayInit)) and n.name in top:
                    if seen.setdefault(n.name, k) != k:
                        raise CompileError(f"the array {n.name!r} is created outside the "
                                           f"parallel loops and used on both sides of a "
                                           f"gang loop ({self.fn.pyname}); create it inside "
                                           f"the loop that uses it", self.fn.file,
                                           self.fn.decl_lines.get(n.name, self.fn.line))


def twice_ok(body, ops, fn) -> bool:
    """Whether a loop's round of entries ``ops`` can run twice as copies (`twice`): no
    loop of launches in it, and nothing in its statements that the plan or the emitter
    keeps one of per kernel (reductions, helpers, returns, arrays made outside the
    parallel loops)."""
    if not all(isinstance(op, int) for op in ops):
        return False
    top = _top_arrays(fn)
    for n in ir.walk(body):
        if isinstance(n, ir.ParLoop) and n.reductions or isinstance(
                n, (ir.HelperCall, ir.Return, ir.ArrayInit)):
            return False
        if isinstance(n, ir.ArrayRef) and n.name in top:
            return False
    return True


def _top_arrays(fn) -> set:
    """The names of the arrays a kernel makes outside its parallel loops (not those in
    the global scratch, which every launch sees)."""
    return {c for c, t in fn.decls if isinstance(t, T.Array) and c not in fn.scratch}


def _set(name, value, t=T.BOOL):
    return ir.Assign(ir.Var(name, type=t), value)


def _trip(start, stop, step):
    """The iteration count of range(start, stop, step) as an int64 expression."""
    i64 = T.INT64

    def b(op, x, y):
        return ir.BinOp(op, x, y, type=i64)

    def cmp(op, x, y):
        return ir.Compare(op, x, y, type=T.BOOL)

    zero, one = ir.Const(0, type=i64), ir.Const(1, type=i64)
    up = ir.Select(cmp(">", stop, start),
                   b("/", b("-", b("+", b("-", stop, start), step), one), step), zero, type=i64)
    down = ir.Select(cmp("<", stop, start),
                     b("/", b("-", b("-", b("-", start, stop), step), one),
                       ir.Unary("-", step, type=i64)), zero, type=i64)
    if isinstance(step, ir.Const):
        return up if step.value > 0 else down
    return ir.Select(cmp(">", step, zero), up, down, type=i64)


def jumps(stmts) -> set:
    """The "break" and "continue" of this loop level (not those of nested loops)."""
    out = set()
    for s in stmts:
        if isinstance(s, ir.Break):
            out.add("break")
        elif isinstance(s, ir.Continue):
            out.add("continue")
        elif isinstance(s, ir.If):
            out |= jumps(s.body) | jumps(s.orelse)
    return out


def guard_jumps(stmts, brk, cnt):
    """Statements without jumps: ``break`` and ``continue`` of this level set the flag
    named ``brk`` or ``cnt`` (an iteration-private bool), and what would follow them
    runs under ``if`` neither flag is set."""
    if not (brk or cnt):
        return stmts
    flags = [ir.Var(f, type=T.BOOL) for f in (brk, cnt) if f]
    stop = flags[0] if len(flags) == 1 else ir.Logical("||", *flags, type=T.BOOL)
    go_on = ir.Unary("!", stop, type=T.BOOL)
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, (ir.Break, ir.Continue)):
            out.append(ir.Assign(ir.Var(brk if isinstance(s, ir.Break) else cnt, type=T.BOOL),
                                 ir.Const(True, type=T.BOOL), line=s.line))
            return out
        if isinstance(s, ir.If) and jumps([s]):
            out.append(ir.If(s.cond, guard_jumps(s.body, brk, cnt),
                             guard_jumps(s.orelse, brk, cnt), line=s.line))
            rest = guard_jumps(stmts[k + 1:], brk, cnt)
            if rest:
                out.append(ir.If(go_on, rest, [], line=rest[0].line))
            return out
        out.append(s)
    return out
