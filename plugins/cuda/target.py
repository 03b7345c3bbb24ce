"""The CUDA C dialect: kernels as ``extern "C" __global__`` functions.

Launch contract (see the CUDA plugin): one ``unsigned long long`` kernel parameter a word
(`pygomp.compiler.emit.arg_words`), then the global scratch's address when the kernel
has one; gangs are blocks (``gridDim.x``), workers ``blockDim.y``, vector lanes
``blockDim.x`` (a power of two up to 32, so that one worker's lanes sit in one warp).
No kernel needs its blocks resident at once: any grid works.

Execution model: code outside a partitioned level runs redundantly on every thread of
that level; stores, atomics and the kernel's result are done by the level's thread 0
only.  A loop whose body syncs is padded so that every thread of a level runs the same
number of trips (the body is guarded), which keeps ``__syncthreads`` uniform; the others
are plain strided loops.  A worker or vector loop has a ``__syncthreads`` on each side
(``__syncwarp`` inside a worker loop), so that the threads of a block see each other's
stores.

Reductions, at the level where the loop's threads join: vector lanes by warp shuffles
(``__shfl_xor_sync``, which leaves the result in every lane); the threads of a block by
a tree in dynamic shared memory (``tree_bytes``); gangs by one partial a block in the
global scratch, combined by the last block to finish.  The same "join" follows a gang
loop after which the kernel goes on: every block fences its stores and counts itself in
an atomic counter (scratch word 0); the last one resets the counter, combines the
partials and goes on alone as gang 0 of 1, the others end.  Before the first join,
nothing orders what gang 0 stores outside the gang loops before what the other gangs
read: a kernel where they may read it is refused (`unordered`), rather than run wrong.
"""
from __future__ import annotations

import linecache

from pygomp.compiler import ir
from pygomp.compiler import types as T
from pygomp.compiler.emit import Dialect, arg_words, arith_helpers, word_kinds
from pygomp.errors import CompileError
from pygomp.runtime.plugin import KernelInfo

LEVEL_ID = {"gang": ("pyg_g", "pyg_G"), "worker": ("threadIdx.y", "blockDim.y"),
            "vector": ("threadIdx.x", "blockDim.x")}
ORDER = ("gang", "worker", "vector")
LEAD = "threadIdx.x == 0 && threadIdx.y == 0"        # thread 0 of a block
PARTIALS = 8            # scratch words before the partials (word 0: the join counter)

_TYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
          "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
          "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
          "float64": "double"}
_ATOMIC_ADD = {"int32": "int", "uint32": "unsigned int", "int64": "unsigned long long",
               "uint64": "unsigned long long", "float32": "float", "float64": "double"}


_PREAMBLE = ("#define INFINITY __int_as_float(0x7f800000)\n"   # NVRTC has no math.h
             "#define NAN __int_as_float(0x7fffffff)\n\n"
             + arith_helpers("__device__ __forceinline__", lambda t: _TYPES[t.name], "f"))


def joins(body, tail=False) -> set:
    """The ids of the gang loops that end in a join: those with reductions, and those
    after which the kernel goes on (``tail``: something follows the enclosing code)."""
    out = set()
    for i, s in enumerate(body):
        rest = tail or i + 1 < len(body)
        if isinstance(s, ir.ParLoop):
            if "gang" in s.levels and (rest or s.reductions):
                out.add(id(s))
        elif isinstance(s, ir.If):
            out |= joins(s.body, rest) | joins(s.orelse, rest)
        elif isinstance(s, (ir.For, ir.While)):
            out |= joins(s.body, True)
    return out


def _arrays(node, helpers=False):
    """The global arrays ``node`` reads, and those a helper gets (it may store to them);
    with ``helpers``, only the latter."""
    out = set()
    for n in ir.walk(node):
        if isinstance(n, ir.Index) and n.array.type.space == "global" and not helpers:
            out.add(n.array.name)
        elif isinstance(n, ir.HelperCall):
            out.update(a.name for a in n.args
                       if isinstance(a, ir.ArrayRef) and a.type.space == "global")
    return out


def unordered(fn, ends):
    """A global store that code outside the gang loops makes (gang 0 alone stores) while
    other gangs run, of an array some gang may read before a join orders them: (array,
    store line, read line), or None."""
    events = []

    def linear(body, cond, gang):
        """Reads, stores (not those of gang loops) and joins in the order they happen."""
        for s in body:
            if isinstance(s, ir.ParLoop):
                events.append(("read", _arrays(s.dims), s.line))
                inside = gang or "gang" in s.levels
                linear(s.body, cond, inside)
                if inside and not gang and id(s) in ends and not cond:
                    events.append(("join", None, s.line))
            elif isinstance(s, ir.If):
                events.append(("read", _arrays(s.cond), s.line))
                linear(s.body, True, gang)
                linear(s.orelse, True, gang)
            elif isinstance(s, (ir.For, ir.While)):
                head = [getattr(s, f) for f in ("start", "stop", "step", "cond") if hasattr(s, f)]
                events.append(("read", _arrays(head), s.line))
                linear(s.body, cond, gang)
                linear(s.body, cond, gang)      # what one trip stores, the next reads
            else:
                target = getattr(s, "target", None)
                events.append(("read", _arrays([s.value] + target.indices)
                               if isinstance(target, ir.Index) else _arrays(s), s.line))
                stores = _arrays(s, helpers=True)
                if isinstance(target, ir.Index) and target.array.type.space == "global":
                    stores.add(target.array.name)
                events.extend(("store", a, s.line) for a in stores if not gang)

    linear(fn.body, False, False)
    stored = {}
    for kind, what, line in events:
        if kind == "join":
            return None
        if kind == "store":
            stored.setdefault(what, line)
        else:
            for a in what:
                if a in stored:
                    return a, stored[a], line
    return None


def _partial(em, c, gang, rid):
    """A gang's partial of a reduction in the global scratch (of C type ``c``)."""
    slots = em.state["slots"]
    return f"*(volatile {c} *)&pyg_gs[{PARTIALS} + {gang} * {len(slots)} + {slots[rid]}]"


def _syncs(body) -> bool:
    """Whether ``body`` has a barrier (or a loop with its syncs), helpers included."""
    return any(isinstance(n, (ir.Barrier, ir.ParLoop))
               or isinstance(n, ir.HelperCall) and _syncs(n.fn.body) for n in ir.walk(body))


def _scan(fn):
    """(gang reduction slots {rid: slot}, whether a block-wide tree is used, the levels
    the kernel partitions as "gwv" letters)."""
    slots, tree, levels = {}, False, set()
    for n in ir.walk(fn.body):
        if isinstance(n, ir.ParLoop):
            levels.update(n.levels)
            if n.reductions and "gang" in n.levels:
                for r in n.reductions:
                    slots[r.rid] = len(slots)
            tree = tree or bool(n.reductions) and n.levels[0] != "vector"
    return slots, tree, "".join(lv[0] for lv in ORDER if lv in levels)


class CudaDialect(Dialect):
    target = "cuda"

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
        em.state["part"] = ORDER          # a helper's stores are its caller's business
        ret = "void" if fn.ret is T.VOID else self.type_name(fn.ret)
        em.line(f"static __device__ {ret} {fn.name}({', '.join(params) or 'void'})")
        em.line("{")

    def kernel_open(self, em, fn):
        words = arg_words(fn)
        slots, tree, _ = _scan(fn)
        ends = joins(fn.body)
        em.state.update(part=(), slots=slots, joins=ends, cells=[])
        bad = unordered(fn, ends)
        if bad:
            name, at, read = bad
            raise CompileError(
                f"{name} is stored here by code outside the gang loops (gang 0 alone stores) "
                f"and read at line {read} by gangs that may run before the store: the CUDA "
                f"dialect cannot order them yet (store it in a gang loop of its own, or "
                f"before the kernel)", fn.file, at, linecache.getline(fn.file, at))
        params = [f"unsigned long long w{i}" for i in range(len(words))]
        if ends:
            params.append("unsigned long long *pyg_gs")
        em.line(f'extern "C" __global__ void {fn.name}({", ".join(params) or "void"})')
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
            em.line("long long pyg_g = blockIdx.x, pyg_G = gridDim.x;")
            em.line("const unsigned pyg_lanes = blockDim.x >= 32 ? 0xffffffffu : "
                    "((1u << blockDim.x) - 1) << (threadIdx.y * blockDim.x & 31);")
            if tree:
                em.line("extern __shared__ unsigned long long pyg_tree[];")
            if ends:
                em.line("__shared__ int pyg_last;")
        em.state["kernel_at"] = len(em.out)

    def kernel_close(self, em, fn):
        at = em.state["kernel_at"]
        em.out[at:at] = ["    " + c for c in em.state["cells"]]
        em.line("}")

    def leader(self, em, space="global"):
        """The thread that stores for those running the current code redundantly: for
        global memory one in the grid, for a gang's shared memory one a block, for a
        thread's own memory each."""
        levels = {"global": ORDER, "local": ORDER[1:], "private": ()}[space]
        idle = [lv for lv in levels if lv not in em.state.get("part", ())]
        return " && ".join(f"{LEVEL_ID[lv][0]} == 0" for lv in idle) or "1"

    def kernel_return(self, em, fn, value):
        if value is not None:
            em.line(f"if ({self.leader(em)}) *{fn.ret_param} = {value};")
        em.line("return;")

    def store(self, em, s):
        cond = self.leader(em, s.target.array.type.space)
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
        space = s.target.array.type.space
        op = (f"{target} += {value};" if space == "private"
              else f"atomicAdd(({c} *)&{target}, ({c}){value});")
        cond = self.leader(em, space)
        em.line(op if cond == "1" else f"if ({cond}) {op}")

    def barrier(self, em):
        em.line("__syncthreads();")

    def array_decl(self, em, name, t):
        if not t.shape:
            raise _not_yet(em, f"the private array {name!r} sized at run time")
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
            if id(loop) in em.state["joins"]:
                em.at(loop.line)
                self._join(em, loop)
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
        gang level leaves a block's partial in the scratch for the join)."""
        if isinstance(call.type, T.Array):
            raise _not_yet(em, f"the array reduction on {call.outer!r}")
        loop = em.state["loops"][-1]
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

    def _join(self, em, loop):
        """After a gang loop: the last block to finish goes on as gang 0 of 1 with the
        combined reductions; the others end."""
        em.line("__threadfence();")                 # this thread's stores, for the last block
        em.line("__syncthreads();")
        em.line(f"if ({LEAD}) pyg_last = atomicAdd((unsigned int *)pyg_gs, 1u) "
                f"== (unsigned int)(pyg_G - 1);")
        em.line("__syncthreads();")
        em.line("if (!pyg_last) return;")
        em.line("__threadfence();")
        em.line(f"if ({LEAD}) *(volatile unsigned int *)pyg_gs = 0;")
        for r in loop.reductions:
            c = self.type_name(r.type)
            u = em.uid()
            a, q = f"pyg_a{u}", f"pyg_q{u}"
            em.line(f"{c} {a} = {self.identity(r.op, r.type)};")
            em.line(f"for (long long {q} = threadIdx.y * blockDim.x + threadIdx.x; {q} < pyg_G; "
                    f"{q} += blockDim.x * blockDim.y)")
            em.line(f"    {a} = {em.combine(r.op, r.type, a, _partial(em, c, q, r.rid))};")
            self._tree(em, r.op, r.type, a, r.var)
        em.line("pyg_g = 0; pyg_G = 1;")

    # -- the kernel contract ---------------------------------------------------------
    def kernel_info(self, em, fn):
        slots, tree, levels = _scan(fn)
        scratch = bool(em.state["joins"])
        return KernelInfo(fn.pyname, (fn.name,), word_kinds(fn), (levels,),
                          scratch_bytes=8 * PARTIALS if scratch else 0,
                          gang_bytes=8 * len(slots), tree_bytes=8 if tree else 0)


def _not_yet(em, what):
    return CompileError(f"{what}: not supported by the CUDA dialect yet", em.cur.file,
                        em.cur.line)


HOOKS = CudaDialect()
