"""One lowering for work-group targets (OpenCL C, CUDA C, and any like them).

A gang is a work-group (a CUDA block), a worker and a vector lane are the two axes of
its work-items.  Code outside a level's loops runs redundantly on that level (OpenACC's
gang-redundant, worker-single and vector-single modes): private values are computed by
every work-item, while stores, atomics and the kernel's result are done by one work-item
per level that did not partition them (`leader`, `writer`).

The kernel runs as the launches of `steps.plan` (an entry ``NAME__e<k>`` per launch when
there are several).  An entry loads the carried scalars of its area from the global
scratch, finishes the gang reductions the launch before left (one partial per gang, in
the scratch), sums the copies of a gang loop's array reductions when it is that loop's
summing launch, runs its statements (none after a ``return``) and lets one work-item
store the carried scalars into the other area.  Private arrays sized at run time and
array reduction copies live in the private scratch, one 8-byte word per element (two
for a complex128), a work-item's part after the previous one's.  The kernel's arguments are described once
by `pygomp.runtime.plugin.KernelInfo` and `argwords.arg_words`.

A partitioned loop (`loop`) counts its iterations, runs its reductions' SETUP and
INIT calls, lets each participant run its share (`iterate`), then the FINI calls
(`fini`), with barriers on the sides `barriers_around` says.

A strategy (a `WorkGroupDialect` subclass in the compiler: `groupwide.GroupWide`, every
barrier group-wide; `warps.WarpWorkers`, a worker is a warp) says how a participant
iterates (`iterate`), how a loop's FINI calls combine (`fini`), which work-items sum an
array reduction's copies (`joins`, for `finish_array`) and where barriers go.  A
dialect subclasses one strategy and gives the spelling: ids and sizes, the barrier,
the qualifiers of global and team-local memory, scratch words, atomics, the kernel's
head and prologue; and a few named choices:

- ``partials_together``: the work-items of a group read a gang loop's partials in turn
  and combine them with `halving_tree` (False: each reads them all);
- ``blocked_sums``: a work-item sums a contiguous block of an array reduction's
  elements (CPUs), else every n-th element (GPUs: coalesced);
- `guarded`: how statements run under a condition that must not hide barriers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import CompileError
from ..runtime.plugin import KernelInfo
from . import atomics, ir, onegroup, steps
from . import types as T
from .argwords import private_terms, word_kinds
from .dialect import Dialect
from .groupsums import GroupSums
from .loops import LEVELS
from .reductions import array_copies

SPACE_LEVELS = {"global": LEVELS, "local": LEVELS[1:], "private": ()}   # who stores once


@dataclass
class GroupState:
    """What the lowering keeps while it emits one kernel (``em.state``)."""
    plan: steps.Plan | None = None
    names: list = field(default_factory=list)       # entry names, one per launch
    slots: dict = field(default_factory=dict)       # reduction id -> its gang slot
    copies: set = field(default_factory=set)        # array reduction copies
    tree: int = 0                   # team-local tree words per work-item
    k: int = 0                      # the entry being emitted
    part: frozenset = frozenset()   # levels partitioned around the current code
    active: str | None = None       # the guard of a uniform loop's iteration
    team: list = field(default_factory=list)        # team-local declarations of an entry
    team_at: int = 0                # where they go in ``em.out``
    mine: dict = field(default_factory=dict)        # private array -> its first word
    stride: str = "0"               # private scratch words per work-item
    varying: object = None          # names that differ within a group (a dialect's own)
    like: object = None             # a variant's: the kernel's state (argument layout)


class WorkGroupDialect(GroupSums, Dialect):
    write_flags = True          # a helper stores into a caller's array as the caller would
    index32 = "int"             # GPUs take several instructions for 64-bit integer math
    partials_together = False
    blocked_sums = False
    any_group_size = False
    one_group = False           # a looping kernel also gets its one-work-group variant

    # -- spelling (every dialect sets these) -----------------------------------------
    level_id = level_count = {}     # per level: a participant's id, their number
    block_item = block_size = ""    # the flat id of a work-item in its group; their number
    grid_item = grid_size = ""      # the same over the whole launch
    launch_items = ""               # the work-items of a launch, as a gang loop counts them
    glob = ""                       # the qualifier of a pointer to global memory
    local = ""                      # the qualifier of a pointer to team-local memory
    team_space = ""                 # the qualifier of a team-local array

    def scratch_word(self, c: str, index) -> str:
        """The word ``index`` of the global scratch, as an lvalue of C type ``c``."""
        raise NotImplementedError

    def kernel_head(self, em, fn) -> str:
        """The line that opens entry ``em.entry`` (its parameters: the argument words,
        then the scratch buffers the kernel uses)."""
        raise NotImplementedError

    def prologue(self, em, fn) -> None:
        """Define the names of `argwords.arg_words` from the parameters, and ``pyg_g`` and
        ``pyg_G`` (the gang and the number of gangs)."""
        raise NotImplementedError

    def tree_slots(self, fn, plan) -> int:
        """Team-local tree words per work-item the kernel needs."""
        return 0

    def requires(self, fn) -> tuple:
        """`KernelInfo.requires` of a kernel."""
        return ()

    def atomic(self, em, s, target: str, value: str) -> str:
        """``target += value`` as an atomic statement (raise where the type has none)."""
        raise NotImplementedError

    def guarded(self, em, stmts, cond) -> None:
        """The statements, run only where ``cond`` holds (None: everywhere)."""
        if cond is None:
            em.stmts(stmts)
            return
        em.line(f"if ({cond}) {{")
        with em.indent():
            em.stmts(stmts)
        em.line("}")

    # -- the entries --------------------------------------------------------------------
    def new_state(self, fn, like=None):
        return GroupState(like=like)

    def variants(self, em, fn):
        """A looping kernel's one-work-group variant (`onegroup`), where the dialect
        has it; the kernel's plan, made to tell, stays in ``em.state`` for `entries`."""
        if not self.one_group:
            return []
        em.state.plan = steps.plan(fn)
        v = onegroup.variant(fn, em.state.plan.program)
        return [v] if v else []

    def joined(self, info, other):
        """The variant's entry after the kernel's: ``one_group`` its index."""
        return info.replace(entries=info.entries + other.entries,
                            levels=info.levels + other.levels,
                            one_group=len(info.entries))

    def has_scratch(self, st) -> bool:
        """Whether the entries take the global scratch (a variant as its kernel does)."""
        plan = (st.like or st).plan
        return bool(plan.scratch_words or plan.gang_words)

    def helper_open(self, em, fn, params):
        em.state.part = frozenset(LEVELS)    # its own arrays: each work-item's
        em.state.active = None
        super().helper_open(em, fn, params)

    def entries(self, em, fn):
        """One entry per launch of `steps.plan` (gang loops end their launch)."""
        st = em.state
        st.plan = plan = st.plan or steps.plan(fn)
        st.slots = {r.rid: plan.offset(r) for _, r in plan.reductions}
        st.names = [f"{fn.name}__e{k}" if len(plan.entries) > 1 else fn.name
                    for k in range(len(plan.entries))]
        st.tree = self.tree_slots(fn, plan)
        if st.like is not None:                 # the kernel's arguments, the same tree
            assert st.tree <= st.like.tree, (st.tree, st.like.tree)
            st.tree = st.like.tree
        st.copies = array_copies(fn)
        return list(zip(st.names, (e.body for e in plan.entries)))

    def kernel_open(self, em, fn):
        st = em.state
        st.k, st.part, st.active, st.team = st.names.index(em.entry), frozenset(), None, []
        em.line(self.kernel_head(em, fn))
        em.line("{")
        with em.indent():
            self.prologue(em, fn)
            if fn.sizes:
                st.mine, st.stride = em.private_layout()
                em.line(f"{self.glob}{self.type_name(T.UINT64)} *pyg_mine = pyg_priv + "
                        f"({self.grid_item}) * ({st.stride});")
        st.team_at = len(em.out)            # team-local declarations go here

    def kernel_body(self, em, fn, body):
        """Load the carried scalars, finish the gang reductions of the launch before,
        sum array reduction copies, then the statements (none after a return)."""
        st, plan = em.state, em.state.plan
        k = st.k
        own = {n for n, _ in fn.decls}
        for name, t in plan.carried:             # the scalars the cuts added
            if name not in own:
                em.line(f"{self.type_name(t)} {name} = {self.const(0, t)};")
        if k:
            for name, t in plan.carried:
                em.line(f"{name} = {self.word(em, name, plan.parity[k], t)};")
            self._finish_gang_reductions(em)
        if plan.entries[k].combine is not None:
            self._sum_copies(em, plan.entries[k].combine)
        if plan.done and k:
            for name in plan.flags:
                em.line(f"if ({plan.done}) {name} = 0;")
        self.guarded(em, body, f"!{plan.done}" if plan.done and k else None)

    def kernel_close(self, em, fn):
        st, plan = em.state, em.state.plan
        em.out[st.team_at:st.team_at] = ["    " + d for d in st.team]
        if plan.carried and plan.program[-1] != st.k:     # not the last launch
            with em.indent():
                area = 1 - plan.parity[st.k]
                em.line(f"if (pyg_g == 0 && {self.group_leader()}) {{")
                with em.indent():
                    for name, t in plan.carried:
                        em.line(f"{self.word(em, name, area, t)} = {name};")
                em.line("}")
        em.line("}")

    def kernel_return(self, em, fn, value):
        plan = em.state.plan
        lead = self.leader(em)
        if value is not None:
            em.line(f"if ({lead}) *{fn.ret_param} = {value};")
        if plan.done:                           # the launches after this one do nothing
            area = 1 - plan.parity[em.state.k]
            em.line(f"if ({lead}) {{")
            with em.indent():
                for name in [plan.done] + plan.flags:
                    em.line(f"{self.word(em, name, area, T.BOOL)} = {int(name == plan.done)};")
            em.line("}")
        em.line("return;")

    # -- the global scratch -------------------------------------------------------------
    def word(self, em, name, area, t) -> str:
        """A carried scalar's word in one area of the global scratch."""
        return self.scratch_word(self.type_name(t), em.state.plan.word(name, area))

    def partial(self, em, gang, rid, t) -> str:
        """A gang's partial of a gang reduction in the global scratch."""
        plan = em.state.plan
        return self.scratch_word(self.type_name(t), f"{plan.scratch_words} + {gang} * "
                                                    f"{plan.gang_words} + {em.state.slots[rid]}")

    def end_gang_loop(self, em, loop) -> None:
        """After a gang loop: the words that tell the next launch to combine its
        partials (the number of gangs) or to sum its array reduction copies."""
        plan = em.state.plan
        if id(loop) in plan.pending:
            em.line(f"{plan.pending[id(loop)]} = pyg_G;")
        if id(loop) in plan.copies:
            em.line(f"{plan.copies[id(loop)]} = {self.launch_items};")

    # -- partitioned loops ---------------------------------------------------------------
    def loop(self, em, loop):
        """A partitioned loop: its trip counts (``pyg_tot<u>`` iterations for
        ``pyg_P<u>`` participants), its reductions' calls, the iterations of each
        participant (`iterate`), and the barriers around it (`barriers_around`)."""
        st = em.state
        outer_part, outer_active = st.part, st.active
        u = em.uid()
        trips = [f"pyg_n{k}_{u}" for k in range(len(loop.dims))]
        before, after = self.barriers_around(em, loop)
        if before:
            self.loop_barrier(em)                # what the redundant code stored
        em.line("{")
        with em.indent():
            lines, count = em.counts(loop, trips, outer_active)
            for text in lines:
                em.line(text)
            for c in loop.setup + loop.init:
                em.stmt(c)
            me, n = self.participants(loop.levels)
            em.line(f"const {self.type_name(T.INT64)} pyg_tot{u} = {count}, pyg_P{u} = {n};")
            st.part = outer_part | set(loop.levels)
            self.iterate(em, loop, u, me, trips)
            st.part = outer_part
            self.fini(em, loop)
            for c in loop.teardown:
                em.stmt(c)
            self.end_gang_loop(em, loop)
        em.line("}")
        if after:
            self.loop_barrier(em)                # the loop's stores, for what follows

    def participants(self, levels) -> tuple:
        """(the flat id of a participant over ``levels``, outer first; their number)."""
        me, n = "0", "1"
        for lv in levels:
            i, c = self.level_id[lv], self.level_count[lv]
            me = i if me == "0" else f"({me}) * {c} + {i}"
            n = c if n == "1" else f"{n} * {c}"
        return me, n

    def barriers_around(self, em, loop) -> tuple:
        """(before, after): whether a barrier goes on each side of a partitioned loop
        (by default around every loop inside a gang)."""
        inner = "gang" not in loop.levels
        return inner, inner

    def loop_barrier(self, em) -> None:
        """The barrier on either side of a loop (a dialect may order fewer work-items)."""
        self.barrier(em)

    def iterate(self, em, loop, u, me, trips) -> None:
        """The iterations participant ``me`` runs of the ``pyg_tot<u>`` (``pyg_P<u>``
        participants): each defines the loop variables (`Emitter.dim_values`), the
        loop's declarations and its body."""
        raise NotImplementedError

    def fini(self, em, loop) -> None:
        """The FINI calls of a loop (``loop.fini``): combine each level's copies into
        the enclosing ones."""
        raise NotImplementedError

    def reduction(self, em, call):
        """INIT declares a level's copy (an array reduction's in the private scratch,
        one per work-item); FINI calls are lowered per loop (`fini`); SETUP and TEARDOWN
        have nothing to do."""
        if call.phase != "INIT":
            return
        t = call.type
        if isinstance(t, T.Array):
            self.private_array(em, call.local, t)
            em.line(self.fill(em, call.local, t, call.op))
        else:
            em.line(f"{self.type_name(t)} {call.local} = {self.identity(call.op, t)};")

    # -- who stores -----------------------------------------------------------------------
    def first(self, levels) -> str:
        """The condition that a work-item is the first on each of ``levels`` ("": none)."""
        return " && ".join(f"{self.level_id[lv]} == 0" for lv in levels)

    def leader(self, em, levels=LEVELS) -> str:
        """The condition that picks one work-item among those that run the current code
        redundantly on ``levels``."""
        return self.first([lv for lv in levels if lv not in em.state.part]) or "1"

    def group_leader(self) -> str:
        """The first work-item of a group."""
        return self.first(("vector", "worker"))

    def space(self, em, arr) -> str:
        """An array's memory: a private array sized at run time is a work-item's own."""
        return "private" if arr.name in em.cur.sizes else arr.type.space

    def writer(self, em, arr):
        if arr.name in em.cur.written and not em.cur.is_kernel:     # the caller says
            return f"{arr.name}__w"
        if arr.name in em.state.copies:     # summed over the work-items: count once
            return self.leader(em, LEVELS[1:])
        return self.leader(em, SPACE_LEVELS[self.space(em, arr)])

    def store(self, em, s):
        text = f"{em.expr(s.target)} = {em.expr(s.value)};"
        cond = self.writer(em, s.target.array)
        em.line(text if cond == "1" else f"if ({cond}) {text}")

    def atomic_add(self, em, s):
        target, value = em.expr(s.target), em.expr(s.value)
        text = self.atomic(em, s, target, value)
        if self.space(em, s.target.array) == "private":
            text = f"{target} += {value};"
        cond = self.writer(em, s.target.array)
        em.line(text if cond == "1" else f"if ({cond}) {text}")

    def print(self, em, s):
        cond = self.leader(em)          # once, where work-items run the code redundantly
        if cond != "1":
            em.line(f"if ({cond})")
        super().print(em, s)

    def atomic_op(self, em, a, result):
        cond = self.writer(em, a.target.array)
        if cond != "1" and result is not None:
            where = "in a helper, whose caller picks the work-item that does it" \
                if cond.endswith("__w") else "where the work-items of a gang run the code " \
                "redundantly and one of them does it"
            raise CompileError(f"omp.atomic_{a.op}: its old value cannot be used {where}: "
                               f"call it as a statement, or capture it in a loop over "
                               f"workers or vector lanes", em.cur.file, em.cur.line)
        if cond != "1":
            em.line(f"if ({cond})")
        atomics.emit(em, a, result, plain=self.space(em, a.target.array) == "private")

    # -- arrays ----------------------------------------------------------------------------
    def array_decl(self, em, name, t):
        if name in em.cur.sizes:            # sized at run time: in the private scratch
            self.private_array(em, name, t)
            return
        if name in em.cur.scratch:          # the kernel's, in the global scratch
            c = f"{self.glob}{self.type_name(t.elem)} *"
            word = self.scratch_word(self.type_name(T.UINT64),
                                     em.state.plan.array_word(name))
            em.line(f"{c}{name} = ({c})&{word};")
            return
        decl = f"{self.type_name(t.elem)} {name}[{math.prod(t.shape)}];"
        if t.space == "local":              # at kernel scope
            decl = f"{self.team_space} {decl}"
            if decl not in em.state.team:
                em.state.team.append(decl)
        else:
            em.line(decl)

    def private_array(self, em, name, t):
        """A private array or reduction copy in the work-item's part of the scratch."""
        for k, e in enumerate(em.extents(name)):
            em.line(f"const {self.type_name(T.INT64)} {name}__s{k} = {e};")
        c = f"{self.glob}{self.type_name(t.elem)} *"
        em.line(f"{c}{name} = ({c})(pyg_mine + {em.state.mine[name]});")

    # -- the kernel contract ----------------------------------------------------------------
    def kernel_info(self, em, fn):
        """Entries, levels, scratch, program and requirements of the kernel."""
        st, plan = em.state, em.state.plan
        levels = []
        for k, e in enumerate(plan.entries):
            lv = set(e.levels)
            if k and plan.reductions and self.partials_together:   # lanes to read them
                lv.add("vector")
            levels.append("".join(x[0] for x in LEVELS if x in lv))
        program = plan.program if plan.program != tuple(range(len(plan.entries))) else ()
        return KernelInfo(fn.pyname, tuple(st.names), word_kinds(fn), tuple(levels),
                          scratch_bytes=8 * plan.scratch_words, gang_bytes=8 * plan.gang_words,
                          tree_bytes=8 * st.tree, private=private_terms(fn), program=program,
                          requires=self.requires(fn), any_group_size=self.any_group_size)


def syncs(body) -> bool:
    """Whether ``body`` has a barrier or a partitioned loop (helpers have neither: the
    front end allows them in kernels only)."""
    return any(isinstance(n, (ir.Barrier, ir.ParLoop)) for n in ir.walk(body))
