"""The CUDA C dialect: kernels as ``extern "C" __global__`` functions, lowered by
`pygomp.compiler.workgroup` (entries, leaders, scratch, array-reduction sums).

Gangs are blocks (``gridDim.x``), workers ``blockDim.y``, vector lanes ``blockDim.x``
(a power of two up to 32, so that one worker's lanes sit in one warp).  The arguments
are one ``unsigned long long`` parameter per word (`pygomp.runtime.plugin.KernelInfo`),
then the global scratch's address and the private scratch's, where the kernel uses them.

A loop whose body syncs is padded so that every thread of a level runs the same number
of trips (the body guarded), which keeps ``__syncthreads`` uniform; the others are plain
strided loops.  A worker or vector loop has a sync on each side (``__syncwarp`` inside a
worker loop), so that the threads of a block see each other's stores.

Reductions, at the level where the loop's threads join: vector lanes by warp shuffles
(``__shfl_xor_sync``, which leaves the result in every lane); the threads of a block by
`halving_tree` in dynamic shared memory; gangs by one partial per block in the global
scratch, which the next launch combines (its threads read them in turn, then a tree).
No kernel needs its blocks resident at once: no grid-wide sync.
"""
from __future__ import annotations

from pygomp.compiler import ir
from pygomp.compiler import types as T
from pygomp.compiler.argwords import arg_words
from pygomp.compiler.arith import arith_helpers
from pygomp.compiler.workgroup import LEVELS, WorkGroupDialect, syncs
from pygomp.errors import CompileError

LEVEL_ID = {"gang": ("pyg_g", "pyg_G"), "worker": ("threadIdx.y", "blockDim.y"),
            "vector": ("threadIdx.x", "blockDim.x")}

_TYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
          "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
          "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
          "float64": "double", "complex64": "pyg_complex64",
          "complex128": "pyg_complex128"}
_ATOMIC_ADD = {"int32": "int", "uint32": "unsigned int", "int64": "unsigned long long",
               "uint64": "unsigned long long", "float32": "float", "float64": "double"}

_MINMAX = {"int32": "int", "uint32": "unsigned int", "int64": "long long",
           "uint64": "unsigned long long"}
_SWAP = {"int32": "int", "uint32": "unsigned int", "int64": "unsigned long long",
         "uint64": "unsigned long long"}
_NATIVE = {"add": _ATOMIC_ADD, "max": _MINMAX, "min": _MINMAX, "cas": _SWAP,
           "exchange": {**_SWAP, "float32": "float"}}


_PREAMBLE = ("#define INFINITY __int_as_float(0x7f800000)\n"   # NVRTC has no math.h
             "#define NAN __int_as_float(0x7fffffff)\n\n"
             + arith_helpers("__device__ __forceinline__", lambda t: _TYPES[t.name], "f"))


class CudaDialect(WorkGroupDialect):
    target = "cuda"
    helper_prefix = "static __device__ "
    inline = "__device__ __forceinline__"      # bounds checking's functions
    partials_together = True

    level_id = {lv: ids[0] for lv, ids in LEVEL_ID.items()}
    level_count = {lv: ids[1] for lv, ids in LEVEL_ID.items()}
    block_item, block_size = "threadIdx.y * blockDim.x + threadIdx.x", "blockDim.x * blockDim.y"
    grid_item = "(blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x"
    grid_size = "gridDim.x * blockDim.y * blockDim.x"
    launch_items = "pyg_G * blockDim.y * blockDim.x"
    team_space = "__shared__"
    complex_struct = True

    def preamble(self, fn):
        return _PREAMBLE

    def type_name(self, t):
        return t.c if isinstance(t, T.Record) else _TYPES[t.name]

    def complex_make(self, t, re, im):
        return f"{_TYPES[t.name]}{{{re}, {im}}}"

    def builtin(self, em, name):
        lv, what = {"gang_id": ("gang", 0), "worker_id": ("worker", 0),
                    "vector_id": ("vector", 0), "num_gangs": ("gang", 1),
                    "num_workers": ("worker", 1), "vector_length": ("vector", 1)}[name]
        text = LEVEL_ID[lv][what]
        if lv == "gang" and not em.cur.is_kernel:
            text = ("blockIdx.x", "gridDim.x")[what]
        return f"((long long){text})"

    def scratch_word(self, c, index):
        vol = "" if c.startswith("pyg_complex") else "volatile "   # C++: no volatile copy
        return f"*({vol}{c} *)&pyg_gs[{index}]"

    def tree_slots(self, fn, plan):
        """One value per thread when the kernel reduces over a block's threads (two
        words for a complex128)."""
        return max([getattr(r.type, "words", 1) for n in ir.walk(fn.body)
                    if isinstance(n, ir.ParLoop) and n.levels[0] != "vector"
                    for r in n.reductions], default=int(bool(plan.reductions)))

    # -- kernel entry --------------------------------------------------------------
    def kernel_head(self, em, fn):
        params = [f"unsigned long long w{i}" for i in range(len(arg_words(fn)))]
        if self.has_scratch(em.state):
            params.append("unsigned long long *pyg_gs")
        if fn.sizes:
            params.append("unsigned long long *__restrict__ pyg_priv")
        return f'extern "C" __global__ void {em.entry}({", ".join(params) or "void"})'

    def prologue(self, em, fn):
        for i, (name, t, role) in enumerate(arg_words(fn)):
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
        if em.state.tree:
            em.line("extern __shared__ unsigned long long pyg_tree[];")

    def atomic(self, em, s, target, value):
        t = s.target.type
        c = _ATOMIC_ADD.get(t.name)
        if c is None:
            raise CompileError(f"atomic_add on {t} is not supported on CUDA (use int32, "
                               f"int64, uint32, uint64, float32 or float64)",
                               em.cur.file, s.line or em.cur.line)
        return f"atomicAdd(({c} *)&{target}, ({c}){value});"

    def atomic_native(self, em, a, ptr):
        c = _NATIVE[a.op].get(a.type.name)
        if c is None:
            return None
        fn = {"exchange": "atomicExch", "cas": "atomicCAS"}.get(a.op, f"atomic{a.op.title()}")
        e = f"({c})pyg_e, " if a.op == "cas" else ""
        return f"({_TYPES[a.type.name]}){fn}(({c} *){ptr}, {e}({c})pyg_v)"

    def atomic_swap(self, space, size, ptr, old, new):
        return f"atomicCAS({ptr}, {old}, {new})"

    def barrier(self, em):
        em.line("__syncthreads();")

    def claim(self, record):
        return f"atomicCAS((int *){record}, 0, 1) == 0"

    # -- loops -----------------------------------------------------------------------
    def iterate(self, em, loop, u, me, trips):
        """Strided iterations; padded so that every thread runs the same number of trips
        when the body syncs (the body guarded)."""
        k, tot, P = f"pyg_k{u}", f"pyg_tot{u}", f"pyg_P{u}"
        if syncs(loop.body):
            rounds = f"({tot} + {P} - 1) / {P}"
            em.line(f"for (long long pyg_j{u} = 0; pyg_j{u} < {rounds}; ++pyg_j{u}) {{")
            em.line(f"    const long long {k} = pyg_j{u} * {P} + ({me});")
            em.line(f"    if ({k} < {tot}) {{")
        else:                                   # a plain strided loop (unrolled)
            em.line("#pragma unroll 4")
            em.line(f"for (long long {k} = {me}; {k} < {tot}; {k} += {P}) {{")
            em.line("    {")
        with em.indent(), em.indent():
            for s in em.dim_values(loop, k, trips):
                em.line(s)
            em.decls(loop.decls)
            em.stmts(loop.body)
        em.line("    }")
        em.line("}")

    def loop_barrier(self, em):
        """Order the memory accesses of the threads running the current code: a
        block's, or one worker's lanes (``pyg_lanes``, in one warp) inside a worker
        loop.  Lanes are named, never taken from ``__activemask()``, which need not
        hold a worker's lanes together."""
        em.line("__syncwarp(pyg_lanes);" if "worker" in em.state.part
                else "__syncthreads();")

    def fini(self, em, loop):
        """Each FINI call, at the level where the loop's threads join (the gang level
        leaves a block's partial in the scratch for the next launch)."""
        for call in loop.fini:
            em.at(call.line)
            if isinstance(call.type, T.Array):
                self._sum_thread_copies(em, loop, call)
            else:
                self._fini_scalar(em, loop, call)

    def _fini_scalar(self, em, loop, call):
        t = call.type
        if call.level != loop.levels[0]:        # an inner level: a thread's own copies
            em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
        elif call.level == "vector":
            c = self.type_name(t)               # every lane shuffles ("and" short-cuts)
            em.line(f"for (int o = blockDim.x / 2; o > 0; o /= 2) {{ {c} pyg_o = "
                    f"{self._shfl(t, call.local)}; "
                    f"{call.local} = {em.combine(call.op, t, call.local, 'pyg_o')}; }}")
            em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
        else:
            idle = [lv for lv in LEVELS[1:] if lv not in em.state.part | set(loop.levels)]
            lead = self.first(idle)             # one per block
            value = f"{lead} ? {call.local} : {self.identity(call.op, t)}" if lead else call.local
            if call.level == "worker":
                self.halving_tree(em, call.op, t, value, call.outer)
                return
            c = self.type_name(t)
            part = f"pyg_p{em.uid()}"
            em.line(f"{c} {part} = {self.identity(call.op, t)};")
            if loop.levels == ("gang",):            # every thread of the block has it
                em.line(f"{part} = {call.local};")
            else:
                self.halving_tree(em, call.op, t, value, part)
            into = self.partial(em, "pyg_g", call.rid, t)
            em.line(f"if ({self.group_leader()}) {into} = {part};")

    def _sum_thread_copies(self, em, loop, call):
        """An array reduction's FINI: threads that ran the loop redundantly empty their
        copies; after a worker or vector loop the threads of the loop sum their copies
        into the enclosing array, each a slice of its elements (a gang loop's copies
        are summed by the launch that follows it: `_sum_copies`)."""
        t = call.type.elem
        c = self.type_name(t)
        local = next(r.local for r in loop.reductions if r.rid == call.rid)   # innermost
        st = em.state
        idle = [lv for lv in LEVELS if lv not in st.part | set(loop.levels)]
        lanes = loop.levels == ("vector",)      # a worker's lanes, else the block's threads
        summed = ("vector",) if lanes else LEVELS[1:]
        inner = {lv for n in ir.walk(loop.body) if isinstance(n, ir.ParLoop) for lv in n.levels}
        empty = [lv for lv in idle if lv not in inner and (lv in summed or "gang" in loop.levels)]
        if empty:                       # threads that ran it redundantly count once
            em.line(f"if (!({self.first(empty)})) "
                    + self.fill(em, local, call.type, call.op))
        if "gang" in loop.levels:
            return
        idle = [lv for lv in idle if lv not in summed]      # those that sum, each a slice
        if call.outer not in em.cur.sizes:      # global memory: one gang stores
            idle = ["gang"] + [lv for lv in idle if lv != "gang"]
        writer = self.first(dict.fromkeys(idle)) or "1"
        base = "threadIdx.y * blockDim.x" if lanes else "0"
        n = "blockDim.x" if lanes else "blockDim.x * blockDim.y"
        me = "threadIdx.x" if lanes else "threadIdx.y * blockDim.x + threadIdx.x"
        sync = "__syncwarp(pyg_lanes);" if lanes else "__syncthreads();"
        u = em.uid()
        em.line(sync)
        first = (f"unsigned long long *pyg_b{u} = pyg_priv + ((blockIdx.x * blockDim.y) "
                 f"* blockDim.x + {base}) * ({st.stride}) + {st.mine[local]};")
        with self.each_element(em, em.count(local, call.type), me, n, u, [first]):
            em.line(f"{c} a = {self.identity(call.op, t)};")
            em.line(f"for (long long q = 0; q < {n}; ++q)")
            copy = f"(({c} *)(pyg_b{u} + q * ({st.stride})))[e]"
            em.line(f"    a = {em.combine(call.op, t, 'a', copy)};")
            into = f"{call.outer}[e]"
            if call.outer in em.cur.sizes:      # the copy of the group's first thread
                into = f"(({c} *)(pyg_b{u} - ({st.mine[local]}) + {st.mine[call.outer]}))[e]"
            em.line(f"if ({writer}) {into} = {em.combine(call.op, t, into, 'a')};")
        em.line(sync)

    def _shfl(self, t, v):
        if t.is_bool:
            return f"(bool)__shfl_xor_sync(pyg_lanes, (int){v}, o)"
        if t.is_complex:
            return self.complex_make(t, self._shfl(t.real, f"({v}).x"),
                                     self._shfl(t.real, f"({v}).y"))
        return f"__shfl_xor_sync(pyg_lanes, {v}, o)"


HOOKS = CudaDialect()
