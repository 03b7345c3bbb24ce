"""The "worker is a warp" strategy of the work-group lowering (CUDA's blocks).

A worker's vector lanes sit in one warp (the dialect's vector length is a power of two
up to the warp's width), so inside a worker loop the lanes of a worker order their
memory with a warp barrier (`warp_sync`) rather than the group's.  A loop whose body
syncs is padded so that every participant runs the same number of trips (the body
guarded), which keeps the group's barriers uniform; the others are plain strided loops.
A worker or vector loop has a barrier on each side.

Reductions, at the level where the loop's participants join: vector lanes by warp
shuffles (`shuffle_xor`, which leaves the result in every lane); the work-items of a
group by `halving_tree` in team-local memory; gangs by one partial per group in the
global scratch, which the next launch combines (its work-items read them in turn, then
a tree).  An array reduction's copies are summed by a worker's lanes after a vector
loop, else by the group (`WorkGroupDialect.finish_array`).
"""
from __future__ import annotations

from . import ir
from . import types as T
from .workgroup import LEVELS, WorkGroupDialect, syncs


class WarpWorkers(WorkGroupDialect):
    """The hooks `iterate`, `loop_barrier`, `fini` and `joins` of `WorkGroupDialect`,
    for a dialect whose workers are warps."""
    partials_together = True
    unroll = ""                 # a line that asks to unroll the next loop
    warp_sync = ""              # a statement: the barrier of one worker's lanes

    def shuffle_xor(self, value: str, lane: str) -> str:
        """``value`` of the lane whose index differs from this one's by xor ``lane``."""
        raise NotImplementedError

    def tree_slots(self, fn, plan):
        """One value per work-item when the kernel reduces over a group's work-items (two
        words for a complex128)."""
        return max([getattr(r.type, "words", 1) for n in ir.walk(fn.body)
                    if isinstance(n, ir.ParLoop) and n.levels[0] != "vector"
                    for r in n.reductions], default=int(bool(plan.reductions)))

    def iterate(self, em, loop, u, me, trips):
        """Strided iterations; padded so that every participant runs the same number of
        trips when the body syncs (the body guarded)."""
        k, tot, P = f"pyg_k{u}", f"pyg_tot{u}", f"pyg_P{u}"
        i64 = self.type_name(T.INT64)
        if syncs(loop.body):
            rounds = f"({tot} + {P} - 1) / {P}"
            em.line(f"for ({i64} pyg_j{u} = 0; pyg_j{u} < {rounds}; ++pyg_j{u}) {{")
            em.line(f"    const {i64} {k} = pyg_j{u} * {P} + ({me});")
            em.line(f"    if ({k} < {tot}) {{")
        else:                                   # a plain strided loop (unrolled)
            if self.unroll:
                em.line(self.unroll)
            em.line(f"for ({i64} {k} = {me}; {k} < {tot}; {k} += {P}) {{")
            em.line("    {")
        with em.indent(), em.indent():
            for s in em.dim_values(loop, k, trips):
                em.line(s)
            em.decls(loop.decls)
            em.stmts(loop.body)
        em.line("    }")
        em.line("}")

    def loop_barrier(self, em):
        """Order the memory accesses of the work-items running the current code: a
        group's, or one worker's lanes (in one warp) inside a worker loop."""
        if "worker" in em.state.part:
            em.line(self.warp_sync)
        else:
            self.barrier(em)

    def joins(self, em, loop):
        """A worker's lanes after a vector loop, else the whole group."""
        if loop.levels == ("vector",):
            V = self.level_count["vector"]
            return (("vector",), f"{self.level_id['worker']} * {V}",
                    self.level_id["vector"], V, lambda em: em.line(self.warp_sync))
        return LEVELS[1:], "0", self.block_item, self.block_size, self.barrier

    def fini(self, em, loop):
        """Each FINI call, at the level where the loop's participants join (the gang
        level leaves a group's partial in the scratch for the next launch)."""
        for call in loop.fini:
            em.at(call.line)
            if isinstance(call.type, T.Array):
                self.finish_array(em, loop, call)
            else:
                self._fini_scalar(em, loop, call)

    def _fini_scalar(self, em, loop, call):
        t = call.type
        if call.level != loop.levels[0]:        # an inner level: a thread's own copies
            em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
        elif call.level == "vector":
            c = self.type_name(t)               # every lane shuffles ("and" short-cuts)
            em.line(f"for (int o = {self.level_count['vector']} / 2; o > 0; o /= 2) {{ "
                    f"{c} pyg_o = {self._shuffle(t, call.local)}; "
                    f"{call.local} = {em.combine(call.op, t, call.local, 'pyg_o')}; }}")
            em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
        else:
            idle = [lv for lv in LEVELS[1:] if lv not in em.state.part | set(loop.levels)]
            lead = self.first(idle)             # one per group
            value = f"{lead} ? {call.local} : {self.identity(call.op, t)}" if lead else call.local
            if call.level == "worker":
                self.halving_tree(em, call.op, t, value, call.outer)
                return
            c = self.type_name(t)
            part = f"pyg_p{em.uid()}"
            em.line(f"{c} {part} = {self.identity(call.op, t)};")
            if loop.levels == ("gang",):            # every work-item of the group has it
                em.line(f"{part} = {call.local};")
            else:
                self.halving_tree(em, call.op, t, value, part)
            into = self.partial(em, "pyg_g", call.rid, t)
            em.line(f"if ({self.group_leader()}) {into} = {part};")

    def _shuffle(self, t, v):
        if t.is_bool:
            return f"({self.type_name(t)}){self.shuffle_xor(f'(int){v}', 'o')}"
        if t.is_complex:
            return self.complex_make(t, self._shuffle(t.real, self.complex_part(v, "real")),
                                     self._shuffle(t.real, self.complex_part(v, "imag")))
        return self.shuffle_xor(v, "o")
