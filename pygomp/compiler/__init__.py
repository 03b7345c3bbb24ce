"""The kernel compiler: Python AST -> typed IR -> C-family source for a target dialect.

    frontend.py    ast -> IR through a whitelist visitor (errors: `pygomp.errors`); the C semantics
    callables.py   the functions a kernel may call, one registry (python -m pygomp language)
    precheck.py    what `@omp.target` checks before any argument type is known
    annotate.py    parameter annotations (one parser for kernels, build and the CLI)
    statements.py  the visitor's statements;  loops.py  its for loops and clauses
    expressions.py its expressions;  calls.py  its calls (math, min/max/abs, helpers)
    scoping.py     which outer scalars a parallel loop's iteration makes its own
    forms.py       forms rewritten into those: enumerate/zip, tuple returns, nested def
    arrays.py      array expressions, lowered to loops;  npcalls.py  numpy reductions
    computed.py    operands computed element by element (axis reductions, @, np.outer)
    views.py       slices and views bound to names;  scans.py  np.cumsum and np.cumprod
    inscan.py      OpenMP's scan directive;  records.py  record arrays (structured dtypes)
    complexes.py   complex64/complex128: front-end rules and their C text per dialect
    printing.py    print() as one printf;  atomics.py  omp.atomic_<op>
    boundscheck.py checked array accesses;  nonneg.py  lower bounds of index expressions
    types.py       scalar, array and record types (arrays carry their address space)
    ir.py          the typed IR, with Python lines
    reductions.py  reduction operators; lowering to SETUP/INIT/FINI/TEARDOWN per level
    emit.py        the one emitter;  dialect.py  `Dialect`: the hooks a target implements
    arith.py       the C functions for Python's and numpy's arithmetic
    argwords.py    a kernel's argument words and private scratch (what KernelInfo says)
    steps.py       where a kernel is cut into launches (a grid-wide order)
    workgroup.py   the lowering OpenCL and CUDA share (`WorkGroupDialect`); its sums
                   in groupsums.py; its strategies: groupwide.py (every barrier
                   group-wide: OpenCL), warps.py (a worker is a warp: CUDA)
    onegroup.py    a looping kernel as one work-group (a CPU device's variant)
    addrspace.py   address spaces where there is no generic one (OpenCL C 1.2)
    hoist.py       array loads a sequential loop may read once, before it
    narrow.py      int64 values proven to fit in int32 (32-bit indices on GPUs)
    vectypes.py    elementwise loops in OpenCL C vector types (PoCL's vector math)
    lang.py        the names kernels use (omp.gang, omp.barrier, ...)

A plugin's ``target_hooks()`` returns a `dialect.Dialect` instance: the host one is
``pygomp.plugins.host.target.HOOKS`` (C + OpenMP, gcc), OpenCL C in
``pygomp.plugins.opencl.target``, CUDA C in ``pygomp.plugins.cuda.target`` (the last two
spell a strategy: `groupwide.GroupWide`, `warps.WarpWorkers`).  The compiler writes
source text only: the plugin compiles it for a device.
Address spaces (SYCL 2020: global, local, private) are part of `types.Array`; a helper
is specialized once per signature of argument types, so a helper called with a global and
with a local array is emitted twice, each with its own pointer types.
"""
