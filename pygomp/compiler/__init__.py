"""The kernel compiler: Python AST -> typed IR -> C-family source for a target dialect.

    frontend.py    ast -> IR through a whitelist visitor (errors: `pygomp.errors`); the C semantics
    statements.py  the visitor's statements;  loops.py  its for loops and clauses
    expressions.py its expressions;  calls.py  its calls (math, min/max/abs, helpers)
    forms.py       forms rewritten into those: enumerate/zip, tuple returns, nested def
    annotate.py    parameter annotations (one parser for kernels, build and the CLI)
    types.py       scalar and array types (arrays carry their address space)
    complexes.py   complex64/complex128: front-end rules and their C text per dialect
    ir.py          the typed IR, with Python lines
    reductions.py  reduction operators; lowering to SETUP/INIT/FINI/TEARDOWN per level
    emit.py        the one emitter;  dialect.py  `Dialect`: the hooks a target implements
    arith.py       the C functions for Python's and numpy's arithmetic
    argwords.py    a kernel's argument words and private scratch (what KernelInfo says)
    steps.py       where a kernel is cut into launches (a grid-wide order)
    workgroup.py   the lowering OpenCL and CUDA share (`WorkGroupDialect`)
    lang.py        the names kernels use (omp.gang, omp.barrier, ...)

A plugin's ``target_hooks()`` returns a `dialect.Dialect` instance: the host one is
``pygomp_plugins.host.target.HOOKS`` (C + OpenMP, gcc), OpenCL C in
``pygomp_plugins.opencl.target``, CUDA C in ``pygomp_plugins.cuda.target`` (the last two
on `workgroup.WorkGroupDialect`).  The compiler writes source text only: the plugin
compiles it for a device.
Address spaces (SYCL 2020: global, local, private) are part of `types.Array`; a helper
is specialized once per signature of argument types, so a helper called with a global and
with a local array is emitted twice, each with its own pointer types.
"""
