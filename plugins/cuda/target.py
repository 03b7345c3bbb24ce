"""The CUDA C dialect: kernels as ``extern "C" __global__`` functions.

The CUDA plugin compiles it to PTX (``nvcc -ptx``) but runs nothing yet, so the launch
contract is written down for the one that will:
- one ``unsigned long long`` kernel parameter a word (`pygomp.compiler.emit.arg_words`);
- gangs are blocks (``gridDim.x``), workers ``blockDim.y``, vector lanes ``blockDim.x``
  (a power of two up to 32, so that one gang's lanes of one worker sit in one warp);
- a kernel with a gang-level reduction synchronizes the grid (cooperative groups): it
  must be launched with ``cuLaunchCooperativeKernel``, at most the co-resident blocks.

Execution model: code outside a partitioned level runs redundantly on every thread of
that level; stores, atomics and the kernel's result are done by the level's thread 0
only.  Loops are padded so that every thread of a level runs the same number of trips
(the body is guarded), which keeps ``__syncthreads`` uniform.  Reductions: vector level
through warp shuffles; worker level through a ``__shared__`` cell (atomics, then
``__syncthreads``); gang level through a ``__device__`` cell and a grid sync.
"""
from __future__ import annotations

from dataclasses import replace

from pygomp.compiler import types as T
from pygomp.compiler.emit import Dialect, arg_words

LEVEL_ID = {"gang": ("blockIdx.x", "gridDim.x"), "worker": ("threadIdx.y", "blockDim.y"),
            "vector": ("threadIdx.x", "blockDim.x")}
ORDER = ("gang", "worker", "vector")

_TYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
          "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
          "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
          "float64": "double"}
_BITS = {"int32": ("unsigned int", "(unsigned int)", "(int)"),
         "int64": ("unsigned long long", "(unsigned long long)", "(long long)"),
         "float32": ("unsigned int", "__float_as_uint", "__uint_as_float"),
         "float64": ("unsigned long long", "(unsigned long long)__double_as_longlong",
                     "__longlong_as_double")}


def _preamble(fn):
    out = ["#define INFINITY __int_as_float(0x7f800000)",      # NVRTC has no math.h
           "#define NAN __int_as_float(0x7fffffff)", ""]
    for t in T.SCALARS.values():
        c = _TYPES[t.name]
        out.append(f"__device__ __forceinline__ {c} pyg_min_{t.name}({c} a, {c} b) "
                   f"{{ return b < a ? b : a; }}")
        out.append(f"__device__ __forceinline__ {c} pyg_max_{t.name}({c} a, {c} b) "
                   f"{{ return b > a ? b : a; }}")
        if t.is_signed:
            out.append(f"__device__ __forceinline__ {c} pyg_abs_{t.name}({c} a) "
                       f"{{ return a < 0 ? -a : a; }}")
    return "\n".join(out) + "\n"


class CudaDialect(Dialect):
    target = "cuda"

    def preamble(self, fn):
        return _preamble(fn)

    def type_name(self, t):
        return _TYPES[t.name]

    def pointer(self, t):
        return f"{self.type_name(t.elem)} *"

    def builtin(self, em, name):
        lv, what = {"gang_id": ("gang", 0), "worker_id": ("worker", 0),
                    "vector_id": ("vector", 0), "num_gangs": ("gang", 1),
                    "num_workers": ("worker", 1), "vector_length": ("vector", 1)}[name]
        return f"((long long){LEVEL_ID[lv][what]})"

    # -- kernel entry --------------------------------------------------------------
    def helper_open(self, em, fn, params):
        em.state["part"] = ORDER          # a helper's stores are its caller's business
        ret = "void" if fn.ret is T.VOID else self.type_name(fn.ret)
        em.line(f"static __device__ {ret} {fn.name}({', '.join(params) or 'void'})")
        em.line("{")

    def kernel_open(self, em, fn):
        words = arg_words(fn)
        em.state.update(part=(), rid_cells=[])
        params = ", ".join(f"unsigned long long w{i}" for i in range(len(words)))
        em.line(f'extern "C" __global__ void {fn.name}({params or "void"})')
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
        em.state["kernel_at"] = len(em.out)
        em.state["cells"] = []

    def kernel_close(self, em, fn):
        at = em.state["kernel_at"]
        cells = em.state["cells"]
        em.out[at:at] = ["    " + c for c in cells if c.startswith("__shared__")]
        start = next(i for i, l in enumerate(em.out) if l.startswith('extern "C"'))
        while start > 0 and em.out[start - 1].startswith("#line"):
            start -= 1
        em.out[start:start] = [c for c in cells if c.startswith("__device__")]
        em.line("}")

    def leader(self, em):
        idle = [lv for lv in ORDER if lv not in em.state.get("part", ())]
        return " && ".join(f"{LEVEL_ID[lv][0]} == 0" for lv in idle) or "1"

    def kernel_return(self, em, fn, value):
        if value is not None:
            em.line(f"if ({self.leader(em)}) *{fn.ret_param} = {value};")
        em.line("return;")

    def store(self, em, s):
        cond = self.leader(em)
        text = f"{em.expr(s.target)} = {em.expr(s.value)};"
        em.line(text if cond == "1" else f"if ({cond}) {text}")

    def atomic_add(self, em, s):
        cond = self.leader(em)
        target, value, t = em.expr(s.target), em.expr(s.value), s.target.type
        op = f"atomicAdd(&{target}, {value});"
        if t in (T.INT64,):
            op = f"atomicAdd((unsigned long long *)&{target}, (unsigned long long){value});"
        em.line(op if cond == "1" else f"if ({cond}) {op}")

    def barrier(self, em):
        em.line("__syncthreads();")

    def array_decl(self, em, name, t):
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
        em.line("{")
        with em.indent():
            for name, d in zip(trips, loop.dims):
                em.line(f"const long long {name} = {em.trip(d)};")
            em.line(f"const long long tot{u} = {' * '.join(trips)};")
            em.line(f"const long long P{u} = {P}, per{u} = (tot{u} + P{u} - 1) / P{u};")
            outer = em.state["part"]
            em.state["part"] = outer + levels
            em.state.setdefault("loops", []).append(loop)
            for c in loop.setup:
                em.stmt(c)
            for c in loop.init:
                em.stmt(c)
            em.line(f"for (long long j{u} = 0; j{u} < per{u}; ++j{u}) {{")
            with em.indent():
                em.line(f"const long long k{u} = j{u} * P{u} + ({p});")
                em.line(f"if (k{u} < tot{u}) {{")
                with em.indent():
                    for s in em.dim_values(loop, f"k{u}", trips):
                        em.line(s)
                    em.decls(loop.decls)
                    em.stmts(loop.body)
                em.line("}")
            em.line("}")
            for c in loop.fini:
                em.stmt(c)
            for c in loop.teardown:
                em.stmt(c)
            em.state["loops"].pop()
            em.state["part"] = outer
        em.line("}")

    def reduction(self, em, call):
        loop = em.state["loops"][-1]
        t = call.type
        c = self.type_name(t)
        top = call.level == loop.levels[0]        # the level where the loop's threads join
        cell = f"pyg_cell{call.rid}"
        if call.phase == "INIT":
            em.line(f"{c} {call.local} = {self.identity(call.op, t)};")
        elif call.phase == "SETUP" and top and call.level != "vector":
            cell_t = "int" if t.is_bool else c
            if call.level == "gang":
                em.state["cells"].append(f"__device__ {cell_t} {cell};")
                em.line(f"if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0) "
                        f"{cell} = {self.identity(call.op, t)};")
                em.line("cooperative_groups::this_grid().sync();")
            else:
                em.state["cells"].append(f"__shared__ {cell_t} {cell};")
                em.line(f"if (threadIdx.x == 0 && threadIdx.y == 0) "
                        f"{cell} = {self.identity(call.op, t)};")
                em.line("__syncthreads();")
        elif call.phase == "FINI":
            if not top:
                em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
            elif call.level == "vector":
                em.line(f"for (int o = blockDim.x / 2; o > 0; o /= 2) "
                        f"{call.local} = {em.combine(call.op, t, call.local, self._shfl(t, call.local))};")
                em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, call.local)};")
            else:
                outer = em.state["part"][:-len(loop.levels)]
                idle = [lv for lv in ORDER if lv not in outer and lv not in loop.levels]
                lead = " && ".join(f"{LEVEL_ID[lv][0]} == 0" for lv in idle) or "1"
                em.line(f"if ({lead}) {self._atomic(call.op, t, cell, call.local)}")
                sync = ("cooperative_groups::this_grid().sync();" if call.level == "gang"
                        else "__syncthreads();")
                em.line(sync)
                em.line(f"{call.outer} = {em.combine(call.op, t, call.outer, f'({c}){cell}')};")
                em.line(sync)

    def _shfl(self, t, v):
        if t.is_bool:
            return f"(bool)__shfl_xor_sync(__activemask(), (int){v}, o)"
        return f"__shfl_xor_sync(__activemask(), {v}, o)"

    def _atomic(self, op, t, cell, v):
        if op == "+" and t in (T.INT32, T.FLOAT32, T.FLOAT64):
            return f"atomicAdd(&{cell}, {v});"
        if t.is_bool:
            fn = {"&": "atomicAnd", "|": "atomicOr", "^": "atomicXor", "and": "atomicAnd",
                  "or": "atomicOr", "max": "atomicMax", "min": "atomicMin"}.get(op)
            if fn:
                return f"{fn}(&{cell}, (int){v});"
        u, to_bits, from_bits = _BITS[t.name]
        new = self._combine_text(op, t, f"{from_bits}(old_)", v)
        return (f"{{ {u} *a_ = ({u} *)&{cell}; {u} old_ = *a_, prev_; do {{ prev_ = old_; "
                f"old_ = atomicCAS(a_, prev_, {to_bits}({new})); }} while (old_ != prev_); }}")

    def _combine_text(self, op, t, a, b):
        if op in ("max", "min"):
            return f"pyg_{op}_{t.name}({a}, {b})"
        if op in ("and", "or"):
            return f"({self.type_name(t)})(({a}) {'&&' if op == 'and' else '||'} ({b}))"
        return f"(({a}) {op} ({b}))"

    # -- the kernel contract ---------------------------------------------------------
    def kernel_info(self, em, fn):
        """A gang-level reduction synchronizes the grid: a cooperative launch."""
        info = super().kernel_info(em, fn)
        if any(c.startswith("__device__") for c in em.state.get("cells", ())):
            info = replace(info, cooperative=True)
        return info


HOOKS = CudaDialect()
