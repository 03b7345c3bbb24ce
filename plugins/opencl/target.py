"""The OpenCL C dialect: kernels for any OpenCL device (OpenCL C 1.2 and later).

Geometry (see the OpenCL plugin): a 2-D NDRange; a gang is a work-group
(``get_group_id(1)``), a worker ``get_local_id(1)``, a vector lane ``get_local_id(0)``.
Code outside a level's loops runs redundantly on that level (OpenACC's gang-redundant,
worker-single and vector-single modes): private values are computed by everyone, while
stores to arrays, atomics and the kernel's result are done by one work-item only.

Entries: the kernel runs as the launches of `pygomp.compiler.steps.plan` (each an
``__kernel`` function ``NAME__e<k>`` when there are several); an entry loads the carried
scalars from the global scratch, finishes the gang reductions of the launch before, and
its gang 0's first work-item stores them back (into the other copy).  Private arrays
sized at run time and array reduction copies live in the private scratch: one 8-byte
word an element, a work-item's part after the previous one's.

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

from pygomp.compiler import addrspace, ir, steps
from pygomp.compiler import types as T
from pygomp.compiler.emit import Dialect, arg_words, arith_helpers, private_terms, word_kinds
from pygomp.compiler.reductions import array_copies
from pygomp.errors import CompileError
from pygomp.runtime.plugin import KernelInfo

from .loops import COUNT, ID, LEVELS, LoopLowering, scan

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
    hoist_loads = True          # PoCL reads A[i, k] again in every trip of a j loop
    write_flags = True          # a helper stores into a caller's array as the caller would

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
        em.state["part"] = frozenset(LEVELS)    # its own arrays: each work-item's
        em.state["active"] = None
        ret = "void" if fn.ret is T.VOID else self.type_name(fn.ret)
        em.line(f"{ret} {fn.name}({', '.join(params) or 'void'})")
        em.line("{")

    # -- the kernel entries ----------------------------------------------------------
    def entries(self, em, fn):
        """One entry a launch of `steps.plan` (gang loops end their launch)."""
        addrspace.check(fn)
        plan = steps.plan(fn)
        slots = {r.rid: k for k, (_, r) in enumerate(plan.reductions)}
        names = [f"{fn.name}__e{k}" if len(plan.entries) > 1 else fn.name
                 for k in range(len(plan.entries))]
        em.state.update(plan=plan, gang_slots=slots, names=names, found=scan(fn, plan),
                        copies=array_copies(fn))
        return list(zip(names, (e.body for e in plan.entries)))

    def kernel_open(self, em, fn):
        st = em.state
        st.update(part=frozenset(), active=None, hoisted=[], k=st["names"].index(em.entry))
        found = st["found"]
        params = []
        for name, t, role in arg_words(fn):
            if role in ("array", "ret"):
                elem = self.type_name(t.elem if role == "array" else t)
                params += [f"__global {elem} *{name}__base", f"ulong {name}__off"]
            else:
                params.append(f"{self.type_name(t)} {name}")
        if found["scratch"]:
            params.append("__global ulong *pyg_scratch")
        if found["private"]:        # each work-item's own part, in a buffer of its own
            params.append("__global ulong *restrict pyg_priv")
        if found["tree"]:
            params.append("__local ulong *pyg_tree")
        em.line(f"__kernel void {em.entry}({', '.join(params)})")
        em.line("{")
        with em.indent():
            st["hoist_at"] = len(em.out)
            for name, t, role in arg_words(fn):
                if role in ("array", "ret"):
                    elem = self.type_name(t.elem if role == "array" else t)
                    em.line(f"__global {elem} *{name} = (__global {elem} *)"
                            f"((__global char *){name}__base + {name}__off);")
            em.line("const long pyg_g = get_group_id(1), pyg_G = get_num_groups(1);")
            if found["private"]:
                st["mine"], st["stride"] = em.private_layout()
                em.line(f"__global ulong *pyg_mine = pyg_priv + (get_global_id(1) * "
                        f"get_global_size(0) + get_global_id(0)) * ({st['stride']});")

    def kernel_body(self, em, fn, body):
        """Load the carried scalars, finish the gang reductions of the launch before,
        then the statements: after a return, they do nothing (no early return, which
        PoCL's work-groups get wrong before a barrier), the loops' flags cleared."""
        st, plan = em.state, em.state["plan"]
        k = st["k"]
        steps.load_carried(em, self, fn, plan, k,
                           lambda name, area, t: self._word(em, name, area, t))
        if k:
            self._finish_gang_reductions(em, plan)
        entry = plan.entries[k]
        if entry.combine is not None:
            self._sum_copies(em, entry.combine)
        if plan.done and k:
            for name in plan.flags:
                em.line(f"if ({plan.done}) {name} = 0;")
        self._guarded(em, body, f"!{plan.done}" if plan.done and k else "1")

    def _word(self, em, name, area, t):
        plan = em.state["plan"]
        return f"*(__global {self.type_name(t)} *)(pyg_scratch + {plan.word(name, area)})"

    def _partial(self, em, gang, rid, t):
        plan = em.state["plan"]
        slot = em.state["gang_slots"][rid]
        return (f"*(__global {self.type_name(t)} *)(pyg_scratch + {plan.scratch_words} + "
                f"{gang} * {plan.gang_words} + {slot})")

    def _finish_gang_reductions(self, em, plan):
        """Combine the partials a gang loop of the launch before left (its pending word
        holds its number of gangs) into the reduction variables."""
        loops, before = {}, plan.before(em.state["k"])
        for loop, r in plan.reductions:
            if any(any(n is loop for n in ir.walk(plan.entries[p].body)) for p in before):
                loops.setdefault(id(loop), (loop, []))[1].append(r)
        for loop, reds in loops.values():
            pend = plan.pending[id(loop)]
            em.line(f"if ({pend}) {{")
            with em.indent():
                u = em.uid()
                for r in reds:
                    c = self.type_name(r.type)
                    em.line(f"{c} pyg_a{u}_{r.rid} = {self.identity(r.op, r.type)};")
                em.line(f"for (long pyg_q{u} = 0; pyg_q{u} < {pend}; ++pyg_q{u}) {{")
                with em.indent():
                    for r in reds:
                        a = f"pyg_a{u}_{r.rid}"
                        em.line(f"{a} = {em.combine(r.op, r.type, a, self._partial(em, f'pyg_q{u}', r.rid, r.type))};")
                em.line("}")
                for r in reds:
                    em.line(f"{r.var} = {em.combine(r.op, r.type, r.var, f'pyg_a{u}_{r.rid}')};")
                em.line(f"{pend} = 0;")
            em.line("}")

    def _sum_copies(self, em, loop):
        """The entry after a gang loop with array reductions: each work-item sums a block
        of elements over the copies of every work-item of that launch."""
        plan = em.state["plan"]
        items = plan.copies[id(loop)]
        for r in loop.reductions:
            if not isinstance(r.type, T.Array):
                continue
            u = em.uid()
            t, c = r.type.elem, self.type_name(r.type.elem)
            n = " * ".join(f"({e})" for e in em.extents(r.local))
            em.line("{")
            with em.indent():
                em.line(f"const long pyg_n{u} = {n}, pyg_P{u} = get_global_size(0) * "
                        f"get_global_size(1);")
                em.line(f"const long pyg_p{u} = get_global_id(1) * get_global_size(0) + "
                        f"get_global_id(0), pyg_per{u} = (pyg_n{u} + pyg_P{u} - 1) / pyg_P{u};")
                em.line(f"for (long e = pyg_p{u} * pyg_per{u}; e < min(pyg_n{u}, (pyg_p{u} + 1) "
                        f"* pyg_per{u}); ++e) {{")
                with em.indent():
                    em.line(f"{c} a = {self.identity(r.op, t)};")
                    em.line(f"for (long q = 0; q < {items}; ++q)")
                    copy = f"((__global {c} *)(pyg_priv + q * ({em.state['stride']}) + " \
                           f"{em.state['mine'][r.local]}))[e]"
                    em.line(f"    a = {em.combine(r.op, t, 'a', copy)};")
                    em.line(f"{r.var}[e] = {em.combine(r.op, t, f'{r.var}[e]', 'a')};")
                em.line("}")
            em.line("}")

    def kernel_close(self, em, fn):
        at = em.state["hoist_at"]
        em.out[at:at] = ["    " + h for h in em.state["hoisted"]]
        plan = em.state["plan"]
        if plan.carried and plan.program[-1] != em.state["k"]:     # not the last launch
            with em.indent():
                area = 1 - plan.parity[em.state["k"]]
                em.line("if (pyg_g == 0 && get_local_id(0) == 0 && get_local_id(1) == 0) {")
                with em.indent():
                    for name, t in plan.carried:
                        em.line(f"{self._word(em, name, area, t)} = {name};")
                em.line("}")
        em.line("}")

    def kernel_return(self, em, fn, value):
        plan = em.state["plan"]
        lead = self.leader(em)
        if value is not None:
            em.line(f"if ({lead}) *{fn.ret_param} = {value};")
        if plan.done:
            area = 1 - plan.parity[em.state["k"]]
            em.line(f"if ({lead}) {{")
            with em.indent():
                for name in [plan.done] + plan.flags:
                    em.line(f"{self._word(em, name, area, T.BOOL)} = {int(name == plan.done)};")
            em.line("}")
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
        if not t.shape:                          # sized at run time: private scratch
            self._scratch_array(em, name, t)
            return
        decl = f"{self.type_name(t.elem)} {name}[{math.prod(t.shape)}];"
        if t.space == "local":                   # OpenCL: at kernel scope only
            if f"__local {decl}" not in em.state["hoisted"]:
                em.state["hoisted"].append(f"__local {decl}")
        else:
            em.line(decl)

    def _scratch_array(self, em, name, t):
        for k, e in enumerate(em.extents(name)):
            em.line(f"const long {name}__s{k} = {e};")
        c = self.type_name(t.elem)
        em.line(f"__global {c} *{name} = (__global {c} *)(pyg_mine + {em.state['mine'][name]});")

    def shared(self, em, arr):
        """Whether an array is memory that other work-items see (not private to one)."""
        return arr.type.space != "private" and arr.name not in em.cur.sizes

    # -- statements with side effects ------------------------------------------------
    def writer(self, em, arr):
        if arr.name in em.cur.written and not em.cur.is_kernel:     # the caller says
            return f"{arr.name}__w"
        if arr.name in em.state.get("copies", ()):      # summed over the work-items: count once
            return self.leader(em, ("gang",))
        return self.leader(em) if self.shared(em, arr) else "1"

    def store(self, em, s):
        text = f"{em.expr(s.target)} = {em.expr(s.value)};"
        cond = self.writer(em, s.target.array)
        em.line(text if cond == "1" else f"if ({cond}) {text}")

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
        if not self.shared(em, s.target.array):
            text = f"{target} += {value};"
        cond = self.writer(em, s.target.array)
        em.line(text if cond == "1" else f"if ({cond}) {text}")

    def barrier(self, em):
        em.line("PYG_BARRIER();")

    # -- bounds checking ------------------------------------------------------------
    inline = "inline"

    def claim(self, record):
        return f"atomic_cmpxchg((volatile __global int *){record}, 0, 1) == 0"

    def record_pointer(self):
        return "__global long *"        # a global pointer even where helpers take generic

    # -- the kernel contract -----------------------------------------------------------
    def kernel_info(self, em, fn):
        """Entries, levels, scratch, program and requirements of the kernel."""
        needs = set()
        if _uses_float64(fn):
            needs.add("fp64")
        if any(t.size == 8 for t in _atomic_types(fn)):
            needs.add("int64_atomics")
        plan, found = em.state["plan"], em.state["found"]
        levels = tuple("".join(lv[0] for lv in LEVELS if lv in e.levels) for e in plan.entries)
        program = plan.program if plan.program != tuple(range(len(plan.entries))) else ()
        return KernelInfo(fn.pyname, tuple(em.state["names"]), word_kinds(fn), levels,
                          scratch_bytes=8 * plan.scratch_words, gang_bytes=8 * plan.gang_words,
                          tree_bytes=16 * found["tree"], private=private_terms(fn),
                          program=program, requires=tuple(sorted(needs)),
                          any_group_size=True)


def _error(em, line, message):
    return CompileError(message, em.cur.file, line or em.cur.line)


HOOKS = OpenCLDialect()
