"""The sums of the work-group lowering, for `workgroup.WorkGroupDialect` (whose
spellings they use): gang partials combined by the next launch, the copies of array
reductions summed (`finish_array`, `_sum_copies`), and two reduction trees in team-local
memory (`halving_tree`, `gather_tree`).
"""
from __future__ import annotations

import contextlib

from . import ir
from . import types as T
from .loops import LEVELS


class GroupSums:
    """A mixin of `workgroup.WorkGroupDialect`."""

    def _finish_gang_reductions(self, em):
        """Combine the partials a gang loop of the launch before left (its pending word
        holds its number of gangs) into the reduction variables."""
        plan = em.state.plan
        loops, before = {}, plan.before(em.state.k)
        for loop, r in plan.reductions:
            if any(any(n is loop for n in ir.walk(plan.entries[p].body)) for p in before):
                loops.setdefault(id(loop), (loop, []))[1].append(r)
        for loop, reds in loops.values():
            pend = plan.pending[id(loop)]
            em.line(f"if ({pend}) {{")
            with em.indent():
                if self.partials_together:
                    self._read_partials_in_turn(em, pend, reds)
                else:
                    self._read_all_partials(em, pend, reds)
                em.line(f"{pend} = 0;")
            em.line("}")

    def _read_partials_in_turn(self, em, pend, reds):
        """The work-items of the group read the ``pend`` partials in turn, then a tree
        per reduction."""
        for r in reds:
            u = em.uid()
            a, q = f"pyg_a{u}", f"pyg_q{u}"
            em.line(f"{self.type_name(r.type)} {a} = {self.identity(r.op, r.type)};")
            em.line(f"for ({self.type_name(T.INT64)} {q} = {self.block_item}; {q} < {pend}; "
                    f"{q} += {self.block_size})")
            partial = self.partial(em, q, r.rid, r.type)
            em.line(f"    {a} = {em.combine(r.op, r.type, a, partial)};")
            self.halving_tree(em, r.op, r.type, a, r.var)

    def _read_all_partials(self, em, pend, reds):
        """Every work-item reads all ``pend`` partials."""
        u = em.uid()
        q = f"pyg_q{u}"
        for r in reds:
            em.line(f"{self.type_name(r.type)} pyg_a{u}_{r.rid} = {self.identity(r.op, r.type)};")
        em.line(f"for ({self.type_name(T.INT64)} {q} = 0; {q} < {pend}; ++{q}) {{")
        with em.indent():
            for r in reds:
                a = f"pyg_a{u}_{r.rid}"
                em.line(f"{a} = {em.combine(r.op, r.type, a, self.partial(em, q, r.rid, r.type))};")
        em.line("}")
        for r in reds:
            em.line(f"{r.var} = {em.combine(r.op, r.type, r.var, f'pyg_a{u}_{r.rid}')};")

    def _sum_copies(self, em, loop):
        """The entry after a gang loop with array reductions: its work-items sum, each
        a share of the elements, the copies of every work-item of that loop's launch."""
        st = em.state
        items = st.plan.copies[id(loop)]
        i64 = self.type_name(T.INT64)
        for r in loop.reductions:
            if not isinstance(r.type, T.Array):
                continue
            u = em.uid() if self.blocked_sums else None
            t, c = r.type.elem, self.type_name(r.type.elem)
            n = " * ".join(f"({e})" for e in em.extents(r.local))
            with self.each_element(em, n, self.grid_item, self.grid_size, u):
                em.line(f"{c} a = {self.identity(r.op, t)};")
                em.line(f"for ({i64} q = 0; q < {items}; ++q)")
                copy = (f"(({self.glob}{c} *)(pyg_priv + q * ({st.stride}) + "
                        f"{st.mine[r.local]}))[e]")
                em.line(f"    a = {em.combine(r.op, t, 'a', copy)};")
                em.line(f"{r.var}[e] = {em.combine(r.op, t, f'{r.var}[e]', 'a')};")

    @contextlib.contextmanager
    def each_element(self, em, n, me, count, u, before=()):
        """A loop over the elements ``e`` of [0, n) that work-item ``me`` of ``count``
        sums: with ``blocked_sums`` a contiguous block (names of uid ``u``), else every
        ``count``-th; ``before``: lines ahead of it, in its block."""
        i64 = self.type_name(T.INT64)
        braced = self.blocked_sums or bool(before)
        if braced:
            em.line("{")
            em.depth += 1
        if self.blocked_sums:
            em.line(f"const {i64} pyg_n{u} = {n}, pyg_P{u} = {count};")
            em.line(f"const {i64} pyg_p{u} = {me}, "
                    f"pyg_per{u} = (pyg_n{u} + pyg_P{u} - 1) / pyg_P{u};")
        for text in before:
            em.line(text)
        if self.blocked_sums:
            em.line(f"for ({i64} e = pyg_p{u} * pyg_per{u}; e < min(pyg_n{u}, (pyg_p{u} + 1) "
                    f"* pyg_per{u}); ++e) {{")
        else:
            em.line(f"for ({i64} e = {me}; e < {n}; e += {count}) {{")
        with em.indent():
            yield
        em.line("}")
        if braced:
            em.depth -= 1
            em.line("}")

    def joins(self, em, loop) -> tuple:
        """The work-items that sum an array reduction's copies together after a worker
        or vector loop: (their levels, the flat id in the group of the first, the id of
        one among them, their number, a function that emits their barrier)."""
        raise NotImplementedError

    def finish_array(self, em, loop, call) -> None:
        """An array reduction's FINI.  Work-items that ran the loop redundantly (on an
        idle level: neither partitioned around it nor by it or its inner loops) empty
        their copies, where their copies are summed with the others' (the levels of
        `joins`, every level after a gang loop), so that each counts once.  After a
        worker or vector loop the work-items of `joins` then sum their copies, each a
        share of the elements, into the enclosing array: where that is a work-item's
        own (a copy in the private scratch), into the copy of their first; a level
        outside them that ran the sum redundantly writes once, its first work-item (the
        gang level only where the enclosing array is shared by the gangs).  A gang
        loop's copies are summed by the launch that follows it (`_sum_copies`)."""
        st, local = em.state, call.local
        idle = [lv for lv in LEVELS if lv not in st.part | set(loop.levels)]
        inner = {lv for n in ir.walk(loop.body) if isinstance(n, ir.ParLoop) for lv in n.levels}
        gang = "gang" in loop.levels
        joined, base, me, n, sync = (LEVELS[1:], "0", "", "", None) if gang \
            else self.joins(em, loop)
        empty = [lv for lv in idle if lv not in inner and (lv in joined or gang)]
        if empty:
            em.line(f"if (!({self.first(empty)})) " + self.fill(em, local, call.type, call.op))
        if gang:
            return
        own = call.outer in em.cur.sizes
        writer = self.first([lv for lv in idle if lv not in joined and (lv != "gang" or not own)])
        t, c = call.type.elem, self.type_name(call.type.elem)
        u64, i64 = self.type_name(T.UINT64), self.type_name(T.INT64)
        u = em.uid()
        sync(em)
        first = (f"{self.glob}{u64} *pyg_b{u} = pyg_priv + (pyg_g * {self.block_size} + {base}) "
                 f"* ({st.stride}) + {st.mine[local]};")
        with self.each_element(em, em.count(local, call.type), me, n, u, [first]):
            em.line(f"{c} a = {self.identity(call.op, t)};")
            em.line(f"for ({i64} q = 0; q < {n}; ++q)")
            copy = f"(({self.glob}{c} *)(pyg_b{u} + q * ({st.stride})))[e]"
            em.line(f"    a = {em.combine(call.op, t, 'a', copy)};")
            into = f"{call.outer}[e]"
            if own:
                into = (f"(({self.glob}{c} *)(pyg_b{u} - ({st.mine[local]}) + "
                        f"{st.mine[call.outer]}))[e]")
            text = f"{into} = {em.combine(call.op, t, into, 'a')};"
            em.line(f"if ({writer}) {text}" if writer else text)
        sync(em)

    def fill(self, em, name, t, op) -> str:
        """A statement that sets every element of the array ``name`` (of type ``t``) to
        the identity of ``op``."""
        return (f"for ({self.type_name(T.INT64)} e = 0; e < {em.count(name, t)}; ++e) "
                f"{name}[e] = {self.identity(op, t.elem)};")

    # -- reduction trees -------------------------------------------------------------------
    def halving_tree(self, em, op, t, value, into):
        """``into = into OP (value over every work-item of the group)``: a tree in
        team-local memory that halves the active work-items each round, reached by the
        whole group."""
        c = f"{self.local}{self.type_name(t)}"
        u = em.uid()
        s, i, n, h = f"pyg_s{u}", f"pyg_t{u}", f"pyg_n{u}", f"pyg_h{u}"
        em.line("{")
        with em.indent():
            em.line(f"{c} *{s} = ({c} *)pyg_tree;")
            em.line(f"const int {i} = {self.block_item}, {n} = {self.block_size};")
            em.line(f"{s}[{i}] = {value};")
            self.barrier(em)
            em.line(f"for (int {h} = 1; {h} < {n}; {h} *= 2) {{")
            with em.indent():
                em.line(f"if (({i} & (2 * {h} - 1)) == 0 && {i} + {h} < {n}) "
                        f"{s}[{i}] = {em.combine(op, t, f'{s}[{i}]', f'{s}[{i} + {h}]')};")
                self.barrier(em)
            em.line("}")
            em.line(f"{into} = {em.combine(op, t, into, f'{s}[0]')};")
            self.barrier(em)
        em.line("}")

    def gather_tree(self, em, items, base, idx, n, writer):
        """All-reduce ``items`` [(outer, local, op, type)] over the n work-items of a
        segment of the group starting at ``base``: inputs in slot r*L + base + idx, one
        work-item combines them into slot (R + r)*L + base; two barriers whatever the
        number of reductions (2R slots per work-item, of two words for a complex128)."""
        u = em.uid()
        R = len(items)
        i64 = self.type_name(T.INT64)
        em.line("{")
        with em.indent():
            em.line(f"const {i64} pyg_b{u} = {base}, pyg_x{u} = {idx};")
            em.line(f"const {i64} pyg_L{u} = {self.block_size};")

            w = max(t.words for *_, t in items)     # words per slot

            def slot(r, k, result=False):
                at = f"{R + r if result else r} * pyg_L{u} + pyg_b{u}{k}"
                return (f"*({self.local}{self.type_name(items[r][3])} *)(pyg_tree + "
                        f"{at if w == 1 else f'{w} * ({at})'})")

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
                    em.line(f"for ({i64} pyg_i{u} = 1; pyg_i{u} < {n}; ++pyg_i{u})")
                    em.line(f"    {a} = {em.combine(op, t, a, slot(r, f' + pyg_i{u}'))};")
                    em.line(f"{slot(r, '', True)} = {a};")
            em.line("}")
            self.barrier(em)
            for r, (outer, _, op, t) in enumerate(items):
                em.line(f"{outer} = {em.combine(op, t, outer, slot(r, '', True))};")
        em.line("}")
