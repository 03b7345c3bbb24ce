"""libpygomp.so, the C face: programs built with ``gcc -fopenmp`` offload through pygomp.

    python -m pygomp shim               # the library's path (built and cached if needed)
    LD_PRELOAD=$(python -m pygomp shim) ./prog          # an unchanged binary
    gcc -fopenmp prog.c -L$DIR -lpygomp -Wl,-rpath,$DIR # linked ahead of libgomp
    pygomp.csrc.shim.load()             # in Python: C code loaded later with ctypes
                                        # shares this process's devices and maps

The library is built from csrc/ (build.py) by the system C compiler against the running
Python and cached under PYGOMP_CACHE_DIR, keyed by its sources, the numbers C gets
(contract.py), that Python and cffi.  Started from C, it runs that Python (a virtual
environment's packages included); PYGOMP_PYTHON names another one.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import threading

_lock = threading.Lock()
_loaded = None


def _key() -> str:
    import cffi
    from . import build, contract
    h = hashlib.sha256()
    for f in build.sources():
        h.update(f.read_bytes())
    h.update(contract.c_text().encode())      # the runtime's numbers in it too
    h.update(f"{sys.executable}\0{sys.version}\0{cffi.__version__}".encode())
    return h.hexdigest()[:20]


def path() -> str:
    """The absolute path of libpygomp.so, built first if this configuration has none."""
    from ..runtime import env
    from . import build
    directory = os.path.join(env.cache_dir(), "shim", _key())
    lib = os.path.join(directory, "libpygomp.so")
    if not os.path.exists(lib):
        with _lock:
            if not os.path.exists(lib):
                build.build(directory)
    return lib


def load() -> ctypes.CDLL:
    """Load libpygomp.so into this process (RTLD_GLOBAL), once: C libraries loaded with
    ctypes afterwards run their target regions through this process's runtime."""
    global _loaded
    lib = path()
    with _lock:
        if _loaded is None:
            _loaded = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    return _loaded
