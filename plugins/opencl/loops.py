"""Loop and reduction lowering of the OpenCL dialect (a mixin of `OpenCLDialect`).

A partitioned loop gives each participant a contiguous block of iterations on CPUs
(``PYGOMP_DEVICE_CPU``) and a strided share elsewhere.  A loop whose body holds barriers
or nested loops runs the same number of rounds in every work-item (an ``active`` flag
guards the tail), so every barrier is reached by the whole group.

Reductions: INIT declares the level's copy; the FINI calls of a loop become one
all-reduce through ``__local`` scratch (two barriers, whatever the number of reductions)
for the vector and worker levels, and one partial a work-group for the gang level; then
the loop "joins": the last work-group to finish (an atomic counter) combines the
partials and goes on as gang 0 of 1, the others as a dead gang without work or stores.
With ``PYGOMP_SINGLE_ITEM_GROUPS`` (CPUs) trees are plain combines and a vector-level
reduction loop keeps LANES interleaved copies so the compiler can vectorize it.
"""
from __future__ import annotations

from pygomp.compiler import ir
from pygomp.compiler.emit import rectangular

ID = {"gang": "pyg_g", "worker": "(long)get_local_id(1)", "vector": "(long)get_local_id(0)"}
COUNT = {"gang": "pyg_G", "worker": "(long)get_local_size(1)",
         "vector": "(long)get_local_size(0)"}
LEVELS = ("gang", "worker", "vector")
LANES = 8          # reduction lanes of one work-item on CPUs (see _lanes)


def _has_sync(body) -> bool:
    return any(isinstance(n, (ir.Barrier, ir.ParLoop)) for n in ir.walk(body))


class LoopLowering:
    """Needs from the dialect: type_name, identity, barrier."""

    def loop(self, em, loop):
        st = em.state
        outer_part, outer_active = st["part"], st["active"]
        nested = bool(outer_part)
        u = em.uid()
        trips = [f"pyg_n{k}_{u}" for k in range(len(loop.dims))]
        lv = loop.levels
        sync = _has_sync(loop.body)
        if nested and lv != ("gang",):
            self.barrier(em)                     # what the redundant code stored
        em.line("{")
        with em.indent():
            lines, count = em.counts(loop, trips, outer_active)
            for text in lines:
                em.line(text)
            for c in loop.setup + loop.init:
                em.stmt(c)
            p = _flat(lv, ID)
            n = _flat(lv, COUNT)
            tot, P = f"pyg_tot{u}", f"pyg_P{u}"
            total = f"(pyg_g < pyg_G ? {count} : 0)"   # a dead gang: no work
            em.line(f"const long {tot} = {total}, {P} = {n};")
            em.line("#ifdef PYGOMP_DEVICE_CPU")
            em.line(f"const long pyg_per{u} = ({tot} + {P} - 1) / {P};")
            em.line(f"const long pyg_lo{u} = ({p}) * pyg_per{u}, pyg_st{u} = 1;")
            em.line(f"const long pyg_hi{u} = min({tot}, pyg_lo{u} + pyg_per{u});")
            em.line("#else")
            em.line(f"const long pyg_per{u} = ({tot} + {P} - 1) / {P};")
            em.line(f"const long pyg_lo{u} = {p}, pyg_st{u} = {P}, pyg_hi{u} = {tot};")
            em.line("#endif")
            k = f"pyg_k{u}"
            st["part"] = outer_part | set(lv)
            uniform = sync and lv != ("gang",)
            if uniform:
                act = f"pyg_act{u}"
                em.line(f"for (long pyg_j{u} = 0; pyg_j{u} < pyg_per{u}; ++pyg_j{u}) {{")
                with em.indent():
                    em.line(f"const long {k} = pyg_lo{u} + pyg_j{u} * pyg_st{u};")
                    em.line(f"const int {act} = {k} < pyg_hi{u};")
                    self._body(em, loop, k, trips, act)
                em.line("}")
            else:
                rect = rectangular(loop)
                lanes = "vector" in lv and loop.reductions and rect
                if lanes:
                    em.line("#ifdef PYGOMP_SINGLE_ITEM_GROUPS")
                    self._lanes(em, loop, u, k, trips)
                    em.line("#else")
                if not rect:                     # a contiguous block: row by row
                    em.line("#ifdef PYGOMP_DEVICE_CPU")
                    em.rows(loop, f"pyg_lo{u}", f"pyg_hi{u}",
                            lambda: (em.decls(loop.decls), em.stmts(loop.body)))
                    em.line("#else")
                em.line(f"for (long {k} = pyg_lo{u}; {k} < pyg_hi{u}; {k} += pyg_st{u}) {{")
                with em.indent():
                    self._body(em, loop, k, trips, None)
                em.line("}")
                if lanes or not rect:
                    em.line("#endif")
            st["part"] = outer_part
            if loop.fini:
                em.at(loop.line)
                self._fini(em, loop)
            for c in loop.teardown:
                em.stmt(c)
            if "gang" in lv and (loop.reductions or st["joins"].get(id(loop))):
                self._join(em, loop)
        em.line("}")
        if "gang" not in lv and not loop.fini:
            self.barrier(em)                     # the loop's stores, for what follows

    def _lanes(self, em, loop, u, k, trips):
        """A reduction loop in one work-item: LANES interleaved copies of the reduction
        variables (so the compiler can use SIMD without reassociating), then the rest."""
        n = LANES
        for r in loop.reductions:
            c = self.type_name(r.type)
            ident = self.identity(r.op, r.type)
            em.line(f"{c} {r.local}_l[{n}] = {{{', '.join([ident] * n)}}};")
        m = f"pyg_m{u}"
        em.line(f"long {m} = pyg_lo{u};")
        em.line(f"for (; {m} + {n} <= pyg_hi{u}; {m} += {n}) {{")
        with em.indent():
            em.line(f"for (int pyg_l{u} = 0; pyg_l{u} < {n}; ++pyg_l{u}) {{")
            with em.indent():
                em.line(f"const long {k} = {m} + pyg_l{u};")
                for r in loop.reductions:
                    em.line(f"#define {r.local} {r.local}_l[pyg_l{u}]")
                self._body(em, loop, k, trips, None)
                for r in loop.reductions:
                    em.line(f"#undef {r.local}")
            em.line("}")
        em.line("}")
        em.line(f"for (long {k} = {m}; {k} < pyg_hi{u}; ++{k}) {{")
        with em.indent():
            self._body(em, loop, k, trips, None)
        em.line("}")
        for r in loop.reductions:
            em.line(f"for (int pyg_l{u} = 0; pyg_l{u} < {n}; ++pyg_l{u})")
            em.line(f"    {r.local} = {em.combine(r.op, r.type, r.local, f'{r.local}_l[pyg_l{u}]')};")

    def _body(self, em, loop, k, trips, act):
        st = em.state
        saved = st["active"]
        st["active"] = act
        for s in em.dim_values(loop, k, trips):
            em.line(s)
        em.decls(loop.decls)
        if act is None:
            em.stmts(loop.body)
        else:
            self._guarded(em, loop.body, act)
        st["active"] = saved

    def _guarded(self, em, stmts, act):
        """Statements run by every work-item of a uniform loop, doing work only where
        ``act``: a statement without barriers is skipped, one with barriers (nested
        loops) runs empty, and an ``if`` around barriers is predicated so that every
        work-item reaches them."""
        st = em.state
        for s in stmts:
            if not _has_sync([s]):
                em.line(f"if ({act}) {{")
                with em.indent():
                    em.stmt(s)
                em.line("}")
            elif isinstance(s, ir.If):
                em.at(s.line)
                c = f"pyg_c{em.uid()}"
                em.line(f"const int {c} = ({act}) && ({em.expr(s.cond)});")
                self._guarded(em, s.body, c)
                if s.orelse:
                    e = f"pyg_c{em.uid()}"
                    em.line(f"const int {e} = ({act}) && !{c};")
                    self._guarded(em, s.orelse, e)
            else:
                saved, st["active"] = st["active"], act
                em.stmt(s)
                st["active"] = saved

    # -- reductions ------------------------------------------------------------------
    def reduction(self, em, call):
        """INIT declares a level's copy; SETUP and TEARDOWN have nothing to do; the FINI
        calls of a loop are lowered together by `_fini` (one tree for all of them)."""
        if call.phase == "INIT":
            em.line(f"{self.type_name(call.type)} {call.local} = "
                    f"{self.identity(call.op, call.type)};")

    def _fini(self, em, loop):
        by = {lv: [c for c in loop.fini if c.level == lv] for lv in LEVELS}
        lid0, lid1 = "(long)get_local_id(0)", "(long)get_local_id(1)"
        V, W = "(long)get_local_size(0)", "(long)get_local_size(1)"
        if by["vector"] and by["worker"]:           # one tree over the whole group
            outer = {c.rid: c.outer for c in by["worker"]}
            items = [(outer[c.rid], c.local, c.op, c.type) for c in by["vector"]]
            self._tree(em, items, "0", f"{lid1} * {V} + {lid0}", f"{W} * {V}", "1")
        elif by["vector"]:
            items = [(c.outer, c.local, c.op, c.type) for c in by["vector"]]
            self._tree(em, items, f"{lid1} * {V}", lid0, V, "1")
        elif by["worker"]:
            items = [(c.outer, c.local, c.op, c.type) for c in by["worker"]]
            self._tree(em, items, "0", lid1, W, "get_local_id(0) == 0")
        slots = em.state["gang_slots"]
        for c in by["gang"]:
            t = self.type_name(c.type)
            em.line(f"if (pyg_g < pyg_G && get_local_id(0) == 0 && get_local_id(1) == 0) "
                    f"*(volatile __global {t} *)(pyg_gscratch + 8 + pyg_g * {len(slots)} + "
                    f"{slots[c.rid]}) = {c.local};")

    def _tree(self, em, items, base, idx, n, writer):
        """All-reduce ``items`` [(outer, local, op, type)] over the n work-items of a
        segment starting at ``base``: inputs in scratch[r*L + base + idx], results in
        scratch[(R + r)*L + base]; two barriers whatever the number of reductions."""
        u = em.uid()
        R = len(items)
        em.line("#ifdef PYGOMP_SINGLE_ITEM_GROUPS")
        for outer, local, op, t in items:
            em.line(f"{outer} = {em.combine(op, t, outer, local)};")
        em.line("#else")
        em.line("{")
        with em.indent():
            em.line(f"const long pyg_b{u} = {base}, pyg_x{u} = {idx};")
            em.line(f"const long pyg_L{u} = (long)get_local_size(0) * get_local_size(1);")

            def slot(r, k, result=False):
                return (f"*(__local {self.type_name(items[r][3])} *)(pyg_scratch + "
                        f"{R + r if result else r} * pyg_L{u} + pyg_b{u}{k})")

            em.line(f"if ({writer}) {{")
            with em.indent():
                for r, (_, local, _, _) in enumerate(items):
                    em.line(f"{slot(r, f' + pyg_x{u}')} = {local};")
            em.line("}")
            self.barrier(em)
            em.line(f"if (pyg_x{u} == 0 && {writer}) {{")
            with em.indent():
                for r, (_, _, op, t) in enumerate(items):
                    a = f"pyg_a{u}_{r}"
                    em.line(f"{self.type_name(t)} {a} = {slot(r, '')};")
                    em.line(f"for (long pyg_i{u} = 1; pyg_i{u} < {n}; ++pyg_i{u})")
                    em.line(f"    {a} = {em.combine(op, t, a, slot(r, f' + pyg_i{u}'))};")
                    em.line(f"{slot(r, '', True)} = {a};")
            em.line("}")
            self.barrier(em)
            for r, (outer, _, op, t) in enumerate(items):
                em.line(f"{outer} = {em.combine(op, t, outer, slot(r, '', True))};")
        em.line("}")
        em.line("#endif")

    def _join(self, em, loop):
        """After a gang loop: the last work-group to finish combines the partials and
        goes on as gang 0 of 1; the others go on as a dead gang (1 of 1), whose stores
        are off and whose gang loops are empty.  No early return: PoCL would replicate
        the rest of the kernel for each one."""
        slots = em.state["gang_slots"]
        if "__local int pyg_last;" not in em.state["hoisted"]:
            em.state["hoisted"].append("__local int pyg_last;")
        self.barrier(em)
        em.line("if (get_local_id(0) == 0 && get_local_id(1) == 0) {")
        with em.indent():
            em.line("pyg_last = 0;")
            em.line("if (pyg_g < pyg_G) {")
            with em.indent():
                em.line("mem_fence(CLK_GLOBAL_MEM_FENCE);")
                em.line("pyg_last = atomic_inc((volatile __global uint *)pyg_gscratch) "
                        "== (uint)(pyg_G - 1);")
                em.line("if (pyg_last) *(volatile __global uint *)pyg_gscratch = 0;")
            em.line("}")
        em.line("}")
        self.barrier(em)
        em.line("if (pyg_last) {")
        with em.indent():
            em.line("mem_fence(CLK_GLOBAL_MEM_FENCE);")
            for r in loop.reductions:
                t = r.type
                c = self.type_name(t)
                u = em.uid()
                em.line(f"{c} pyg_a{u} = {self.identity(r.op, t)};")
                em.line(f"for (long pyg_q{u} = 0; pyg_q{u} < pyg_G; ++pyg_q{u})")
                part = (f"*(volatile __global {c} *)(pyg_gscratch + 8 + pyg_q{u} * "
                        f"{len(slots)} + {slots[r.rid]})")
                em.line(f"    pyg_a{u} = {em.combine(r.op, t, f'pyg_a{u}', part)};")
                em.line(f"{r.var} = {em.combine(r.op, t, r.var, f'pyg_a{u}')};")
        em.line("}")
        em.line("pyg_g = pyg_last ? 0 : 1; pyg_G = 1;")


def _flat(levels, table):
    """The flat participant id (or count) over the given levels, outer first."""
    if not levels:
        return "0"
    if table is COUNT:
        return " * ".join(table[lv] for lv in levels)
    out = table[levels[0]]
    for lv in levels[1:]:
        out = f"({out}) * {COUNT[lv]} + {table[lv]}"
    return out


def needs_join(body):
    """Gang loops after which the kernel goes on (so all groups must have finished)."""
    out = {}

    def visit(stmts, tail):
        for i, s in enumerate(stmts):
            rest = tail or i + 1 < len(stmts)
            if isinstance(s, ir.ParLoop):
                if "gang" in s.levels and rest:
                    out[id(s)] = True
            elif isinstance(s, ir.If):
                visit(s.body, rest)
                visit(s.orelse, rest)
            elif isinstance(s, (ir.For, ir.While)):
                visit(s.body, True)

    visit(body, False)
    return out


def scan(fn):
    levels, gang_red, scratch, join = set(), 0, 0, False
    joins = needs_join(fn.body)
    for n in ir.walk(fn.body):
        if isinstance(n, ir.ParLoop):
            levels.update(n.levels)
            if "gang" in n.levels:
                gang_red += len(n.reductions)
                join = join or bool(n.reductions) or id(n) in joins
            if n.reductions and n.levels != ("gang",):
                scratch = max(scratch, len(n.reductions))
    return {"levels": levels, "gang_reductions": gang_red, "scratch": bool(scratch),
            "tree_slots": scratch, "gscratch": join}
