"""The CUDA C dialect: kernels as ``extern "C" __global__`` functions, lowered by
`pygomp.compiler.workgroup` with the "worker is a warp" strategy of
`pygomp.compiler.warps`: this module spells it.

Gangs are blocks (``gridDim.x``), workers ``blockDim.y``, vector lanes ``blockDim.x``
(a power of two up to 32, so that one worker's lanes sit in one warp).  The arguments
are one ``unsigned long long`` parameter per word (`pygomp.runtime.plugin.KernelInfo`),
then the global scratch's address and the private scratch's, where the kernel uses them.

Loops and reductions: see `pygomp.compiler.warps` (``__syncwarp`` orders a worker's
lanes, ``__shfl_xor_sync`` reduces them).  No kernel needs its blocks resident at once:
no grid-wide sync.
"""
from __future__ import annotations

from pygomp.compiler import types as T
from pygomp.compiler.argwords import arg_words
from pygomp.compiler.arith import arith_helpers
from pygomp.compiler.warps import WarpWorkers
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


class CudaDialect(WarpWorkers):
    target = "cuda"
    helper_prefix = "static __device__ "
    inline = "__device__ __forceinline__"      # bounds checking's functions

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

    # -- the warp strategy's spellings ----------------------------------------------
    unroll = "#pragma unroll 4"
    warp_sync = "__syncwarp(pyg_lanes);"    # named lanes: ``__activemask()`` need not
                                            # hold a worker's lanes together

    def shuffle_xor(self, value, lane):
        return f"__shfl_xor_sync(pyg_lanes, {value}, {lane})"


HOOKS = CudaDialect()
