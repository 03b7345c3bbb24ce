"""The CUDA plugin: compiling only, for now.

It turns a unit of the CUDA dialect into PTX for a device's compute capability (the
device identity) with nvcc.  Memory, copies and launches are not written yet, so the
plugin offers no devices; ``python -m pygomp compile --target cuda`` finds its dialect
through the plugin's entry point, and `compile_ptx` builds PTX without a device.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from pygomp.errors import CompileError, compiler_error
from pygomp.runtime.plugin import Plugin


class CudaPlugin(Plugin):
    name = "cuda"
    target = "cuda"
    title = "CUDA"

    def _devices_impl(self):
        return []                     # nothing can run here yet

    def _identity_impl(self, dev):
        return "cuda:" + _arch(self.devices()[dev].properties["compute_capability"])

    def _compiler_key(self, dev, unit):
        nvcc = shutil.which("nvcc") or ""
        st = os.stat(nvcc) if nvcc else None
        return f"{nvcc}|{st.st_size if st else 0}|{st.st_mtime if st else 0}"

    def _compile_impl(self, dev, unit):
        arch = _arch(self.devices()[dev].properties["compute_capability"])
        return compile_ptx(unit.source, arch, ", ".join(k.name for k in unit.kernels))

    def target_hooks(self):
        from . import target
        return target.HOOKS


def _arch(capability: str) -> str:
    """"9.0" -> "sm_90"."""
    return "sm_" + capability.replace(".", "")


def compile_ptx(source: str, arch: str = "", name: str = "kernel") -> bytes:
    """nvcc -ptx for ``arch`` (default: PYGOMP_CUDA_ARCH, else sm_80)."""
    arch = arch or os.environ.get("PYGOMP_CUDA_ARCH", "sm_80")
    with tempfile.TemporaryDirectory(prefix="pygomp-cu-") as d:
        src, out = os.path.join(d, "k.cu"), os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(source)
        try:
            p = subprocess.run(["nvcc", "-ptx", f"-arch={arch}", "-O3", src, "-o", out],
                               capture_output=True, text=True)
        except OSError as e:
            raise CompileError(f"cannot run nvcc: {e}") from None
        if p.returncode != 0:
            raise compiler_error("nvcc", (p.stderr or p.stdout).strip(), name)
        with open(out, "rb") as f:
            return f.read()
