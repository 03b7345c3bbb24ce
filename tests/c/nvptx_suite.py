"""GCC 12's libgomp run tests built with ``-foffload=nvptx-none``, on a GPU: under libgomp
with its own nvptx plugin (the anchor) and under the shim on the CUDA plugin, the same
binary; pass counts side by side (bench/gpu_check.sh runs it).

    python tests/c/nvptx_suite.py TESTSUITE [--jobs N] [--budget SECONDS] [-k PATTERN]

TESTSUITE is gcc-12's libgomp/testsuite (e.g. from ``apt-get download gcc-12-source``,
which `make conformance` unpacks under PYGOMP_CACHE_DIR).  A test is built with its
``dg-additional-options`` only (no other DejaGnu directive is read), so a few tests
fail to build or fail under both runtimes: compare the columns, not the totals.
Exit status 0 when every test that passes under libgomp passes under the shim.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pygomp import shim

OFFLOAD = ["-foffload=nvptx-none", "-foffload-options=nvptx-none=-misa=sm_80"]
SUITES = {"libgomp.c-c++-common": ["-fopenmp"],
          "libgomp.oacc-c-c++-common": ["-fopenacc", "-DACC_DEVICE_TYPE_nvidia=1",
                                        "-DACC_MEM_SHARED=0"]}
USES_DEVICE = re.compile(r"#\s*pragma\s+(omp\s+target|acc\s)|\bacc_\w+\s*\(")
TIMEOUT = 60


def tests(root: Path, pattern: str):
    for suite, flags in SUITES.items():
        for src in sorted((root / suite).glob("*.c")):
            text = src.read_text(errors="replace")
            if ("dg-do run" in text and USES_DEVICE.search(text)
                    and pattern in f"{suite}/{src.name}"):
                extra = re.findall(r"dg-additional-options\s+\"([^\"]*)\"", text)
                yield f"{suite}/{src.name}", src, flags + " ".join(extra).split()


def build(name, src, flags, out: Path):
    exe = out / name.replace("/", "_")
    done = subprocess.run(["gcc", *flags, *OFFLOAD, "-O2", "-I", str(src.parent),
                           str(src), "-o", str(exe), "-lm"], capture_output=True, text=True,
                          timeout=4 * TIMEOUT)
    return str(exe) if done.returncode == 0 else None


def run(exe, env):
    try:
        return subprocess.run([exe], env=env, capture_output=True, timeout=TIMEOUT).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("testsuite")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--budget", type=float, default=240, help="seconds for all of it")
    ap.add_argument("-k", default="")
    a = ap.parse_args()
    end = time.monotonic() + a.budget
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMP_", "ACC_", "GOMP_", "PYGOMP_", "LD_PRELOAD"))}
    ways = {"libgomp": dict(base, OMP_TARGET_OFFLOAD="mandatory", ACC_DEVICE_TYPE="nvidia"),
            "shim": dict(base, LD_PRELOAD=shim.path(), PYGOMP_DEVICES="cuda:0",
                         OMP_TARGET_OFFLOAD="mandatory")}
    results = {}                    # name -> {way: True/False}, or None: no build
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.jobs) as pool:
        todo = list(tests(Path(a.testsuite), a.k))
        built = {name: pool.submit(build, name, src, flags, Path(tmp))
                 for name, src, flags in todo}
        for name, f in built.items():
            if time.monotonic() > end:
                print(f"budget of {a.budget:.0f} s spent: {len(results)} of {len(todo)} tests")
                break
            exe = f.result()
            results[name] = exe and {w: run(exe, env) for w, env in ways.items()}
    ran = {n: r for n, r in results.items() if r}
    print(f"{len(results)} tests, {len(results) - len(ran)} did not build")
    for suite in SUITES:
        mine = [r for n, r in ran.items() if n.startswith(suite + "/")]
        print(f"{suite}: passed under libgomp {sum(r['libgomp'] for r in mine)}, "
              f"under the shim {sum(r['shim'] for r in mine)}, of {len(mine)}")
    lost = sorted(n for n, r in ran.items() if r["libgomp"] and not r["shim"])
    for n in lost:
        print(f"  passes under libgomp only: {n}")
    for n in sorted(n for n, r in ran.items() if r["shim"] and not r["libgomp"]):
        print(f"  passes under the shim only: {n}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
