"""`python -m pygomp demo`: every example on every device, checked against numpy.

An example is a module of examples/ (installed as the package `pygomp_examples`) with
``NAME``, ``SIZE`` and ``run(device, size)`` returning ``(result, reference)``; the demo
times the run and compares with numpy.
"""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np

from . import api, constructs
from .runtime import devices


def _examples_dir():
    """Where the examples are: the installed package `pygomp_examples`, else the
    examples/ folder of the source tree this pygomp runs from (None if neither)."""
    spec = importlib.util.find_spec("pygomp_examples")
    if spec and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    root = Path(__file__).resolve().parent.parent / "examples"
    return root if (root / "saxpy.py").is_file() else None


def _examples(root):
    mods = []
    for path in sorted(root.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"pygomp_examples.{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, "run"):
            mods.append(mod)
    return mods


def _round_trip(dev_number, n):
    """Map to, run nothing, update from: the bytes come back through the device."""
    a = np.arange(n, dtype=np.float64)
    b = np.empty_like(a)
    with constructs.target_data(dev_number, to=[a]):
        p = api.omp_get_mapped_ptr(a, dev_number)
        api.omp_target_memcpy(b, p, a.nbytes, 0, 0, api.omp_get_initial_device(), dev_number)
    return b, a


def _row(dev, name, size, fn):
    """Run once to compile and map, then time a second run."""
    t = 0.0
    try:
        fn()
        t = time.perf_counter()
        result, reference = fn()
        ok = np.allclose(result, reference, rtol=1e-4, atol=1e-6)
        check = "ok" if ok else "WRONG"
    except Exception as e:
        ok, check = False, f"error: {type(e).__name__}: {e}"
    ms = (time.perf_counter() - t) * 1e3 if t else 0.0
    label = f"{dev.number}: {'initial' if dev.is_initial else dev.plugin.name}"
    print(f"{label:<14} {name:<12} {size:>10} {ms:>10.2f} ms  {check}")
    return ok


def main(size=0) -> int:
    root = _examples_dir()
    examples = _examples(root) if root else []
    if examples:
        print(f"examples: {root} (python {root / 'NAME.py'} runs one)")
    else:
        print("examples: none found, so only the round trip runs; they are the examples/ "
              "folder of pygomp's source, installed as the package pygomp_examples")
    print("time: an example's second run, its data set-up, transfers and numpy reference "
          "included (bench/ measures kernels alone)")
    print(f"{'device':<14} {'kernel':<12} {'size':>10} {'time':>13}  check")
    ok = True
    for dev in devices.all_devices():
        n = size or 1 << 20
        ok &= _row(dev, "round trip", n, lambda: _round_trip(dev.number, n))
        for mod in examples:
            n = size or mod.SIZE
            ok &= _row(dev, mod.NAME, n, lambda: mod.run(dev.number, n))
    return 0 if ok else 1
