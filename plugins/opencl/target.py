"""The OpenCL C dialect: kernels for any OpenCL device (OpenCL C 1.2 and later),
lowered by `pygomp.compiler.workgroup` with the "group-wide barrier" strategy of
`pygomp.compiler.groupwide`: this module spells it.

Geometry (see the OpenCL plugin): a 2-D NDRange; a gang is a work-group
(``get_group_id(1)``), a worker ``get_local_id(1)``, a vector lane ``get_local_id(0)``.
An array argument is a buffer and a byte offset (two parameters per word of
`pygomp.runtime.plugin.KernelInfo`), a scalar its OpenCL C type.  Statements after a
``return`` run predicated rather than skipped by an early return, which PoCL's
work-groups get wrong before a barrier (`guarded`).

Loops and reductions: see `pygomp.compiler.groupwide`.  Address spaces: mapped arrays are ``__global``,
team-shared ones ``__local``, the rest private; helpers are specialized per
address-space signature by the front end (checked by `pygomp.compiler.addrspace`), so
no generic address space is needed; where a device has one, helpers take plain pointers.
``FP_CONTRACT OFF``: ``a * b + c`` rounds the product as Python does (OpenCL C may fuse
it into an fma, whose longer latency also slows a chain of dependent sums on CPUs).

On CPU devices (PoCL) the plugin runs these kernels with work-groups of one work-item
and defines ``PYGOMP_SINGLE_ITEM_GROUPS``: barriers and trees vanish (PoCL's compile time
grows fast with barriers), each work-item takes a contiguous block of iterations.
"""
from __future__ import annotations

from pygomp.compiler import addrspace, ir
from pygomp.compiler import types as T
from pygomp.compiler.argwords import arg_words
from pygomp.compiler.arith import arith_helpers
from pygomp.compiler.groupwide import GroupWide
from pygomp.errors import CompileError

C_TYPES = {"bool": "uchar", "int8": "char", "uint8": "uchar", "int16": "short",
           "uint16": "ushort", "int32": "int", "uint32": "uint", "int64": "long",
           "uint64": "ulong", "float32": "float", "float64": "double",
           "complex64": "pyg_complex64", "complex128": "pyg_complex128"}


def _preamble():
    out = ["#ifdef PYGOMP_SINGLE_ITEM_GROUPS",
           "#define PYG_BARRIER()",
           "#else",
           "#define PYG_BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
           "#endif",
           "#ifdef PYGOMP_GENERIC_ADDRESS_SPACE",      # helpers take generic pointers
           "#define PYG_AS_global", "#define PYG_AS_local", "#define PYG_AS_private",
           "#else",
           "#define PYG_AS_global __global", "#define PYG_AS_local __local",
           "#define PYG_AS_private __private",
           "#endif",
           "#pragma OPENCL FP_CONTRACT OFF",
           "#ifdef cl_khr_fp64", "#pragma OPENCL EXTENSION cl_khr_fp64 : enable", "#endif",
           "#ifdef cl_khr_int64_base_atomics",
           "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable", "#endif", ""]
    out.append(arith_helpers("inline", lambda t: C_TYPES[t.name], "", lambda t: (
        ("#ifdef cl_khr_fp64", "#endif") if t == T.FLOAT64 else ("", ""))))
    for sp, q in (("g", "__global"), ("l", "__local")):
        out.append(f"inline void pyg_atomic_add_float32_{sp}(volatile {q} float *p, float v)\n"
                   f"{{ union {{ uint u; float f; }} o, n;\n"
                   f"  do {{ o.f = *p; n.f = o.f + v; }}\n"
                   f"  while (atomic_cmpxchg((volatile {q} uint *)p, o.u, n.u) != o.u); }}")
        out.append("#if defined(cl_khr_fp64) && defined(cl_khr_int64_base_atomics)")
        out.append(f"inline void pyg_atomic_add_float64_{sp}(volatile {q} double *p, double v)\n"
                   f"{{ union {{ ulong u; double f; }} o, n;\n"
                   f"  do {{ o.f = *p; n.f = o.f + v; }}\n"
                   f"  while (atom_cmpxchg((volatile {q} ulong *)p, o.u, n.u) != o.u); }}")
        out.append("#endif")
    return "\n".join(out) + "\n"


_PREAMBLE = _preamble()


_DOUBLES = (T.FLOAT64, T.COMPLEX128)


def _uses_float64(fn) -> bool:
    fns = [fn] + list(fn.helpers)
    for f in fns:
        for _, t in list(f.params) + list(f.decls) + [(None, f.ret)]:
            e = getattr(t, "elem", t)
            if e in _DOUBLES or isinstance(e, T.Record) and any(
                    m[2] in _DOUBLES for m in e.members):
                return True
        for n in ir.walk(f.body):
            if getattr(getattr(n, "type", None), "elem", getattr(n, "type", None)) in _DOUBLES:
                return True
    return False


def _atomic_types(fn):
    return {n.target.type for n in ir.walk(fn.body) if isinstance(n, (ir.AtomicAdd, ir.Atomic))}


_ATOM = {"add": "atom_add", "exchange": "atom_xchg", "cas": "atom_cmpxchg"}
ID = {"gang": "pyg_g", "worker": "(long)get_local_id(1)", "vector": "(long)get_local_id(0)"}
COUNT = {"gang": "pyg_G", "worker": "(long)get_local_size(1)",
         "vector": "(long)get_local_size(0)"}


class OpenCLDialect(GroupWide):
    target = "opencl"
    float32_suffix = ""         # OpenCL C overloads its math functions
    hoist_loads = True          # PoCL reads A[i, k] again in every trip of a j loop
    helper_prefix = ""
    inline = "inline"           # bounds checking's functions
    any_group_size = True
    one_group = True

    level_id, level_count = ID, COUNT
    block_item = "(long)get_local_id(1) * get_local_size(0) + get_local_id(0)"
    block_size = "(long)get_local_size(0) * get_local_size(1)"
    grid_item = "get_global_id(1) * get_global_size(0) + get_global_id(0)"
    grid_size = launch_items = "get_global_size(0) * get_global_size(1)"
    glob, local, team_space = "__global ", "__local ", "__local"
    cpu_blocks, single_items = "PYGOMP_DEVICE_CPU", "PYGOMP_SINGLE_ITEM_GROUPS"

    # -- text pieces ---------------------------------------------------------------
    fp64_guard = ("#ifdef cl_khr_fp64", "#endif")
    complex_struct = True
    index32 = "pyg_index"       # 64-bit on CPUs: int's sign extensions cost more there
    index_decl = ("#ifdef PYGOMP_DEVICE_CPU\ntypedef long pyg_index;\n#else\n"
                  "typedef int pyg_index;\n#endif")

    def preamble(self, fn):
        return _PREAMBLE

    def type_name(self, t):
        if isinstance(t, T.Record):
            return t.c
        return C_TYPES[t.name] if isinstance(t, T.Scalar) else "void"

    vector_types, vector_blocks = True, "PYGOMP_VECTOR_LOOPS"

    def vector_type(self, t, n):
        return f"{self.type_name(t)}{n}"

    def vector_load(self, n, address):
        return f"vload{n}(0, {address})"

    def vector_store(self, n, value, address):
        return f"vstore{n}({value}, 0, {address})"

    def vector_convert(self, t, n, text):
        return f"convert_{self.type_name(t)}{n}({text})"

    def pointer(self, t):
        """A helper's pointer parameter: its inferred space, or generic where the
        device has a generic address space (the plugin defines the macro)."""
        return f"PYG_AS_{t.space} {self.type_name(t.elem)} *"

    def builtin(self, em, name):
        if name in ("gang_id", "num_gangs"):
            return "pyg_g" if name == "gang_id" else "pyg_G"
        lv, what = name.split("_")[0], name
        if what in ("worker_id", "vector_id"):
            return ID[lv]
        return COUNT["worker" if what == "num_workers" else "vector"]

    def scratch_word(self, c, index):
        return f"*(__global {c} *)(pyg_scratch + {index})"

    # -- the kernel entries ----------------------------------------------------------
    def entries(self, em, fn):
        addrspace.check(fn)
        return super().entries(em, fn)

    def kernel_head(self, em, fn):
        params = []
        for name, t, role in arg_words(fn):
            if role in ("array", "ret"):
                elem = self.type_name(t.elem if role == "array" else t)
                params += [f"__global {elem} *{name}__base", f"ulong {name}__off"]
            elif role == "shape":
                params.append(f"long pyg_{name}")          # see `prologue`
            else:
                params.append(f"{self.type_name(t)} {name}")
        if self.has_scratch(em.state):
            params.append("__global ulong *pyg_scratch")
        if fn.sizes:                # each work-item's own part, in a buffer of its own
            params.append("__global ulong *restrict pyg_priv")
        if em.state.tree:
            params.append("__local ulong *pyg_tree")
        return f"__kernel void {em.entry}({', '.join(params)})"

    def prologue(self, em, fn):
        """The arrays' pointers and extents.  An extent is never negative: through
        ``max(.., 0)`` LLVM no longer takes it for a stride that may be 1, which it
        checks at run time for a vector copy of the loop, leaving the other copy (the
        one that runs) scalar and its reductions one long chain."""
        for name, t, role in arg_words(fn):
            if role in ("array", "ret"):
                elem = self.type_name(t.elem if role == "array" else t)
                em.line(f"__global {elem} *{name} = (__global {elem} *)"
                        f"((__global char *){name}__base + {name}__off);")
            elif role == "shape":
                em.line(f"const long {name} = max(pyg_{name}, 0L);")
        em.line("const long pyg_g = get_group_id(1), pyg_G = get_num_groups(1);")

    # -- statements with side effects ------------------------------------------------
    def atomic(self, em, s, target, value):
        t = s.target.type
        q = "g" if s.target.array.type.space == "global" else "l"
        if t.name in ("int32", "uint32"):
            return f"atomic_add(&{target}, {value});"
        if t.name in ("int64", "uint64"):
            return f"atom_add(&{target}, {value});"
        if t.is_float:
            return f"pyg_atomic_add_{t.name}_{q}(&{target}, {value});"
        raise CompileError(f"atomic_add on {t} is not supported on OpenCL (use int32, "
                           f"int64, uint32, uint64, float32 or float64)",
                           em.cur.file, s.line or em.cur.line)

    def print_item(self, t, value):
        if t.is_int and t.size == 8:        # OpenCL's long is 64 bits, and "ll" no length
            return ("%ld", f"(long)({value})") if t.is_signed else ("%lu", f"(ulong)({value})")
        return super().print_item(t, value)

    def atomic_native(self, em, a, ptr):
        t, op = a.type, a.op
        if t.name in ("int32", "uint32") or (t == T.FLOAT32 and op == "exchange"):
            fn = {"exchange": "atomic_xchg", "cas": "atomic_cmpxchg"}.get(op, f"atomic_{op}")
        elif t.name in ("int64", "uint64") and op in _ATOM:    # cl_khr_int64_base_atomics
            fn = _ATOM[op]
        else:
            return None
        return f"{fn}({ptr}, pyg_e, pyg_v)" if op == "cas" else f"{fn}({ptr}, pyg_v)"

    def atomic_pointer(self, space, c):
        return f"volatile __{space} {c} *"

    def atomic_swap(self, space, size, ptr, old, new):
        return f"{'atomic' if size == 4 else 'atom'}_cmpxchg({ptr}, {old}, {new})"

    def barrier(self, em):
        em.line("PYG_BARRIER();")

    # -- bounds checking ------------------------------------------------------------
    def claim(self, record):
        return f"atomic_cmpxchg((volatile __global int *){record}, 0, 1) == 0"

    def record_pointer(self):
        return "__global long *"        # a global pointer even where helpers take generic

    # -- the kernel contract -----------------------------------------------------------
    def requires(self, fn):
        needs = set()
        if _uses_float64(fn):
            needs.add("fp64")
        if any(t.size == 8 for t in _atomic_types(fn)):
            needs.add("int64_atomics")
        return tuple(sorted(needs))


HOOKS = OpenCLDialect()
