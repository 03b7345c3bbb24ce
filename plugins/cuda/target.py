"""The CUDA C dialect: kernels as ``extern "C" __global__`` functions.

Launch contract (see the CUDA plugin): one ``unsigned long long`` kernel parameter a word
(`pygomp.compiler.emit.arg_words`), then the global scratch's address when the kernel
has one; gangs are blocks (``gridDim.x``), workers ``blockDim.y``, vector lanes
``blockDim.x`` (a power of two up to 32, so that one worker's lanes sit in one warp).

Execution model: code outside a partitioned level runs redundantly on every thread of
that level; stores, atomics and the kernel's result are done by the level's thread 0
only.  A loop whose body syncs is padded so that every thread of a level runs the same
number of trips (the body is guarded), which keeps ``__syncthreads`` uniform; the others
are plain strided loops.  A worker or vector loop has a ``__syncthreads`` on each side
(``__syncwarp`` inside a worker loop), so that the threads of a block see each other's
stores.

Entries: the kernel runs as the launches of `pygomp.compiler.steps.plan` (each an entry
``NAME__e<k>`` when there are several), so that every top-level statement is ordered
before the next on the whole grid; the plugin launches them in order on its stream (or
as the plan's program says), with one global scratch that persists across them.  An
entry loads the carried scalars of its area, finishes the gang reductions the launch
before left, runs its statements (none after a ``return``) and, from one thread, stores
the carried scalars into the other area.

Reductions, at the level where the loop's threads join: vector lanes by warp shuffles
(``__shfl_xor_sync``, which leaves the result in every lane); the threads of a block by
a tree in dynamic shared memory (``tree_bytes``); gangs by one partial a block in the
global scratch, which the next launch combines (its threads read them in turn, then a
tree).  No kernel needs its blocks resident at once: no grid-wide sync.
"""
from __future__ import annotations

from pygomp.compiler import ir, steps
from pygomp.compiler import types as T
from pygomp.compiler.emit import Dialect, arg_words, arith_helpers, private_terms, word_kinds
from pygomp.compiler.reductions import array_copies
from pygomp.errors import CompileError
from pygomp.runtime.plugin import KernelInfo

LEVEL_ID = {"gang": ("pyg_g", "pyg_G"), "worker": ("threadIdx.y", "blockDim.y"),
            "vector": ("threadIdx.x", "blockDim.x")}
ORDER = ("gang", "worker", "vector")
LEAD = "threadIdx.x == 0 && threadIdx.y == 0"        # thread 0 of a block

_TYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
          "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
          "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
          "float64": "double"}
_ATOMIC_ADD = {"int32": "int", "uint32": "unsigned int", "int64": "unsigned long long",
               "uint64": "unsigned long long", "float32": "float", "float64": "double"}


_PREAMBLE = ("#define INFINITY __int_as_float(0x7f800000)\n"   # NVRTC has no math.h
             "#define NAN __int_as_float(0x7fffffff)\n\n"
             + arith_helpers("__device__ __forceinline__", lambda t: _TYPES[t.name], "f"))


def _partial(em, c, gang, rid):
    """A gang's partial of a reduction in the global scratch (of C type ``c``)."""
    plan = em.state["plan"]
    return (f"*(volatile {c} *)&pyg_gs[{plan.scratch_words} + {gang} * {plan.gang_words} + "
            f"{em.state['slots'][rid]}]")


def _word(em, name, area, c):
    """A carried scalar's word in one area of the global scratch."""
    return f"*(volatile {c} *)&pyg_gs[{em.state['plan'].word(name, area)}]"


def _syncs(body) -> bool:
    """Whether ``body`` has a barrier (or a loop with its syncs), helpers included."""
    return any(isinstance(n, (ir.Barrier, ir.ParLoop))
               or isinstance(n, ir.HelperCall) and _syncs(n.fn.body) for n in ir.walk(body))


def _tree_used(fn, plan) -> bool:
    """Whether the kernel reduces over a block's threads (a tree in shared memory)."""
    return bool(plan.reductions) or any(
        isinstance(n, ir.ParLoop) and n.reductions and n.levels[0] != "vector"
        for n in ir.walk(fn.body))


class CudaDialect(Dialect):
    target = "cuda"
    write_flags = True          # a helper stores into a caller's array as the caller would

    def preamble(self, fn):
        return _PREAMBLE

    def type_name(self, t):
        return _TYPES[t.name]

    def pointer(self, t):
        return f"{self.type_name(t.elem)} *"

    def builtin(self, em, name):
        lv, what = {"gang_id": ("gang", 0), "worker_id": ("worker", 0),
                    "vector_id": ("vector", 0), "num_gangs": ("gang", 1),
                    "num_workers": ("worker", 1), "vector_length": ("vector", 1)}[name]
        text = LEVEL_ID[lv][what]
        if lv == "gang" and not em.cur.is_kernel:
            text = ("blockIdx.x", "gridDim.x")[what]
        return f"((long long){text})"

    # -- kernel entry --------------------------------------------------------------
    def helper_open(self, em, fn, params):
        em.state["part"] = ORDER          # its own arrays: each thread's
        ret = "void" if fn.ret is T.VOID else self.type_name(fn.ret)
        em.line(f"static __device__ {ret} {fn.name}({', '.join(params) or 'void'})")
        em.line("{")

    def entries(self, em, fn):
        """One entry a launch of `steps.plan` (gang loops end their launch)."""
        plan = steps.plan(fn)
        names = [f"{fn.name}__e{k}" if len(plan.entries) > 1 else fn.name
                 for k in range(len(plan.entries))]
        em.state.update(plan=plan, names=names, tree=_tree_used(fn, plan),
                        slots={r.rid: k for k, (_, r) in enumerate(plan.reductions)},
                        copies=array_copies(fn))
        return list(zip(names, (e.body for e in plan.entries)))

    def kernel_open(self, em, fn):
        st, plan = em.state, em.state["plan"]
        st.update(part=(), cells=[], k=st["names"].index(em.entry))
        words = arg_words(fn)
        params = [f"unsigned long long w{i}" for i in range(len(words))]
        if plan.scratch_words or plan.gang_words:
            params.append("unsigned long long *pyg_gs")
        if fn.sizes:                # private arrays sized at run time: a thread's part
            params.append("unsigned long long *__restrict__ pyg_priv")
        em.line(f'extern "C" __global__ void {em.entry}({", ".join(params) or "void"})')
        em.line("{")
        with em.indent():
            for i, (name, t, role) in enumerate(words):
                if role in ("array", "ret"):
                    elem = self.type_name(t.elem if role == "array" else t)
                    em.line(f"{elem} *{name} = ({elem} *)w{i};")
                elif t == T.FLOAT64:
                    em.line(f"double {name} = __longlong_as_double((long long)w{i});")
                elif t == T.FLOAT32:
                    em.line(f"float {name} = __uint_as_float((unsigned int)w{i});")
                elif t.is_bool:
                    em.line(f"bool {name} = w{i} != 0;")
                else:
                    em.line(f"{self.type_name(t)} {name} = ({self.type_name(t)})w{i};")
            em.line("const long long pyg_g = blockIdx.x, pyg_G = gridDim.x;")
            em.line("const unsigned pyg_lanes = blockDim.x >= 32 ? 0xffffffffu : "
                    "((1u << blockDim.x) - 1) << (threadIdx.y * blockDim.x & 31);")
            if st["tree"]:
                em.line("extern __shared__ unsigned long long pyg_tree[];")
            if fn.sizes:
                st["mine"], st["stride"] = em.private_layout()
                em.line(f"unsigned long long *pyg_mine = pyg_priv + ((blockIdx.x * blockDim.y "
                        f"+ threadIdx.y) * blockDim.x + threadIdx.x) * ({st['stride']});")
        st["kernel_at"] = len(em.out)

    def kernel_body(self, em, fn, body):
        """Load the carried scalars, finish the gang reductions of the launch before,
        then the statements (none after a return)."""
        st, plan = em.state, em.state["plan"]
        k = st["k"]
        steps.load_carried(em, self, fn, plan, k,
                           lambda name, area, t: _word(em, name, area, self.type_name(t)))
        if k:
            self._finish_gang_reductions(em, plan, k)
        if plan.entries[k].combine is not None:
            self._sum_copies(em, plan.entries[k].combine)
        if plan.done and k:
            for name in plan.flags:
                em.line(f"if ({plan.done}) {name} = 0;")
            em.line(f"if (!{plan.done}) {{")
            with em.indent():
                em.stmts(body)
            em.line("}")
        else:
            em.stmts(body)

    def _finish_gang_reductions(self, em, plan, k):
        """Combine the partials a gang loop of the launch before left (its pending word
        holds its number of gangs) into the reduction variables: each block reads them
        all, its threads in turn, then reduces over its threads."""
        loops, before = {}, plan.before(k)
        for loop, r in plan.reductions:
            if any(any(n is loop for n in ir.walk(plan.entries[p].body)) for p in before):
                loops.setdefault(id(loop), (loop, []))[1].append(r)
        for loop, reds in loops.values():
            pend = plan.pending[id(loop)]
            em.line(f"if ({pend}) {{")
            with em.indent():
                for r in reds:
                    c = self.type_name(r.type)
                    u = em.uid()
                    a, q = f"pyg_a{u}", f"pyg_q{u}"
                    em.line(f"{c} {a} = {self.identity(r.op, r.type)};")
                    em.line(f"for (long long {q} = threadIdx.y * blockDim.x + threadIdx.x; "
                            f"{q} < {pend}; {q} += blockDim.x * blockDim.y)")
                    em.line(f"    {a} = {em.combine(r.op, r.type, a, _partial(em, c, q, r.rid))};")
                    self._tree(em, r.op, r.type, a, r.var)
                em.line(f"{pend} = 0;")
            em.line("}")

    def kernel_close(self, em, fn):
        st, plan = em.state, em.state["plan"]
        at = st["kernel_at"]
        em.out[at:at] = ["    " + c for c in st["cells"]]
        if plan.carried and plan.program[-1] != st["k"]:     # not the last launch
            with em.indent():
                area = 1 - plan.parity[st["k"]]
                em.line(f"if (pyg_g == 0 && {LEAD}) {{")
                with em.indent():
                    for name, t in plan.carried:
                        em.line(f"{_word(em, name, area, self.type_name(t))} = {name};")
                em.line("}")
        em.line("}")

    def kernel_return(self, em, fn, value):
        plan = em.state["plan"]
        lead = self.leader(em)
        if value is not None:
            em.line(f"if ({lead}) *{fn.ret_param} = {value};")
        if plan.done:                           # the launches after this one do nothing
            area = 1 - plan.parity[em.state["k"]]
            em.line(f"if ({lead}) {{")
            with em.indent():
                for name in [plan.done] + plan.flags:
                    em.line(f"{_word(em, name, area, 'bool')} = {int(name == plan.done)};")
            em.line("}")
        em.line("return;")

    def leader(self, em, space="global"):
        """The thread that stores for those running the current code redundantly: for
        global memory one in the grid, for a gang's shared memory one a block, for a
        thread's own memory each."""
        levels = {"global": ORDER, "local": ORDER[1:], "private": ()}[space]
        idle = [lv for lv in levels if lv not in em.state.get("part", ())]
        return " && ".join(f"{LEVEL_ID[lv][0]} == 0" for lv in idle) or "1"

    def _space(self, em, arr):
        """An array's memory: a private array sized at run time is a thread's own."""
        return "private" if arr.name in em.cur.sizes else arr.type.space

    def writer(self, em, arr):
        if arr.name in em.cur.written and not em.cur.is_kernel:     # the caller says
            return f"{arr.name}__w"
        if arr.name in em.state.get("copies", ()):      # summed over the threads: count once
            return self.leader(em, "local")
        return self.leader(em, self._space(em, arr))

    def store(self, em, s):
        cond = self.writer(em, s.target.array)
        text = f"{em.expr(s.target)} = {em.expr(s.value)};"
        em.line(text if cond == "1" else f"if ({cond}) {text}")

    def atomic_add(self, em, s):
        t = s.target.type
        c = _ATOMIC_ADD.get(t.name)
        if c is None:
            raise CompileError(f"atomic_add on {t} is not supported on CUDA (use int32, "
                               f"int64, uint32, uint64, float32 or float64)",
                               em.cur.file, s.line or em.cur.line)
        target, value = em.expr(s.target), em.expr(s.value)
        space = self._space(em, s.target.array)
        op = (f"{target} += {value};" if space == "private"
              else f"atomicAdd(({c} *)&{target}, ({c}){value});")
        cond = self.writer(em, s.target.array)
        em.line(op if cond == "1" else f"if ({cond}) {op}")

    def barrier(self, em):
        em.line("__syncthreads();")

    inline = "__device__ __forceinline__"      # bounds checking's functions

    def claim(self, record):
        return f"atomicCAS((int *){record}, 0, 1) == 0"

    def array_decl(self, em, name, t):
        if name in em.cur.sizes:            # sized at run time: in the private scratch
            for k, e in enumerate(em.extents(name)):
                em.line(f"const long long {name}__s{k} = {e};")
            c = self.type_name(t.elem)
            em.line(f"{c} *{name} = ({c} *)(pyg_mine + {em.state['mine'][name]});")
            return
        n = 1
        for d in t.shape:
            n *= d
        if t.space == "local":
            em.state["cells"].append(f"__shared__ {self.type_name(t.elem)} {name}[{n}];")
        else:
            em.line(f"{self.type_name(t.elem)} {name}[{n}];")

    # -- loops -----------------------------------------------------------------------
    def loop(self, em, loop):
        u = em.uid()
        levels = loop.levels
        p, P = "0", "1"
        for lv in levels:
            i, n = LEVEL_ID[lv]
            p = i if p == "0" else f"({p}) * {n} + {i}"
            P = n if P == "1" else f"{P} * {n}"
        trips = [f"n{k}_{u}" for k in range(len(loop.dims))]
        inner = "gang" not in levels
        if inner:
            self._sync(em)                      # what the redundant code stored
        em.line("{")
        with em.indent():
            lines, count = em.counts(loop, trips)
            for text in lines:
                em.line(text)
            em.line(f"const long long tot{u} = {count};")
            em.line(f"const long long P{u} = {P};")
            outer = em.state["part"]
            em.state["part"] = outer + levels
            em.state.setdefault("loops", []).append(loop)
            for c in loop.setup + loop.init:
                em.stmt(c)
            if _syncs(loop.body):                # every thread the same trips
                em.line(f"for (long long j{u} = 0; j{u} < (tot{u} + P{u} - 1) / P{u}; ++j{u}) {{")
                em.line(f"    const long long k{u} = j{u} * P{u} + ({p});")
                em.line(f"    if (k{u} < tot{u}) {{")
            else:                               # a plain strided loop (unrolled)
                em.line("#pragma unroll 4")
                em.line(f"for (long long k{u} = {p}; k{u} < tot{u}; k{u} += P{u}) {{")
                em.line("    {")
            with em.indent(), em.indent():
                for s in em.dim_values(loop, f"k{u}", trips):
                    em.line(s)
                em.decls(loop.decls)
                em.stmts(loop.body)
            em.line("    }")
            em.line("}")
            em.state["part"] = outer
            for c in loop.fini + loop.teardown:
                em.stmt(c)
            em.state["loops"].pop()
            plan = em.state["plan"]
            if id(loop) in plan.pending:             # the next launch combines the partials
                em.line(f"{plan.pending[id(loop)]} = pyg_G;")
            if id(loop) in plan.copies:              # the next launch sums the copies
                em.line(f"{plan.copies[id(loop)]} = pyg_G * blockDim.y * blockDim.x;")
        em.line("}")
        if inner:
            self._sync(em)                      # the loop's stores, for what follows

    def _sync(self, em):
        """Order the memory accesses of the threads running the current code: a
        block's, or one worker's lanes (``pyg_lanes``, in one warp) inside a worker
        loop.  Lanes are named, never taken from ``__activemask()``, which need not
        hold a worker's lanes together."""
        em.line("__syncwarp(pyg_lanes);" if "worker" in em.state["part"]
                else "__syncthreads();")

    def reduction(self, em, call):
        """INIT declares a level's copy; FINI combines it at the loop's top level (the
        gang level leaves a block's partial in the scratch for the next launch)."""
        loop = em.state["loops"][-1]
        if isinstance(call.type, T.Array):
            self._array_reduction(em, loop, call)
            return
        t = call.type
        if call.phase == "INIT":
            em.line(f"{self.type_name(t)} {call.local} = {self.identity(call.op, t)};")
        elif call.phase != "FINI":
            return
        elif call.level != loop.levels[0]:      # an inner level: a thread's own copies
            em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
        elif call.level == "vector":
            c = self.type_name(t)               # every lane shuffles ("and" short-cuts)
            em.line(f"for (int o = blockDim.x / 2; o > 0; o /= 2) {{ {c} pyg_o = "
                    f"{self._shfl(t, call.local)}; "
                    f"{call.local} = {em.combine(call.op, t, call.local, 'pyg_o')}; }}")
            em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
        else:
            idle = [lv for lv in ORDER[1:] if lv not in em.state["part"] + loop.levels]
            lead = " && ".join(f"{LEVEL_ID[lv][0]} == 0" for lv in idle)   # one a block
            value = f"{lead} ? {call.local} : {self.identity(call.op, t)}" if lead else call.local
            if call.level == "worker":
                self._tree(em, call.op, t, value, call.outer)
                return
            c = self.type_name(t)
            part = f"pyg_p{em.uid()}"
            em.line(f"{c} {part} = {self.identity(call.op, t)};")
            if loop.levels == ("gang",):            # every thread of the block has it
                em.line(f"{part} = {call.local};")
            else:
                self._tree(em, call.op, t, value, part)
            em.line(f"if ({LEAD}) {_partial(em, c, 'pyg_g', call.rid)} = {part};")

    def _array_reduction(self, em, loop, call):
        """An array reduction: a copy a thread in the private scratch.  After a worker or
        vector loop the threads of the loop sum their copies into the enclosing array,
        each a slice of its elements; a gang loop's copies are summed by the launch that
        follows it (`_sum_copies`)."""
        t = call.type.elem
        c = self.type_name(t)
        if call.phase == "INIT":
            self.array_decl(em, call.local, call.type)
            em.line(f"for (long long e = 0; e < {em.count(call.local, call.type)}; ++e) "
                    f"{call.local}[e] = {self.identity(call.op, t)};")
            return
        if call.phase != "FINI" or call.level != loop.levels[0]:
            return
        local = next(r.local for r in loop.reductions if r.rid == call.rid)   # innermost
        part = em.state["part"]
        idle = [lv for lv in ORDER if lv not in part + loop.levels]
        lanes = loop.levels == ("vector",)      # a worker's lanes, else the block's threads
        summed = ("vector",) if lanes else ORDER[1:]
        inner = {lv for n in ir.walk(loop.body) if isinstance(n, ir.ParLoop) for lv in n.levels}
        empty = [lv for lv in idle if lv not in inner and (lv in summed or "gang" in loop.levels)]
        if empty:                       # threads that ran it redundantly count once
            em.line(f"if (!({' && '.join(f'{LEVEL_ID[lv][0]} == 0' for lv in empty)})) "
                    f"for (long long e = 0; e < {em.count(local, call.type)}; ++e) "
                    f"{local}[e] = {self.identity(call.op, t)};")
        if "gang" in loop.levels:
            return
        idle = [lv for lv in idle if lv not in summed]      # those that sum, each a slice
        if call.outer not in em.cur.sizes:      # global memory: one gang stores
            idle = ["gang"] + [lv for lv in idle if lv != "gang"]
        writer = " && ".join(f"{LEVEL_ID[lv][0]} == 0" for lv in dict.fromkeys(idle)) or "1"
        base = "threadIdx.y * blockDim.x" if lanes else "0"
        n = "blockDim.x" if lanes else "blockDim.x * blockDim.y"
        me = "threadIdx.x" if lanes else "threadIdx.y * blockDim.x + threadIdx.x"
        sync = "__syncwarp(pyg_lanes);" if lanes else "__syncthreads();"
        stride = em.state["stride"]
        u = em.uid()
        em.line(sync)
        em.line("{")
        with em.indent():
            em.line(f"unsigned long long *pyg_b{u} = pyg_priv + ((blockIdx.x * blockDim.y) "
                    f"* blockDim.x + {base}) * ({stride}) + {em.state['mine'][local]};")
            em.line(f"for (long long e = {me}; e < {em.count(local, call.type)}; e += {n}) {{")
            with em.indent():
                em.line(f"{c} a = {self.identity(call.op, t)};")
                em.line(f"for (long long q = 0; q < {n}; ++q)")
                copy = f"(({c} *)(pyg_b{u} + q * ({stride})))[e]"
                em.line(f"    a = {em.combine(call.op, t, 'a', copy)};")
                into = f"{call.outer}[e]"
                if call.outer in em.cur.sizes:      # the copy of the group's first thread
                    into = (f"(({c} *)(pyg_b{u} - ({em.state['mine'][local]}) + "
                            f"{em.state['mine'][call.outer]}))[e]")
                em.line(f"if ({writer}) {into} = {em.combine(call.op, t, into, 'a')};")
            em.line("}")
        em.line("}")
        em.line(sync)

    def _sum_copies(self, em, loop):
        """The launch after a gang loop with array reductions: its threads sum, each a
        slice of the elements, the copies of every thread of that loop's launch."""
        plan = em.state["plan"]
        items = plan.copies[id(loop)]
        stride = em.state["stride"]
        me = "(blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x"
        for r in loop.reductions:
            if not isinstance(r.type, T.Array):
                continue
            t, c = r.type.elem, self.type_name(r.type.elem)
            n = " * ".join(f"({e})" for e in em.extents(r.local))
            em.line(f"for (long long e = {me}; e < {n}; "
                    f"e += gridDim.x * blockDim.y * blockDim.x) {{")
            with em.indent():
                em.line(f"{c} a = {self.identity(r.op, t)};")
                em.line(f"for (long long q = 0; q < {items}; ++q)")
                copy = f"(({c} *)(pyg_priv + q * ({stride}) + {em.state['mine'][r.local]}))[e]"
                em.line(f"    a = {em.combine(r.op, t, 'a', copy)};")
                em.line(f"{r.var}[e] = {em.combine(r.op, t, f'{r.var}[e]', 'a')};")
            em.line("}")

    def _shfl(self, t, v):
        if t.is_bool:
            return f"(bool)__shfl_xor_sync(pyg_lanes, (int){v}, o)"
        return f"__shfl_xor_sync(pyg_lanes, {v}, o)"

    def _tree(self, em, op, t, value, into):
        """``into = into OP (value over every thread of the block)``: a tree in shared
        memory, in every thread (the block reaches it together)."""
        c = self.type_name(t)
        u = em.uid()
        s, i, n, h = f"pyg_s{u}", f"pyg_t{u}", f"pyg_n{u}", f"pyg_h{u}"
        em.line("{")
        with em.indent():
            em.line(f"{c} *{s} = ({c} *)pyg_tree;")
            em.line(f"const int {i} = threadIdx.y * blockDim.x + threadIdx.x, "
                    f"{n} = blockDim.x * blockDim.y;")
            em.line(f"{s}[{i}] = {value};")
            em.line("__syncthreads();")
            em.line(f"for (int {h} = 1; {h} < {n}; {h} *= 2) {{")
            with em.indent():
                em.line(f"if (({i} & (2 * {h} - 1)) == 0 && {i} + {h} < {n}) "
                        f"{s}[{i}] = {em.combine(op, t, f'{s}[{i}]', f'{s}[{i} + {h}]')};")
                em.line("__syncthreads();")
            em.line("}")
            em.line(f"{into} = {em.combine(op, t, into, f'{s}[0]')};")
            em.line("__syncthreads();")
        em.line("}")

    # -- the kernel contract ---------------------------------------------------------
    def kernel_info(self, em, fn):
        plan = em.state["plan"]
        levels = []
        for k, e in enumerate(plan.entries):
            lv = set(e.levels)
            if k and plan.reductions:           # lanes to read the partials with
                lv.add("vector")
            levels.append("".join(x[0] for x in ORDER if x in lv))
        program = plan.program if plan.program != tuple(range(len(plan.entries))) else ()
        return KernelInfo(fn.pyname, tuple(em.state["names"]), word_kinds(fn), tuple(levels),
                          scratch_bytes=8 * plan.scratch_words, gang_bytes=8 * plan.gang_words,
                          tree_bytes=8 if em.state["tree"] else 0, program=program,
                          private=private_terms(fn))


HOOKS = CudaDialect()
