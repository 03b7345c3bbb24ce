"""What the benchmarks share: timing in alternation and finding an OpenCL device."""
from __future__ import annotations

import time

from pygomp.runtime import devices


def duel(fs: dict, repeat):
    """Best time of each function, measured in alternation (fair on a busy machine)."""
    out = {k: float("inf") for k in fs}
    for f in fs.values():
        f()
    for _ in range(repeat):
        for k, f in fs.items():
            t = time.perf_counter()
            f()
            out[k] = min(out[k], time.perf_counter() - t)
    return out


def opencl_device(word):
    """The first OpenCL device whose name matches ``word`` (for example "pocl")."""
    for d in devices.all_devices():
        if d.plugin.name == "opencl" and d.info.matches(word):
            return d
    raise SystemExit(f"no OpenCL device matches {word!r}; try PYGOMP_DEVICES=opencl:{word}")


def form_table(rows):
    """Print ``(device label, case, form, hand, numpy)`` rows of times (seconds) as they
    come: a form against the same loops by hand in a kernel, and against numpy."""
    print(f"{'device':8} {'case':18} {'form':>11} {'hand':>11} {'numpy':>11} "
          f"{'form/hand':>10} {'form/numpy':>11}")
    for label, name, form, hand, numpy_t in rows:
        print(f"{label:8} {name:18} {form * 1e3:9.3f}ms {hand * 1e3:9.3f}ms "
              f"{numpy_t * 1e3:9.3f}ms {form / hand:10.2f} {form / numpy_t:11.2f}",
              flush=True)
