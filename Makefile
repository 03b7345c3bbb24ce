# The two commands: `make demo` and `make test` (each sets up .venv first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench info conformance bytecode soak

# Debian packages, where apt-get can install them (root): PoCL (pocl-opencl-icd), since
# the PoCL wheel (pyopencl[pocl]) builds nothing on CPUs its LLVM 14 does not know, and
# gcc's nvptx offload compiler (gcc-12-offload-nvptx), for the tests of C programs built
# for NVIDIA GPUs, and Python's headers (python3-dev), with which the OpenCL plugin builds
# its launches from C, and GCC 12's Fortran compiler (gfortran-12, the gcc whose libgomp ABI
# the shim exports), for the Fortran programs of the tests and of `make conformance`. Each
# OpenCL device proves it works before it is numbered; `python -m pygomp info` lists any
# that does not, with the reason.
DEBIAN := pocl-opencl-icd gcc-12-offload-nvptx python3-dev gfortran-12

$(STAMP): pyproject.toml
	@missing=$$(for p in $(DEBIAN); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "installing Debian's" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null \
	  || echo "could not install $$missing: the tests that need them say so"; \
	fi
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[opencl,test,mpi,cuda]"
	touch $(STAMP)

# Where PYTHONDONTWRITEBYTECODE is set, Python keeps no compiled modules, and every process
# (each C program under the shim) would compile pygomp's anew: 40 to 60 ms. Compile them
# here; this redoes only the files changed since.
bytecode: $(STAMP)
	$(PY) -m compileall -q pygomp plugins csrc examples

demo: bytecode
	$(PY) -m pygomp info
	$(PY) -m pygomp demo
	$(VENV)/bin/mpiexec -n 2 $(PY) examples/upc_stencil.py
	@# a C program calling kernels written in Python, on the host device and on PoCL
	mkdir -p build
	$(PY) -m pygomp build examples/c/kernels.py -o build/kernels_offload.c
	gcc -O2 -fopenmp -foffload=disable examples/c/saxpy.c build/kernels_offload.c -lm -o build/saxpy
	PYGOMP_DEVICES=host LD_PRELOAD=$$($(PY) -m pygomp shim) build/saxpy
	PYGOMP_DEVICES=opencl:pocl LD_PRELOAD=$$($(PY) -m pygomp shim) build/saxpy

# The second run repeats the kernel and mapping tests with an allocator that fills freed
# memory with a pattern, so that C reading memory it does not own fails loudly.
PERTURBED := tests/test_kernels.py tests/test_kernels_examples.py tests/test_mapping.py \
	tests/test_shim.py tests/test_acc.py tests/test_shim_acc.py tests/test_acc_prof.py \
	tests/test_async_order.py tests/test_fortran.py

test: bytecode
	$(PY) -m pytest -q -rs
	PYTHONMALLOC=malloc MALLOC_PERTURB_=165 $(PY) -m pytest -q -rs -m "not slow" $(PERTURBED)

# A long run (minutes, not in `test`): threads calling kernels every way on every
# device while CPU hogs keep the cores busy; results, mappings and memory checked.
SOAK_MINUTES ?= 10
soak: bytecode
	PYTHONMALLOC=malloc MALLOC_PERTURB_=165 $(PY) tests/soak.py --minutes $(SOAK_MINUTES)

# GCC 12's libgomp offload tests under libpygomp.so and under libgomp (not in `test`).
conformance: bytecode
	$(PY) tests/c/conformance.py

info: bytecode
	$(PY) -m pygomp info

bench: bytecode
	$(PY) -m pip install -q -e ".[opencl,test,mpi,cuda,bench]"
	for b in bench/bench_*.py; do $(PY) $$b || exit 1; done
	$(PY) bench/polybench/run.py
