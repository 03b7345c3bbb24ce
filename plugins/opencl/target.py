"""The OpenCL C dialect: kernels for any OpenCL device (OpenCL C 1.2 and later).

Geometry (see the OpenCL plugin): a 2-D NDRange; a gang is a work-group
(``get_group_id(1)``), a worker ``get_local_id(1)``, a vector lane ``get_local_id(0)``.
Code outside a level's loops runs redundantly on that level (OpenACC's gang-redundant,
worker-single and vector-single modes): private values are computed by everyone, while
stores to arrays, atomics and the kernel's result are done by one work-item only.

Loops and reductions: see loops.py.  Address spaces: mapped arrays are ``__global``,
team-shared ones ``__local``, the rest private; helpers are specialized per
address-space signature by the front end (checked by `pygomp.compiler.addrspace`), so
no generic address space is needed; where a device has one, helpers take plain pointers.

On CPU devices (PoCL) the plugin runs these kernels with work-groups of one work-item
and defines ``PYGOMP_SINGLE_ITEM_GROUPS``: barriers and trees vanish (PoCL's compile time
grows fast with barriers), each work-item takes a contiguous block of iterations.
"""
from __future__ import annotations

import math

from pygomp.compiler import addrspace, ir
from pygomp.compiler import types as T
from pygomp.compiler.emit import Dialect, arg_words, arith_helpers, word_kinds
from pygomp.errors import CompileError
from pygomp.runtime.plugin import KernelInfo

from .loops import COUNT, ID, LEVELS, LoopLowering, needs_join, scan

C_TYPES = {"bool": "uchar", "int8": "char", "uint8": "uchar", "int16": "short",
           "uint16": "ushort", "int32": "int", "uint32": "uint", "int64": "long",
           "uint64": "ulong", "float32": "float", "float64": "double"}


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


def _uses_float64(fn) -> bool:
    fns = [fn] + list(fn.helpers)
    for f in fns:
        for _, t in list(f.params) + list(f.decls) + [(None, f.ret)]:
            if t == T.FLOAT64 or (isinstance(t, T.Array) and t.elem == T.FLOAT64):
                return True
        for n in ir.walk(f.body):
            t = getattr(n, "type", None)
            if t == T.FLOAT64 or (isinstance(t, T.Array) and t.elem == T.FLOAT64):
                return True
    return False


def _atomic_types(fn):
    return {n.target.type for n in ir.walk(fn.body) if isinstance(n, ir.AtomicAdd)}


class OpenCLDialect(LoopLowering, Dialect):
    target = "opencl"
    float32_suffix = ""         # OpenCL C overloads its math functions

    # -- text pieces ---------------------------------------------------------------
    def preamble(self, fn):
        return _PREAMBLE

    def type_name(self, t):
        return C_TYPES[t.name] if isinstance(t, T.Scalar) else "void"

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

    def helper_open(self, em, fn, params):
        em.state["part"] = frozenset(LEVELS)    # a helper stores as its caller runs it
        em.state["active"] = None
        ret = "void" if fn.ret is T.VOID else self.type_name(fn.ret)
        em.line(f"{ret} {fn.name}({', '.join(params) or 'void'})")
        em.line("{")

    # -- the kernel entry ------------------------------------------------------------
    def kernel_open(self, em, fn):
        st = em.state
        st["part"] = frozenset()
        st["active"] = None
        st["hoisted"] = []
        st["gang_slots"] = {}
        for n in ir.walk(fn.body):
            if isinstance(n, ir.ParLoop) and "gang" in n.levels:
                for r in n.reductions:
                    st["gang_slots"][r.rid] = len(st["gang_slots"])
        st["joins"] = needs_join(fn.body)
        found = scan(fn)
        st["scratch"] = found["scratch"]
        addrspace.check(fn)
        params = []
        for name, t, role in arg_words(fn):
            if role in ("array", "ret"):
                elem = self.type_name(t.elem if role == "array" else t)
                params += [f"__global {elem} *{name}__base", f"ulong {name}__off"]
            else:
                params.append(f"{self.type_name(t)} {name}")
        if found["gscratch"]:
            params.append("__global ulong *pyg_gscratch")
        if st["scratch"]:
            params.append("__local ulong *pyg_scratch")
        em.line(f"__kernel void {fn.name}({', '.join(params)})")
        em.line("{")
        with em.indent():
            st["hoist_at"] = len(em.out)
            for name, t, role in arg_words(fn):
                if role in ("array", "ret"):
                    elem = self.type_name(t.elem if role == "array" else t)
                    em.line(f"__global {elem} *{name} = (__global {elem} *)"
                            f"((__global char *){name}__base + {name}__off);")
            em.line("long pyg_g = get_group_id(1), pyg_G = get_num_groups(1);")

    def kernel_close(self, em, fn):
        at = em.state["hoist_at"]
        em.out[at:at] = ["    " + h for h in em.state["hoisted"]]
        em.line("}")

    def kernel_return(self, em, fn, value):
        if value is not None:
            em.line(f"if ({self.leader(em)}) *{fn.ret_param} = {value};")
        em.line("return;")

    def leader(self, em, extra=()):
        """The condition that picks one work-item among those running redundantly."""
        part = em.state["part"] | set(extra)
        conds = []
        if "gang" not in part:
            conds.append("pyg_g == 0")
        if "worker" not in part:
            conds.append("get_local_id(1) == 0")
        if "vector" not in part:
            conds.append("get_local_id(0) == 0")
        return " && ".join(conds) or "1"

    # -- declarations ----------------------------------------------------------------
    def array_decl(self, em, name, t):
        decl = f"{self.type_name(t.elem)} {name}[{math.prod(t.shape)}];"
        if t.space == "local":                   # OpenCL: at kernel scope only
            if f"__local {decl}" not in em.state["hoisted"]:
                em.state["hoisted"].append(f"__local {decl}")
        else:
            em.line(decl)

    # -- statements with side effects ------------------------------------------------
    def store(self, em, s):
        text = f"{em.expr(s.target)} = {em.expr(s.value)};"
        if isinstance(s.target, ir.Index) and s.target.array.type.space != "private":
            cond = self.leader(em)
            if cond != "1":
                text = f"if ({cond}) {text}"
        em.line(text)

    def atomic_add(self, em, s):
        t = s.target.type
        sp = s.target.array.type.space
        target, value = em.expr(s.target), em.expr(s.value)
        q = "g" if sp == "global" else "l"
        if t.name in ("int32", "uint32"):
            text = f"atomic_add(&{target}, {value});"
        elif t.name in ("int64", "uint64"):
            text = f"atom_add(&{target}, {value});"
        elif t.is_float:
            text = f"pyg_atomic_add_{t.name}_{q}(&{target}, {value});"
        else:
            raise _error(em, s.line, f"atomic_add on {t} is not supported on OpenCL "
                                     f"(use int32, int64, uint32, uint64, float32 or float64)")
        if sp == "private":
            text = f"{target} += {value};"
        cond = self.leader(em) if sp != "private" else "1"
        em.line(text if cond == "1" else f"if ({cond}) {text}")

    def barrier(self, em):
        em.line("PYG_BARRIER();")

    # -- the kernel contract -----------------------------------------------------------
    def kernel_info(self, em, fn):
        """Levels, scratch and requirements of the kernel, for the plugin."""
        needs = set()
        if _uses_float64(fn):
            needs.add("fp64")
        if any(t.size == 8 for t in _atomic_types(fn)):
            needs.add("int64_atomics")
        st = scan(fn)
        levels = "".join(lv[0] for lv in LEVELS if lv in st["levels"])
        return KernelInfo(fn.pyname, (fn.name,), word_kinds(fn), (levels,),
                          scratch_bytes=64 if st["gscratch"] else 0,
                          gang_bytes=8 * st["gang_reductions"] if st["gscratch"] else 0,
                          tree_bytes=16 * st["tree_slots"] if st["scratch"] else 0,
                          requires=tuple(sorted(needs)), any_group_size=True)


def _error(em, line, message):
    return CompileError(message, em.cur.file, line or em.cur.line)


HOOKS = OpenCLDialect()
