"""The CUDA C of every kernel the test-suite made (conftest.SPECS) and of every example
builds with NVRTC for sm_70, sm_80 and sm_90 (PTX, with the CUDA plugin's options), and
ptxas accepts the PTX for each architecture it knows; none synchronizes the grid (so none
needs a cooperative launch).  It runs after every other test.

To stay quick, kernels are built many to a program (each in a namespace of its own, the
dialect's preamble once), programs in parallel, and a kernel that built is remembered in
pytest's cache (.pytest_cache) under its source, architecture and compilers.  A program
that fails is built again kernel by kernel, so that the failure names each kernel.
"""
import concurrent.futures as cf
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import conftest  # noqa: E402

nvrtc = pytest.importorskip("pygomp.plugins.cuda.nvrtc")
ARCHS = (70, 80, 90)
BATCH = 25                      # kernels per program


def _nvrtc_or_skip():
    try:
        return nvrtc.version()
    except nvrtc.NvrtcMissing as e:
        pytest.skip(str(e))


def example_kernels():
    """The examples' kernels, specialized as the examples call them (run on the initial
    device at small sizes); upc_stencil's with the types its arrays have."""
    import numpy as np
    import test_kernels_examples as tke
    from pygomp.kernels import dialect_for
    from pygomp.runtime import devices
    initial = devices.num_devices()
    for name in tke.NAMES:
        tke.load(name).run(initial, tke.SMALL[name])
    mod = tke.load("upc_stencil")
    f8 = np.zeros(4)
    host = dialect_for("host")
    mod.dot.spec((f8, 0, 1, 1, f8)).unit(host)
    mod.smooth.spec((f8, 0, 1, 1, f8, f8, 1)).unit(host)


def sources():
    """{CUDA source: kernel name} of every specialization made so far that another
    target built (the others test the compiler's errors), and the kernels the CUDA
    dialect refused or that would need all their blocks resident at once ({name:
    error}): no kernel may ask for a cooperative launch or synchronize the grid."""
    from pygomp.plugins.cuda.target import HOOKS
    out, refused = {}, {}
    for spec in conftest.SPECS:
        if not any(t != "cuda" for t in spec.units):
            continue
        try:
            unit = spec.unit(HOOKS)
        except Exception as e:          # noqa: BLE001  (reported below)
            refused[spec.name] = f"the CUDA dialect refused it: {type(e).__name__}: {e}"
            continue
        if any(k.cooperative for k in unit.kernels) or any(
                w in unit.source for w in ("cooperative_groups", "this_grid", "grid_group")):
            refused[spec.name] = "it synchronizes the grid (a cooperative launch)"
        out.setdefault(unit.source, spec.name)
    return out, refused


def program(units):
    """One CUDA program holding the given sources (which share the dialect's preamble)."""
    from pygomp.plugins.cuda.target import HOOKS
    pre = HOOKS.preamble(None).rstrip("\n")
    parts = [pre]
    for i, src in enumerate(units):
        assert src.startswith(pre), "a kernel without the dialect's preamble"
        body = src[len(pre):].replace('extern "C" __global__', "__global__")
        parts.append(f"namespace pyg_unit{i} {{\n{body}\n}}")
    return "\n".join(parts) + "\n"


def ptxas_knows(arch):
    """Whether the ptxas on PATH assembles for sm_<arch> (None: no ptxas)."""
    if not shutil.which("ptxas"):
        return None
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d, "t.ptx")
        p.write_text(f".version 7.0\n.target sm_{arch}\n.address_size 64\n")
        r = subprocess.run(["ptxas", f"-arch=sm_{arch}", str(p), "-o", str(p) + ".o"],
                           capture_output=True, text=True)
        return "is not defined for option" not in r.stderr


def build(units, arch, assemble):
    """Errors of building ``units`` for sm_<arch> ([] when all built)."""
    from pygomp.plugins.cuda.plugin import OPTIONS
    try:
        ptx = nvrtc.compile(program(units), f"compute_{arch}", OPTIONS, "kernels")
    except Exception as e:              # noqa: BLE001
        return [f"NVRTC compute_{arch}: {e}"]
    if not assemble:
        return []
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d, "k.ptx")
        path.write_bytes(ptx.rstrip(b"\0"))
        r = subprocess.run(["ptxas", "-O0", f"-arch=sm_{arch}", str(path), "-o",
                            str(path) + ".cubin"], capture_output=True, text=True)
    return [] if r.returncode == 0 else [f"ptxas sm_{arch}: {r.stderr.strip()[:2000]}"]


@pytest.mark.slow
def test_a_product_is_rounded_before_the_sum():
    """With the plugin's options NVRTC keeps ``x * y + z`` a product then a sum, as numpy
    rounds it (its default fuses them into one fma)."""
    _nvrtc_or_skip()
    from pygomp.plugins.cuda.plugin import OPTIONS
    src = ('extern "C" __global__ void k(double *x, double *y, double *z)'
           '{ int i = threadIdx.x; z[i] = x[i] * y[i] + z[i]; }')
    fused = nvrtc.compile(src, "compute_80", [o for o in OPTIONS if "fmad" not in o])
    assert b"fma.rn.f64" in fused       # the test sees a fusion where there is one
    ptx = nvrtc.compile(src, "compute_80", OPTIONS)
    assert b"fma." not in ptx and b"mul.rn.f64" in ptx


def test_every_kernel_builds_for_cuda(request):
    version = _nvrtc_or_skip()
    example_kernels()
    found, refused = sources()
    assert len(found) >= 9, "the examples alone make 9 kernels: is conftest.SPECS recording?"
    from pygomp.plugins.cuda.plugin import OPTIONS
    store = getattr(request.config, "cache", None)       # None under -p no:cacheprovider
    cache = pathlib.Path(store.mkdir("cuda-build") if store else tempfile.mkdtemp())
    ptxas = subprocess.run(["ptxas", "--version"], capture_output=True, text=True
                           ).stdout if shutil.which("ptxas") else ""
    knows = {a: ptxas_knows(a) for a in ARCHS}

    def mark(src, arch):
        h = hashlib.sha256(f"{version}|{OPTIONS}|{ptxas}|{knows[arch]}|{arch}|{src}".encode())
        return cache / h.hexdigest()

    jobs = []
    for arch in ARCHS:
        todo = [s for s in found if not mark(s, arch).exists()]
        jobs += [(todo[i:i + BATCH], arch) for i in range(0, len(todo), BATCH)]

    def run(job):
        units, arch = job
        errors = build(units, arch, knows[arch])
        if errors and len(units) > 1:           # name each failing kernel
            errors = [f"{found[u]}: {e}" for u in units for e in build([u], arch, knows[arch])]
        if not errors:
            for u in units:
                mark(u, arch).touch()
        return errors

    with cf.ThreadPoolExecutor(max(os.cpu_count() or 2, 2)) as pool:
        errors = [e for errs in pool.map(run, jobs) for e in errs]
    refused_text = [f"{name}: {e}" for name, e in refused.items()]
    if refused_text or errors:
        pytest.fail("\n\n".join(refused_text + errors), pytrace=False)
    unknown = [a for a, k in knows.items() if k is False]
    if unknown:             # say it, as a warning in pytest's summary
        import warnings
        warnings.warn(f"ptxas ({ptxas.strip().splitlines()[-1] if ptxas else '-'}) does not "
                      f"know sm_{', sm_'.join(map(str, unknown))}: NVRTC's PTX for it was "
                      f"not assembled")
