"""The C face: libpygomp.so, a shared library that exports libgomp's ABI (GOMP_*,
GOACC_*, omp_*, acc_*) so that programs built with ``gcc -fopenmp`` or ``-fopenacc``
offload through pygomp's runtime core.  The folder csrc/, installed as pygomp.csrc
(csrc/README.md says how a construct runs):

- shim.c, prof.c: the C half (the exported entry points; OpenACC's profiling registry)
- build.py: compiles them into libpygomp.so with cffi's embedding mode
- shim.py: the library's path (built and cached when needed), and `load`
- contract.py: the numbers the C and Python halves share, written once
- abi.py: the Python half's start (`attach`), and what its modules share: GCC's map
  items, errors as libgomp's fatal ones, the program's end
- gomp.py: OpenMP's constructs (GOMP_target_ext, target data, update, enter/exit data)
- goacc.py: OpenACC's constructs (GOACC_parallel_keyed, data, enter/exit data, update,
  declare, wait)
- hostcode.py: the host code of a region that has no image on its device
- omp_routines.py, acc_routines.py: the omp_* device routines, the acc_* routines
- tables.py: offload tables (GOMP_offload_register_ver)
- plans.py: regions that C runs itself, and the devices' locks that let it

The runtime never imports this package; it imports the runtime.
"""
