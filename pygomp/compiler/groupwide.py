"""The "group-wide barrier" strategy of the work-group lowering: every barrier is
reached by the whole group (OpenCL's work-groups).

A partitioned loop gives each participant a contiguous block of iterations where the
plugin defines the dialect's ``cpu_blocks`` macro (CPUs) and a strided share elsewhere.
A loop whose body holds barriers or nested loops runs the same number of rounds in every
work-item (an ``active`` flag guards the tail), so every barrier is reached by the whole
group; a sequential ``for`` or ``while`` around barriers in it runs as many rounds as
the group's longest (a group-wide maximum of the trip counts, or of "still running"
each round; none for a ``for`` whose bounds are the same in every work-item of the
group, see `varying`).

Reductions: INIT declares the level's copy; the FINI calls of a loop become one
all-reduce through team-local memory (two barriers, whatever the number of reductions)
for the vector and worker levels, and one partial per work-group in global scratch for the
gang level, which the next launch combines (a gang loop ends its launch: see
`pygomp.compiler.steps`).  An array reduction's copies are summed by the whole group
(`WorkGroupDialect.finish_array`).  Where the plugin defines ``single_items`` (groups of
one work-item, CPUs) trees are plain combines and a vector-level reduction loop keeps
LANES interleaved copies so the compiler can vectorize it.  A non-rectangular collapsed
loop walks its contiguous block row by row on CPUs.
"""
from __future__ import annotations

from . import ir, steps, vectypes
from . import types as T
from .emit import rectangular
from .workgroup import LEVELS, WorkGroupDialect, syncs

LANES = 8          # reduction lanes of one work-item on CPUs (see _lanes)


class GroupWide(WorkGroupDialect):
    """The hooks `iterate`, `guarded`, `fini`, `barriers_around` and `joins` of
    `WorkGroupDialect`, for a dialect whose barriers are all group-wide."""
    blocked_sums = True         # CPUs: each work-item a contiguous block
    cpu_blocks = ""             # a macro the plugin defines on CPUs (contiguous blocks)
    single_items = ""           # a macro it defines for groups of one work-item
    vector_types = False        # it spells vector types (`vectypes`: the hooks below)
    vector_blocks = ""          # a macro it defines where blocks run in vector types

    def vector_type(self, t, n):
        raise NotImplementedError

    def vector_load(self, n, address):
        raise NotImplementedError

    def vector_store(self, n, value, address):
        raise NotImplementedError

    def vector_convert(self, t, n, text):
        raise NotImplementedError

    def tree_slots(self, fn, plan):
        return 2 * tree_words(fn)

    def _either(self, em, macro, special, general):
        """``special()`` where the plugin defines ``macro``, else ``general()``."""
        if macro:
            em.line(f"#ifdef {macro}")
            special()
            em.line("#else")
        general()
        if macro:
            em.line("#endif")

    def joins(self, em, loop):
        """The whole group sums an array reduction's copies."""
        return ("worker", "vector"), "0", self.block_item, self.block_size, self.barrier

    def barriers_around(self, em, loop):
        """Before a loop nested in another, unless a gang loop; after a loop inside a
        gang whose reduction tree (barriers of its own) does not end it."""
        return (bool(em.state.part) and loop.levels != ("gang",),
                "gang" not in loop.levels and not loop.fini)

    def iterate(self, em, loop, u, me, trips):
        """A contiguous block of iterations per participant on CPUs, every
        ``pyg_P<u>``-th elsewhere; every participant runs the same rounds (``pyg_act``
        guards the tail) when the body holds barriers."""
        tot, P, k = f"pyg_tot{u}", f"pyg_P{u}", f"pyg_k{u}"
        i64 = self.type_name(T.INT64)
        lv = loop.levels

        def blocks():
            em.line(f"const {i64} pyg_per{u} = ({tot} + {P} - 1) / {P};")
            em.line(f"const {i64} pyg_lo{u} = ({me}) * pyg_per{u}, pyg_st{u} = 1;")
            em.line(f"const {i64} pyg_hi{u} = min({tot}, pyg_lo{u} + pyg_per{u});")

        def strides():
            em.line(f"const {i64} pyg_per{u} = ({tot} + {P} - 1) / {P};")
            em.line(f"const {i64} pyg_lo{u} = {me}, pyg_st{u} = {P}, pyg_hi{u} = {tot};")
        self._either(em, self.cpu_blocks, blocks, strides)
        if syncs(loop.body) and lv != ("gang",):     # uniform
            act = f"pyg_act{u}"
            em.line(f"for ({i64} pyg_j{u} = 0; pyg_j{u} < pyg_per{u}; ++pyg_j{u}) {{")
            with em.indent():
                em.line(f"const {i64} {k} = pyg_lo{u} + pyg_j{u} * pyg_st{u};")
                em.line(f"const int {act} = {k} < pyg_hi{u};")
                self._body(em, loop, k, trips, act)
            em.line("}")
            return

        def shares():
            em.line(f"for ({i64} {k} = pyg_lo{u}; {k} < pyg_hi{u}; {k} += pyg_st{u}) {{")
            with em.indent():
                self._body(em, loop, k, trips, None)
            em.line("}")
        if not rectangular(loop):           # a contiguous block: row by row
            self._either(em, self.cpu_blocks, lambda: em.rows(
                loop, f"pyg_lo{u}", f"pyg_hi{u}",
                lambda: (em.decls(loop.decls), em.stmts(loop.body))), shares)
        elif "vector" in lv and _scalars(loop):
            self._either(em, self.single_items,
                         lambda: self._lanes(em, loop, u, k, trips), shares)
        elif n := vectypes.lanes(em, loop):     # elementwise: in vector types on CPUs
            self._either(em, self.vector_blocks, lambda: vectypes.block(
                em, loop, n, k, f"pyg_lo{u}", f"pyg_hi{u}",
                lambda: self._body(em, loop, k, trips, None)), shares)
        else:
            shares()

    def _lanes(self, em, loop, u, k, trips):
        """A reduction loop in one work-item: LANES interleaved copies of the reduction
        variables (so the compiler can use SIMD without reassociating), then the rest."""
        n = LANES
        for r in _scalars(loop):
            c = self.type_name(r.type)
            ident = self.identity(r.op, r.type)
            em.line(f"{c} {r.local}_l[{n}] = {{{', '.join([ident] * n)}}};")
        m, i64 = f"pyg_m{u}", self.type_name(T.INT64)
        em.line(f"{i64} {m} = pyg_lo{u};")
        em.line(f"for (; {m} + {n} <= pyg_hi{u}; {m} += {n}) {{")
        with em.indent():
            em.line(f"for (int pyg_l{u} = 0; pyg_l{u} < {n}; ++pyg_l{u}) {{")
            with em.indent():
                em.line(f"const {i64} {k} = {m} + pyg_l{u};")
                for r in _scalars(loop):
                    em.line(f"#define {r.local} {r.local}_l[pyg_l{u}]")
                self._body(em, loop, k, trips, None)
                for r in _scalars(loop):
                    em.line(f"#undef {r.local}")
            em.line("}")
        em.line("}")
        em.line(f"for ({i64} {k} = {m}; {k} < pyg_hi{u}; ++{k}) {{")
        with em.indent():
            self._body(em, loop, k, trips, None)
        em.line("}")
        for r in _scalars(loop):
            em.line(f"for (int pyg_l{u} = 0; pyg_l{u} < {n}; ++pyg_l{u})")
            em.line(f"    {r.local} = {em.combine(r.op, r.type, r.local, f'{r.local}_l[pyg_l{u}]')};")

    def _body(self, em, loop, k, trips, act):
        st = em.state
        saved = st.active
        st.active = act
        for s in em.dim_values(loop, k, trips):
            em.line(s)
        em.decls(loop.decls)
        self.guarded(em, loop.body, act)
        st.active = saved

    def guarded(self, em, stmts, act):
        """Statements run by every work-item of a uniform loop or entry, doing work only
        where ``act`` (None: everywhere): a statement without barriers is skipped, one
        with barriers (nested loops) runs empty, an ``if`` around barriers is predicated
        and a ``for`` runs its trips with its body guarded, so that every work-item
        reaches them.  (PoCL's work-groups cannot take a barrier under an ``if`` either,
        even a uniform one.)"""
        st, act = em.state, act or "1"
        for s in stmts:
            if not syncs([s]):
                if act == "1":
                    em.stmt(s)
                    continue
                em.line(f"if ({act}) {{")
                with em.indent():
                    em.stmt(s)
                em.line("}")
            elif isinstance(s, ir.If):
                em.at(s.line)
                c = f"pyg_c{em.uid()}"
                em.line(f"const int {c} = ({act}) && ({em.expr(s.cond)});")
                self.guarded(em, s.body, c)
                if s.orelse:
                    e = f"pyg_c{em.uid()}"
                    em.line(f"const int {e} = ({act}) && !{c};")
                    self.guarded(em, s.orelse, e)
            elif isinstance(s, ir.For):
                em.at(s.line)
                self._group_for(em, s, act)
            elif isinstance(s, ir.While):
                em.at(s.line)
                self._group_while(em, s, act)
            else:
                saved, st.active = st.active, act
                em.stmt(s)
                st.active = saved

    def _group_max(self, em, mine, out):
        """``out`` = the largest ``mine`` of the work-group (two barriers)."""
        em.line(f"{out} = 0;")
        self._tree(em, [(out, mine, "max", T.INT64)], "0", self.block_item,
                   self.block_size, "1")

    def _jump_flags(self, em, body, u):
        """The body with its ``break`` and ``continue`` turned into flags (a work-item
        that jumps must still reach the barriers of the rounds that follow)."""
        found = steps.jumps(body)
        brk = f"pyg_brk{u}" if "break" in found else None
        cnt = f"pyg_cnt{u}" if "continue" in found else None
        return brk, cnt, steps.guard_jumps(body, brk, cnt)

    def _group_for(self, em, s, act):
        """A sequential ``for`` around barriers: its trip count may differ between the
        work-items, so it runs the group's largest, the variable and body guarded.
        Where every work-item runs it with bounds of the same values (`varying`), its
        own trip count is the group's: no group-wide maximum (two barriers), and its body
        runs unguarded, so the loops in it may be uniform too."""
        u, i64 = em.uid(), self.type_name(T.INT64)
        start, stop, step = (f"pyg_f{u}_{x}" for x in ("start", "stop", "step"))
        for name, e in ((start, s.start), (stop, s.stop), (step, s.step)):
            em.line(f"const {i64} {name} = ({act}) ? ({i64})({em.expr(e)}) : 0;")
        mine, t = f"pyg_trips{u}", f"pyg_t{u}"
        em.line(f"const {i64} {mine} = {step} > 0 ? ({stop} > {start} ? ({stop} - {start} + "
                f"{step} - 1) / {step} : 0) : {step} < 0 ? ({stop} < {start} ? ({start} - "
                f"{stop} - {step} - 1) / (-{step}) : 0) : 0;")
        st = em.state
        if st.varying is None:
            st.varying = varying([e.body for e in st.plan.entries])
        same = act == "1" and not any(_varies(e, st.varying) for e in (s.start, s.stop, s.step))
        if same:
            em.line(f"const {i64} pyg_most{u} = {mine};")
        else:
            em.line(f"{i64} pyg_most{u};")
            self._group_max(em, mine, f"pyg_most{u}")
        brk, cnt, body = self._jump_flags(em, s.body, u)
        b = self.type_name(T.BOOL)
        if brk:
            em.line(f"{b} {brk} = 0;")
        em.line(f"for ({i64} {t} = 0; {t} < pyg_most{u}; ++{t}) {{")
        with em.indent():
            on = "1" if same and not brk else f"pyg_on{u}"    # every work-item runs it all
            if on != "1":
                em.line(f"const int {on} = {t} < {mine}{f' && !{brk}' if brk else ''};")
            if cnt:
                em.line(f"{b} {cnt} = 0;")
            em.line(f"if ({on}) {s.var} = {start} + {t} * {step};")
            self.guarded(em, body, on)
        em.line("}")

    def _group_while(self, em, s, act):
        """A ``while`` around barriers: rounds go on while any work-item of the group
        still runs (a group-wide check each round), the body guarded."""
        u, i64 = em.uid(), self.type_name(T.INT64)
        run = f"pyg_run{u}"
        brk, cnt, body = self._jump_flags(em, s.body, u)
        b = self.type_name(T.BOOL)
        if brk:
            em.line(f"{b} {brk} = 0;")
        em.line(f"int {run} = ({act}) && ({em.expr(s.cond)});")
        em.line(f"{i64} pyg_any{u};")
        self._group_max(em, run, f"pyg_any{u}")
        em.line(f"while (pyg_any{u}) {{")
        with em.indent():
            if cnt:
                em.line(f"{b} {cnt} = 0;")
            self.guarded(em, body, run)
            stop = f" && !{brk}" if brk else ""
            em.line(f"{run} = {run}{stop} && ({em.expr(s.cond)});")
            self._group_max(em, run, f"pyg_any{u}")
        em.line("}")

    # -- reductions ------------------------------------------------------------------
    def fini(self, em, loop):
        """The FINI calls of a loop together: the array reductions' copies summed
        (`finish_array`), then one tree for the scalars of each level."""
        if not loop.fini:
            return
        em.at(loop.line)
        for c in loop.fini:
            if isinstance(c.type, T.Array):
                self.finish_array(em, loop, c)
        by = {lv: [c for c in loop.fini if c.level == lv and isinstance(c.type, T.Scalar)]
              for lv in LEVELS}
        lid0, lid1 = self.level_id["vector"], self.level_id["worker"]
        V, W = self.level_count["vector"], self.level_count["worker"]
        if by["vector"] and by["worker"]:           # one tree over the whole group
            outer = {c.rid: c.outer for c in by["worker"]}
            items = [(outer[c.rid], c.local, c.op, c.type) for c in by["vector"]]
            self._tree(em, items, "0", f"{lid1} * {V} + {lid0}", f"{W} * {V}", "1")
        elif by["vector"]:
            items = [(c.outer, c.local, c.op, c.type) for c in by["vector"]]
            self._tree(em, items, f"{lid1} * {V}", lid0, V, "1")
        elif by["worker"]:
            items = [(c.outer, c.local, c.op, c.type) for c in by["worker"]]
            self._tree(em, items, "0", lid1, W, self.first(["vector"]))
        for c in by["gang"]:
            em.line(f"if ({self.group_leader()}) "
                    f"{self.partial(em, 'pyg_g', c.rid, c.type)} = {c.local};")

    def _tree(self, em, items, base, idx, n, writer):
        """`gather_tree`, or plain combines in single-item groups."""
        def combines():
            for outer, local, op, t in items:
                em.line(f"{outer} = {em.combine(op, t, outer, local)};")
        self._either(em, self.single_items, combines,
                     lambda: self.gather_tree(em, items, base, idx, n, writer))


def _scalars(loop):
    return [r for r in loop.reductions if isinstance(r.type, T.Scalar)]


def tree_words(fn) -> int:
    """The reductions a tree of the kernel combines at once (`gather_tree`)."""
    tree = 0
    for n in ir.walk(fn.body):
        if isinstance(n, ir.ParLoop) and n.levels != ("gang",):
            tree = max(tree, len(_scalars(n)) * max([r.type.words for r in _scalars(n)],
                                                    default=1))
        if isinstance(n, (ir.For, ir.While)) and syncs(n.body):
            tree = max(tree, 1)                # a group-wide trip count (`_group_for`)
    return tree


UNIFORM_BUILTINS = {"gang_id", "num_gangs", "num_workers", "vector_length"}


def varying(bodies):
    """The names whose values may differ between the work-items of one group in these
    entry bodies (every name, where a jump or an early return could leave some
    work-items behind).  A name is the same in the whole group where every assignment
    to it is made by every work-item (outside worker and vector loops, under conditions
    and loop bounds that are the same) from values that are."""
    last = {id(b[-1]) for b in bodies if b}
    nodes = list(ir.walk(bodies))
    if any(isinstance(n, (ir.Break, ir.Continue)) or isinstance(n, ir.Return)
           and id(n) not in last for n in nodes):
        return {n.name for n in nodes if isinstance(n, ir.Var)}
    out = set()

    def visit(stmts, same):
        for s in stmts:
            if isinstance(s, ir.Assign):
                if isinstance(s.target, ir.Var) and (not same or _varies(s.value, out)):
                    out.add(s.target.name)
            elif isinstance(s, ir.If):
                c = same and not _varies(s.cond, out)
                visit(s.body, c)
                visit(s.orelse, c)
            elif isinstance(s, ir.While):
                visit(s.body, same and not _varies(s.cond, out))
            elif isinstance(s, ir.For):
                c = same and not any(_varies(e, out) for e in (s.start, s.stop, s.step))
                if not c:
                    out.add(s.var)
                visit(s.body, c)
            elif isinstance(s, ir.ParLoop):
                c = same and s.levels == ("gang",) and not any(
                    _varies(e, out) for d in s.dims for e in (d.start, d.stop, d.step))
                if not c:
                    out.update(d.var for d in s.dims)
                out.update(x for r in s.setup + s.init + s.fini + s.teardown  # reductions
                           for x in (r.outer, r.local))
                visit(s.body, c)
    while True:
        n = len(out)
        for b in bodies:
            visit(b, True)
        if len(out) == n:
            return out


def _varies(e, varying) -> bool:
    """Whether expression ``e`` may have different values in the work-items of a group:
    it reads memory, a helper's result, a work-item's id or a varying name."""
    for n in ir.walk(e):
        if isinstance(n, (ir.Index, ir.View, ir.HelperCall, ir.Atomic)) or \
                isinstance(n, ir.Builtin) and n.name not in UNIFORM_BUILTINS or \
                isinstance(n, ir.Var) and n.name in varying:
            return True
    return False
