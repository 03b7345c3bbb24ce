"""NVRTC, CUDA's runtime compiler, through its C API (ctypes): no device, no cupy.

The library comes from the ``nvidia-cuda-nvrtc-cu12`` wheel when it is installed, else
from the system (``libnvrtc.so.13``, ``.so.12``, ``CUDA_HOME/lib64``).  `compile` turns
CUDA C into a cubin for ``sm_XY`` or PTX for ``compute_XY``; a compile error is a
`CompileError` at the Python line (the source carries ``#line`` directives).
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import threading

from pygomp.errors import CompileError, compiler_error

_lib = None
_lock = threading.Lock()


class NvrtcMissing(OSError):
    """No NVRTC library could be loaded."""


def _candidates():
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        yield from sorted(glob.glob(os.path.join(base, "cuda_nvrtc", "lib", "libnvrtc.so*")))
    yield from ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")
    for home in filter(None, (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                              "/usr/local/cuda")):
        yield from sorted(glob.glob(os.path.join(home, "lib64", "libnvrtc.so*")))


def library():
    """The loaded NVRTC library (raises NvrtcMissing, naming where it looked)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                tried = []
                for path in _candidates():
                    if "builtins" in path or ".alt." in path:
                        continue
                    try:
                        lib = ctypes.CDLL(path)
                        lib.nvrtcVersion          # noqa: B018  (is it NVRTC?)
                    except (OSError, AttributeError):
                        tried.append(path)
                        continue
                    _declare(lib)
                    _lib = lib
                    break
                else:
                    raise NvrtcMissing("NVRTC not found (pip install nvidia-cuda-nvrtc-cu12, "
                                       "or a CUDA toolkit); tried " + ", ".join(tried))
    return _lib


def _declare(lib):
    p, c, i, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
    P, I, SZ = ctypes.POINTER(p), ctypes.POINTER(i), ctypes.POINTER(sz)
    for name, args in (("nvrtcVersion", (I, I)),
                       ("nvrtcCreateProgram", (P, c, c, i, p, p)),
                       ("nvrtcCompileProgram", (p, i, ctypes.POINTER(c))),
                       ("nvrtcDestroyProgram", (P,)),
                       ("nvrtcGetProgramLogSize", (p, SZ)),
                       ("nvrtcGetProgramLog", (p, c)),
                       ("nvrtcGetPTXSize", (p, SZ)), ("nvrtcGetPTX", (p, c)),
                       ("nvrtcGetCUBINSize", (p, SZ)), ("nvrtcGetCUBIN", (p, c)),
                       ("nvrtcGetNumSupportedArchs", (I,)), ("nvrtcGetSupportedArchs", (I,))):
        f = getattr(lib, name)
        f.argtypes, f.restype = args, i
    lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = (i,), c


def _check(result, what):
    if result:
        msg = library().nvrtcGetErrorString(result).decode()
        raise CompileError(f"NVRTC: {what} failed: {msg}")


def version() -> str:
    """"12.9" (raises NvrtcMissing)."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "version")
    return f"{major.value}.{minor.value}"


def supported_archs() -> list[int]:
    """The compute capabilities this NVRTC compiles for, as ints (75, 80, ...)."""
    lib = library()
    n = ctypes.c_int()
    _check(lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "supported archs")
    out = (ctypes.c_int * n.value)()
    _check(lib.nvrtcGetSupportedArchs(out), "supported archs")
    return list(out)


def target_for(capability: int) -> str:
    """What to build for a device of this compute capability (e.g. 90): a cubin for
    ``sm_90`` when NVRTC knows it, else PTX for the newest ``compute_XY`` below it
    (the driver finishes it)."""
    archs = supported_archs()
    if capability in archs:
        return f"sm_{capability}"
    lower = [a for a in archs if a <= capability]
    if not lower:
        raise CompileError(f"NVRTC {version()} cannot compile for compute capability "
                           f"{capability / 10:.1f} (it knows {archs})")
    return f"compute_{max(lower)}"


def compile(source: str, arch: str, options=(), name: str = "kernel") -> bytes:
    """``source`` built for ``arch``: a cubin for ``sm_XY``, PTX text (NUL-terminated)
    for ``compute_XY``."""
    lib = library()
    prog = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"pygomp.cu", 0,
                                  None, None), "create program")
    try:
        opts = [f"--gpu-architecture={arch}", *options]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        result = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if result:
            n = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            log = ctypes.create_string_buffer(n.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise compiler_error("NVRTC", log.value.decode(errors="replace").strip(), name)
        what = "CUBIN" if arch.startswith("sm_") else "PTX"
        n = ctypes.c_size_t()
        _check(getattr(lib, f"nvrtcGet{what}Size")(prog, ctypes.byref(n)), f"{what} size")
        out = ctypes.create_string_buffer(n.value)
        _check(getattr(lib, f"nvrtcGet{what}")(prog, out), what)
        return out.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
