"""What the CUDA driver says about this machine's GPUs, through libcuda and ctypes.

Discovery must cost nothing where there is no GPU, so it asks the driver directly
(``libcuda.so.1``) and never imports cupy: `find` returns the GPUs' descriptions, or
raises `Unavailable` with the reason there are none.  `link` and `global_address` serve
GCC's nvptx images (`gcc.py`): the driver's JIT links their PTX objects into one cubin
for the current context's GPU, and a module's variables are found by name.
"""
from __future__ import annotations

import ctypes

ATTRIBUTES = {"max_threads_per_block": 1, "max_grid_dim_x": 5, "shared_memory_per_block": 8,
              "warp_size": 10, "multiprocessors": 16, "pci_bus_id": 33,
              "l2_cache": 38, "max_threads_per_multiprocessor": 39,
              "cc_major": 75, "cc_minor": 76, "shared_memory_per_block_optin": 97,
              "max_blocks_per_multiprocessor": 106,
              "registers_per_multiprocessor": 82}


class Unavailable(RuntimeError):
    """No GPU can be used; the message says why."""


def _error(lib, result, what):
    text = ctypes.c_char_p()
    name = ""
    if lib.cuGetErrorName(result, ctypes.byref(text)) == 0 and text.value:
        name = text.value.decode()
    return Unavailable(f"{what} failed: {name or 'error'} ({result})")


def find() -> list[dict]:
    """One dict a GPU: name, memory (bytes), compute capability ("9.0"), driver version
    ("12.4") and the `ATTRIBUTES`."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise Unavailable(f"no CUDA driver ({e})") from None

    def call(what, result):
        if result:
            raise _error(lib, result, what)

    call("cuInit", lib.cuInit(0))
    version, count = ctypes.c_int(), ctypes.c_int()
    call("cuDriverGetVersion", lib.cuDriverGetVersion(ctypes.byref(version)))
    call("cuDeviceGetCount", lib.cuDeviceGetCount(ctypes.byref(count)))
    if count.value == 0:
        raise Unavailable(f"the CUDA driver {version.value // 1000}.{version.value % 1000 // 10}"
                          f" finds no GPU")
    out = []
    for i in range(count.value):
        dev = ctypes.c_int()
        call("cuDeviceGet", lib.cuDeviceGet(ctypes.byref(dev), i))
        name = ctypes.create_string_buffer(256)
        call("cuDeviceGetName", lib.cuDeviceGetName(name, 256, dev))
        mem = ctypes.c_size_t()
        call("cuDeviceTotalMem", lib.cuDeviceTotalMem_v2(ctypes.byref(mem), dev))
        info = {"name": name.value.decode(), "memory": mem.value,
                "driver": f"{version.value // 1000}.{version.value % 1000 // 10}"}
        for key, attr in ATTRIBUTES.items():
            v = ctypes.c_int()
            call("cuDeviceGetAttribute", lib.cuDeviceGetAttribute(ctypes.byref(v), attr, dev))
            info[key] = v.value
        info["compute_capability"] = f"{info.pop('cc_major')}.{info.pop('cc_minor')}"
        out.append(info)
    return out


CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6
CU_JIT_INPUT_PTX = 1
_cuda = None


def _lib():
    global _cuda
    if _cuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        p, u, z = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
        lib.cuLinkCreate_v2.argtypes = [u, p, p, p]
        lib.cuLinkAddData_v2.argtypes = [p, ctypes.c_int, p, z, ctypes.c_char_p, u, p, p]
        lib.cuLinkComplete.argtypes = [p, p, p]
        lib.cuLinkDestroy.argtypes = [p]
        lib.cuModuleGetGlobal_v2.argtypes = [p, p, p, ctypes.c_char_p]
        _cuda = lib
    return _cuda


def link(objects, name: str = "") -> bytes:
    """A cubin for the current context's GPU from PTX objects (each NUL-terminated),
    linked by the driver's JIT; a failure is RuntimeError with the JIT's log."""
    lib = _lib()
    log = ctypes.create_string_buffer(16384)
    opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    vals = (ctypes.c_void_p * 2)(ctypes.addressof(log), len(log))
    state = ctypes.c_void_p()

    def check(what, result):
        if result:
            text = log.value.decode(errors="replace").strip()
            raise RuntimeError(f"{_error(lib, result, what)}{': ' + text if text else ''}")

    check("cuLinkCreate", lib.cuLinkCreate_v2(2, opts, vals, ctypes.byref(state)))
    try:
        for i, code in enumerate(objects):
            check(f"cuLinkAddData of PTX object {i} of {name or 'an image'}",
                  lib.cuLinkAddData_v2(state, CU_JIT_INPUT_PTX, code, len(code),
                                       f"{name}.{i}.ptx".encode(), 0, None, None))
        cubin, size = ctypes.c_void_p(), ctypes.c_size_t()
        check("cuLinkComplete", lib.cuLinkComplete(state, ctypes.byref(cubin),
                                                   ctypes.byref(size)))
        return ctypes.string_at(cubin.value, size.value)   # before the state goes
    finally:
        lib.cuLinkDestroy(state)


def global_address(module: int, name: str) -> tuple[int, int]:
    """The device address and size of a module's global variable ``name``."""
    lib = _lib()
    addr, size = ctypes.c_uint64(), ctypes.c_size_t()
    r = lib.cuModuleGetGlobal_v2(ctypes.byref(addr), ctypes.byref(size), module, name.encode())
    if r:
        raise RuntimeError(f"{_error(lib, r, 'cuModuleGetGlobal')}: no variable {name!r}")
    return addr.value, size.value
