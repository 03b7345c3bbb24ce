"""The host dialect: C with OpenMP (the host plugin builds it with gcc).

Levels: the outermost partitioned loop of a nest that includes gang or worker runs on
OpenMP threads (its iterations split in equal contiguous chunks, one per thread); gang and
worker loops nested inside it run sequentially in their thread; a vector level is
``#pragma omp simd`` when the loop is innermost (else gcc vectorizes the inner loop).  So
on the host a gang is one thread, ``omp.barrier()`` has nothing to wait for and a
team-shared array is a private array of that thread.  Launch sizes:
``num_gangs * num_workers`` threads when given, at most OpenMP's maximum (else that);
``vector_length`` is left to the compiler's simd width.

Reductions: INIT declares a level's copy (``T s__r1g = identity``), FINI combines it into
the enclosing copy (under ``omp critical`` where threads join), SETUP and TEARDOWN have
nothing to do; the vector level adds ``reduction(op:copy)`` to its simd loop.  An array
reduction has a copy per thread inside parallel regions (combined under ``omp critical``);
such copies and private arrays sized at run time are the thread's part of the private
scratch that the plugin passes after the argument words (KernelInfo.private), reached
through ``pyg_own`` so that gcc knows it aliases no argument.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field

from pygomp.compiler import ir, printing
from pygomp.compiler import types as T
from pygomp.compiler.argwords import arg_words
from pygomp.compiler.arith import arith_helpers
from pygomp.compiler.dialect import Dialect
from pygomp.compiler.emit import rectangular

_OMP_RED = {"+": "+", "*": "*", "max": "max", "min": "min", "&": "&", "|": "|", "^": "^",
            "and": "&&", "or": "||"}


# glibc's vector math (libmvec, which -lm links as needed) by the release that brought
# each function: gcc calls it in vectorized loops where a declaration says it may.
_LIBMVEC = {(2, 22): "cos exp log pow sin",
            (2, 35): "acos acosh asin asinh atan atan2 atanh cbrt cosh erf erfc exp10 exp2 "
                     "expm1 hypot log10 log1p log2 sinh tan tanh"}
_ARITY = {"atan2": 2, "hypot": 2, "pow": 2}


def _vector_math():
    """Declarations of the libm functions that glibc's libmvec has in vector forms
    (x86-64 only: other machines' libmvec names differ, or it is absent)."""
    libc, _, version = os.confstr("CS_GNU_LIBC_VERSION").partition(" ") if hasattr(
        os, "confstr") else ("", "", "")
    if libc != "glibc" or platform.machine() != "x86_64":
        return []
    have = tuple(int(x) for x in version.split(".")[:2])
    out = []
    for since, names in _LIBMVEC.items():
        if have >= since:
            for name in names.split():
                for c, f in (("double", ""), ("float", "f")):
                    params = ", ".join([c] * _ARITY.get(name, 1))
                    out.append(f'__attribute__((simd("notinbranch"))) {c} {name}{f}({params});')
    return out


def _preamble():
    out = ["#include <stdint.h>", "#include <stdbool.h>", "#include <string.h>",
           "#include <math.h>", "#include <omp.h>", *_vector_math(), "",
           # SIGINT's count (plugins/host/stop.py): weak, so that a unit links alone and
           # the loaded handler's definition wins where there is one
           "__attribute__((weak)) volatile unsigned pygomp_stops;"]
    out.append(arith_helpers("static inline", lambda t: t.c, "f"))
    out.append("static inline int pyg_threads(const int64_t *launch)\n{\n"
               "    int64_t n = (launch[0] > 0 ? launch[0] : 1) * (launch[1] > 0 ? launch[1] : 1);\n"
               "    int64_t m = omp_get_max_threads();\n"
               "    return launch[0] > 0 || launch[1] > 0 ? (int)(n < m ? n : m) : (int)m;\n}")
    for c, u in (("double", "uint64_t"), ("float", "uint32_t")):      # a float word
        out.append(f"static inline {c} pyg_word_{c}(void *w)\n{{\n"
                   f"    {u} u = ({u})(uintptr_t)w;\n    {c} v;\n"
                   f"    memcpy(&v, &u, sizeof v);\n    return v;\n}}")
    # A thread's part of the private scratch aliases nothing else the kernel sees: said
    # as gcc understands it (a fresh allocation), so it keeps values in registers and
    # vectorizes across stores into it, as for the private copies of its own OpenMP.
    out.append("__attribute__((malloc, noinline)) static void *pyg_own(void *p)\n"
               "{\n    return p;\n}")
    return "\n".join(out) + "\n"


_PREAMBLE = _preamble()


@dataclass
class HostState:
    """What the dialect keeps while it emits one kernel (``em.state``)."""
    threads: tuple = ()             # the levels the enclosing parallel region spreads
    join: tuple | None = None       # (id of that loop, the level whose threads join)
    mine: dict = field(default_factory=dict)    # private array -> its first word
    stride: str = "0"               # private scratch words per thread


class HostDialect(Dialect):
    target = "host"

    def new_state(self, fn, like=None):
        return HostState()

    def preamble(self, fn):
        return _PREAMBLE

    def complex_make(self, t, re, im):
        r = t.real.c
        return f"__builtin_complex(({r})({re}), ({r})({im}))"

    def complex_part(self, z, part):
        return f"__{part}__ ({z})"

    def builtin(self, em, name):
        levels = em.state.threads
        if name in ("vector_id",):
            return "0L"
        if name == "vector_length":
            return "1L"
        if name in ("gang_id", "worker_id"):
            lv = name.split("_")[0]
            return "((int64_t)omp_get_thread_num())" if levels and levels[0] == lv else "0L"
        lv = {"num_gangs": "gang", "num_workers": "worker"}[name]
        return "((int64_t)omp_get_num_threads())" if levels and levels[0] == lv else "1L"

    # -- kernel entry -------------------------------------------------------------
    def kernel_open(self, em, fn):
        em.line(f"void {fn.name}(void **args, const int64_t *launch)")
        em.line("{")
        with em.indent():
            for i, (name, t, role) in enumerate(arg_words(fn)):
                w = f"args[{i}]"
                if role in ("array", "ret"):
                    elem = t.elem if role == "array" else t
                    em.line(f"{elem.c} *{name} = ({elem.c} *){w};")
                elif t in (T.FLOAT64, T.FLOAT32):     # its address is never taken, so
                    em.line(f"{t.c} {name} = pyg_word_{t.c}({w});")   # threads get a copy
                elif t.is_bool:
                    em.line(f"bool {name} = (uintptr_t){w} != 0;")
                else:
                    em.line(f"{t.c} {name} = ({t.c})(intptr_t){w};")
            em.line("const int nthreads_ = pyg_threads(launch); (void)nthreads_;")
            em.line("const unsigned stops_ = pygomp_stops; (void)stops_;")
            if fn.sizes:                        # the private scratch, after the words
                em.line(f"uint64_t *pyg_priv = (uint64_t *)args[{len(arg_words(fn))}];")
                em.state.mine, em.state.stride = em.private_layout()

    def stop_test(self):
        return "__builtin_expect(pygomp_stops != stops_, 0)"

    # -- private arrays sized at run time: a thread's part of the private scratch --------
    def array_decl(self, em, name, t):
        if t.shape:
            return super().array_decl(em, name, t)
        self._scratch_array(em, name, t)

    def _scratch_array(self, em, name, t):
        for k, e in enumerate(em.extents(name)):
            em.line(f"const int64_t {name}__s{k} = {e};")
        em.line(f"{t.elem.c} *{name} = ({t.elem.c} *)pyg_own(pyg_priv + omp_get_thread_num() "
                f"* ({em.state.stride}) + {em.state.mine[name]});")

    # -- loops and reductions ----------------------------------------------------
    def loop(self, em, loop):
        threaded = not em.state.threads and any(
            lv in ("gang", "worker") for lv in loop.levels)
        simd = ("vector" in loop.levels and not loop.has_sync   # innermost loops only:
                and not any(isinstance(r.type, T.Array) or r.type.is_complex and r.op != "+"
                            for r in loop.reductions)       # numpy's complex product
                and not any(isinstance(n, (ir.For, ir.While, ir.ParLoop))  # gcc vectorizes
                            for n in ir.walk(loop.body)))                 # the inner one
        u = em.uid()
        trips = [f"n{k}_{u}" for k in range(len(loop.dims))]
        em.line("{")
        with em.indent():
            lines, total = em.counts(loop, trips)
            for text in lines:
                em.line(text)
            for c in loop.setup:
                em.stmt(c)
            if threaded:
                levels = tuple(lv for lv in loop.levels if lv != "vector")
                em.line("#pragma omp parallel num_threads(nthreads_)")
                em.line("{")
                em.state.threads = levels
                em.state.join = (id(loop), levels[0])
                with em.indent():
                    for c in loop.init:
                        em.stmt(c)
                    em.line("const int64_t nt_ = omp_get_num_threads(), "
                            "t_ = omp_get_thread_num();")
                    em.line(f"const int64_t tot_ = {total};")
                    em.line("const int64_t lo_ = tot_ / nt_ * t_ + (t_ < tot_ % nt_ ? t_ : tot_ % nt_);")
                    em.line("const int64_t hi_ = lo_ + tot_ / nt_ + (t_ < tot_ % nt_);")
                    self._iterate(em, loop, simd, "lo_", "hi_", trips)
                    for c in loop.fini:
                        em.stmt(c)
                em.line("}")
                em.state.threads = ()
                em.state.join = None
            else:
                for c in loop.init:
                    em.stmt(c)
                self._iterate(em, loop, simd, "0", total, trips)
                for c in loop.fini:
                    em.stmt(c)
            for c in loop.teardown:
                em.stmt(c)
        em.line("}")

    def _iterate(self, em, loop, simd, lo, hi, trips):
        k = f"k{em.uid()}_"
        pragma = ""
        if simd:
            reds = " ".join(f"reduction({_OMP_RED[r.op]}:{r.local})" for r in loop.reductions)
            pragma = f"#pragma omp simd {reds}".rstrip()
        if not rectangular(loop):
            em.rows(loop, lo, hi, lambda: (em.decls(loop.decls), em.stmts(loop.body)), pragma)
            return
        if pragma:
            em.line(pragma)
        em.line(f"for (int64_t {k} = {lo}; {k} < {hi}; ++{k}) {{")
        with em.indent():
            for s in em.dim_values(loop, k, trips):
                em.line(s)
            em.decls(loop.decls)
            em.stmts(loop.body)
        em.line("}")

    def reduction(self, em, call):
        join = em.state.join
        joins = join is not None and join[1] == call.level
        if isinstance(call.type, T.Array):     # a copy per thread, inside parallel regions
            return self._array_reduction(em, call, joins or bool(em.state.threads))
        if call.phase == "INIT":
            em.line(f"{call.type.c} {call.local} = {self.identity(call.op, call.type)};")
        elif call.phase == "FINI":
            combined = em.combine(call.op, call.type, call.outer, call.local)
            if joins:
                em.line("#pragma omp critical")
            em.line(f"{call.outer} = {combined};")
        # SETUP and TEARDOWN: nothing on the host

    def _array_reduction(self, em, call, copy):
        """A copy per thread (the array itself outside parallel regions), combined into
        the array element by element when the loop ends, one thread at a time."""
        t, c = call.type.elem, call.type.elem.c
        n = em.count(call.local, T.Array(t, call.type.ndim, shape=call.type.shape))
        if call.phase == "INIT":
            if not copy:
                for k, e in enumerate(em.extents(call.local)):
                    em.line(f"const int64_t {call.local}__s{k} = {e};")
                em.line(f"{c} *{call.local} = {call.outer};")
                return
            self._scratch_array(em, call.local, call.type)
            em.line(f"for (int64_t e_ = 0; e_ < {n}; ++e_) {call.local}[e_] = "
                    f"{self.identity(call.op, t)};")
        elif call.phase == "FINI" and copy:
            em.line("#pragma omp critical")
            em.line(f"for (int64_t e_ = 0; e_ < {n}; ++e_) {call.outer}[e_] = "
                    f"{em.combine(call.op, t, f'{call.outer}[e_]', f'{call.local}[e_]')};")

    def atomic_add(self, em, s):
        em.line("#pragma omp atomic")
        em.line(f"{em.expr(s.target)} += {em.expr(s.value)};")

    def print(self, em, s):         # the unit includes no stdio.h
        em.line("{ extern int printf(const char *, ...); "
                f"printf({', '.join(printing.printf_args(em, s))}); }}")

    cas_sizes = (1, 2, 4, 8)

    def atomic_native(self, em, a, ptr):
        if a.type.is_float:
            return None
        return {"add": f"__atomic_fetch_add({ptr}, pyg_v, __ATOMIC_SEQ_CST)",
                "exchange": f"__atomic_exchange_n({ptr}, pyg_v, __ATOMIC_SEQ_CST)",
                "cas": f"__sync_val_compare_and_swap({ptr}, pyg_e, pyg_v)"}.get(a.op)

    def atomic_swap(self, space, size, ptr, old, new):
        return f"__sync_val_compare_and_swap({ptr}, {old}, {new})"

    def barrier(self, em):
        em.line("/* barrier: a gang is one thread on the host */")


HOOKS = HostDialect()
