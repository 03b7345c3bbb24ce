"""Build libpygomp.so: shim.c in cffi's embedding mode, compiled by the system C compiler.

The library links the Python it is built with (its libpython, found again at run time
through an rpath) and starts as that Python's executable, so a virtual environment's
packages are found; libgomp is linked too, so that dlsym(RTLD_NEXT) in shim.c reaches
libgomp's own entry points however the library was loaded.  Only the names in EXPORTS
are visible, unversioned (the dynamic linker lets an unversioned definition satisfy a
binary's versioned reference, e.g. GOMP_target_ext@GOMP_4.5).  The numbers that shim.c
and the Python half share come from contract.py, written ahead of shim.c.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from . import contract

HERE = Path(__file__).resolve().parent
MODULE = "_pygomp_shim"

# The Python half (abi.py and the modules it names), behind extern "Python".
PYTHON_HALF = """
extern "Python" int pg_py_target(int device, uintptr_t fn, size_t mapnum, uint64_t *items,
                                 uintptr_t *args, int teams, int threads);
extern "Python" int64_t pg_py_data(int op, int device, size_t mapnum, uint64_t *items,
                                   uintptr_t *hostaddrs);
extern "Python" int pg_py_end_data(int64_t region);
extern "Python" int pg_py_land(uintptr_t flight);
extern "Python" void pg_py_at_exit(void);
extern "Python" int pg_py_table(int registering, int type, unsigned version,
                                uintptr_t host_table, uintptr_t data);
extern "Python" int pg_py_num_devices(void);
extern "Python" void pg_py_set_default_device(int device_num);
extern "Python" void *pg_py_target_alloc(size_t size, int device_num);
extern "Python" void pg_py_target_free(void *device_ptr, int device_num);
extern "Python" int pg_py_target_is_present(const void *ptr, int device_num);
extern "Python" int pg_py_target_is_accessible(const void *ptr, size_t size, int device_num);
extern "Python" void *pg_py_get_mapped_ptr(const void *ptr, int device_num);
extern "Python" int pg_py_target_associate_ptr(const void *host_ptr, const void *device_ptr,
                                               size_t size, size_t device_offset,
                                               int device_num);
extern "Python" int pg_py_target_disassociate_ptr(const void *ptr, int device_num);
extern "Python" int pg_py_target_memcpy(void *dst, const void *src, size_t length,
                                        size_t dst_offset, size_t src_offset,
                                        int dst_device_num, int src_device_num);
extern "Python" int pg_py_acc_parallel(int flags, uintptr_t fn, size_t mapnum, uint64_t *items,
                                       uintptr_t *hostaddrs, int async, int num_waits,
                                       int *waits, unsigned *dims);
extern "Python" int64_t pg_py_acc_data(int op, int flags, size_t mapnum, uint64_t *items,
                                       uintptr_t *hostaddrs, int async, int num_waits,
                                       int *waits);
extern "Python" int pg_py_acc(int routine, uint64_t *words, int async, uint64_t *result);
extern "Python" void pg_py_prof_mask(void);
extern "Python" int pg_py_target_memcpy_rect(void *dst, const void *src, size_t element_size,
                                             int num_dims, const size_t *volume,
                                             const size_t *dst_offsets,
                                             const size_t *src_offsets,
                                             const size_t *dst_dimensions,
                                             const size_t *src_dimensions,
                                             int dst_device_num, int src_device_num);
"""

# prof.c's entry points that Python calls; its struct types come from prof.c itself.
PROF_DECLS = """
void acc_prof_register(int ev, void (*cb)(pg_prof_info *, pg_event_info *, pg_api_info *),
                       int reg);
void acc_prof_unregister(int ev, void (*cb)(pg_prof_info *, pg_event_info *, pg_api_info *),
                         int reg);
void pg_prof_dispatch(pg_prof_info *prof, pg_event_info *event, pg_api_info *api);
uint64_t pg_prof_attach(void);
"""

# The helpers of shim.c that the Python half calls.
C_HELPERS = """
void pg_fatal(const char *text);
void pg_call_host(uintptr_t fn, uintptr_t *args, int device);
void pg_call_acc(uintptr_t fn, uintptr_t *args, int type);
int64_t pg_plan_install(int device, uintptr_t fn, size_t n, const uint64_t *items,
                        const uint64_t *words, const unsigned char *flags, uint64_t epoch,
                        uint64_t id);
int pg_gate_enter(int device);
int pg_gate_take(int device, uint64_t *out);
void pg_gate_leave(int device, uint64_t epoch);
void pg_plans_off(void);
"""

EXPORTS = """
GOMP_target_ext GOMP_target_data_ext GOMP_target_end_data GOMP_target_update_ext
GOMP_target_enter_exit_data GOMP_offload_register_ver GOMP_offload_unregister_ver
GOMP_offload_register GOMP_offload_unregister
omp_get_num_devices omp_get_default_device omp_set_default_device omp_is_initial_device
omp_get_initial_device omp_get_device_num omp_target_alloc omp_target_free
omp_target_is_present omp_target_is_accessible omp_target_memcpy omp_target_memcpy_rect
omp_target_memcpy_async omp_target_memcpy_rect_async omp_target_associate_ptr
omp_target_disassociate_ptr omp_get_mapped_ptr
GOACC_parallel_keyed GOACC_data_start GOACC_data_end GOACC_enter_data GOACC_exit_data
GOACC_enter_exit_data GOACC_update GOACC_wait GOACC_declare GOACC_get_num_threads
GOACC_get_thread_num
acc_get_num_devices acc_set_device_type acc_get_device_type acc_set_device_num
acc_get_device_num acc_init acc_shutdown acc_on_device acc_malloc acc_free acc_copyin
acc_present_or_copyin acc_pcopyin acc_copyin_async acc_create acc_present_or_create
acc_pcreate acc_create_async acc_copyout acc_copyout_async acc_copyout_finalize
acc_copyout_finalize_async acc_delete acc_delete_async acc_delete_finalize
acc_delete_finalize_async acc_update_device acc_update_device_async acc_update_self
acc_update_self_async acc_is_present acc_deviceptr acc_hostptr acc_map_data acc_unmap_data
acc_memcpy_to_device acc_memcpy_to_device_async acc_memcpy_from_device
acc_memcpy_from_device_async acc_attach acc_attach_async acc_detach acc_detach_async
acc_detach_finalize acc_detach_finalize_async acc_async_test acc_async_test_all acc_wait
acc_async_wait acc_wait_all acc_async_wait_all acc_wait_async acc_wait_all_async
acc_get_property acc_get_property_string
acc_get_current_cuda_device acc_get_current_cuda_context acc_get_cuda_stream
acc_set_cuda_stream
acc_prof_register acc_prof_unregister acc_prof_lookup acc_register_library
GOMP_target GOMP_target_data GOMP_target_update GOACC_parallel
omp_pause_resource omp_pause_resource_all
omp_get_num_devices_ omp_get_default_device_ omp_set_default_device_
omp_set_default_device_8_ omp_is_initial_device_ omp_get_initial_device_ omp_get_device_num_
omp_pause_resource_ omp_pause_resource_all_
""".split()

INIT = f"""
from {MODULE} import ffi, lib
from pygomp.csrc import abi
abi.attach(ffi, lib)
"""


def sources() -> list[Path]:
    """The files whose content decides the library (part of the cache key)."""
    return [HERE / "shim.c", HERE / "prof.c", HERE / "contract.py", Path(__file__).resolve()]


def build(directory: str, python: str = sys.executable, cc: str = "gcc") -> str:
    """Write libpygomp.so into ``directory`` (build files beside it); return its path."""
    import cffi
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise RuntimeError(f"{python} has no shared libpython (it was built without "
                           f"--enable-shared): the embedded interpreter needs one")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=out))   # private: builds may race
    try:
        return _build(out, work, python, cc, cffi)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build(out, work, python, cc, cffi):
    ffi = cffi.FFI()
    ffi.embedding_api("")
    ffi.cdef(PYTHON_HALF + _prof_types() + PROF_DECLS + C_HELPERS)
    ffi.set_source(MODULE, f'#define PYGOMP_PYTHON "{_c_string(python)}"\n'
                           + contract.c_text()
                           + PYTHON_HALF.replace('extern "Python"', "static")
                           + (HERE / "shim.c").read_text() + (HERE / "prof.c").read_text())
    ffi.embedding_init_code(INIT)
    c_file = work / f"{MODULE}.c"
    with contextlib.redirect_stdout(io.StringIO()):      # cffi says "generating ..."
        ffi.emit_c_code(str(c_file))
    exports = work / "exports.map"
    exports.write_text("{\n  global:\n" + "".join(f"    {n};\n" for n in EXPORTS)
                       + "  local: *;\n};\n")
    libdir = sysconfig.get_config_var("LIBDIR")
    pyver = sysconfig.get_config_var("LDVERSION") or sysconfig.get_config_var("VERSION")
    target = out / "libpygomp.so"
    partial = work / "libpygomp.so"
    cmd = [cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden",
           f"-I{sysconfig.get_paths()['include']}", str(c_file), "-o", str(partial),
           f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-lpython{pyver}", "-Wl,--no-as-needed", "-lgomp", "-Wl,--as-needed", "-ldl",
           "-lpthread", f"-Wl,--version-script={exports}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building libpygomp.so failed:\n$ {' '.join(cmd)}\n{done.stderr}")
    os.replace(partial, target)          # atomic: another process may be building too
    return str(target)


def _prof_types() -> str:
    """prof.c's struct types (acc_prof.h's layout), for cffi: written once, in prof.c."""
    text = (HERE / "prof.c").read_text()
    return text[text.index("/* types: begin */"):text.index("/* types: end */")]


def _c_string(text: str) -> str:
    """``text`` inside a C string literal: quotes, backslashes and control characters
    as octal escapes, everything else (UTF-8 included) as it is."""
    return "".join(f"\\{ord(c):03o}" if c in '"\\' or ord(c) < 32 or ord(c) == 127 else c
                   for c in text)
