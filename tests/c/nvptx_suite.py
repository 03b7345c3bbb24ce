"""GCC 12's libgomp run tests built with ``-foffload=nvptx-none``, on a GPU: under libgomp
with its own nvptx plugin (the anchor) and under the shim on the CUDA plugin, the same
binary; pass counts side by side (bench/gpu_check.sh runs it).

    python tests/c/nvptx_suite.py TESTSUITE [--jobs N] [--budget SECONDS] [-k PATTERN]
    python tests/c/nvptx_suite.py TESTSUITE --build-only DIR    # where gcc can build
    python tests/c/nvptx_suite.py --prebuilt DIR                # on the GPU machine

TESTSUITE is gcc-12's libgomp/testsuite (e.g. from ``apt-get download gcc-12-source``,
which `make conformance` unpacks under PYGOMP_CACHE_DIR).  A test is built with its
``dg-additional-options`` only (of the other DejaGnu directives only ``dg-do`` is read),
so some tests fail to build or fail under both runtimes: compare the columns, not the
totals.  ``--build-only`` and ``--prebuilt`` serve a GPU machine without gcc's offload
compiler: the programs, and the libgomp they need, travel there.
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

from pygomp.csrc import shim

OFFLOAD = ["-foffload=nvptx-none", "-foffload-options=nvptx-none=-misa=sm_80"]
SUITES = {"libgomp.c": ["-fopenmp"], "libgomp.c-c++-common": ["-fopenmp"],
          "libgomp.oacc-c-c++-common": ["-fopenacc", "-DACC_DEVICE_TYPE_nvidia=1",
                                        "-DACC_MEM_SHARED=0"]}
NOT_RUN = re.compile(r"dg-do\s+(compile|assemble|link|preprocess)")   # run: the default
USES_DEVICE = re.compile(r"#\s*pragma\s+(omp\s+target|acc\s)|\bacc_\w+\s*\(")
TIMEOUT = 60
MANIFEST = "MANIFEST"


def tests(root: Path, pattern: str):
    for suite, flags in SUITES.items():
        for src in sorted((root / suite).glob("*.c")):
            text = src.read_text(errors="replace")
            if (not NOT_RUN.search(text) and USES_DEVICE.search(text)
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
    """(passed, the last lines of its output)."""
    try:
        done = subprocess.run([exe], env=env, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"no end after {TIMEOUT} s"
    text = (done.stdout + done.stderr).decode(errors="replace").strip().splitlines()
    return done.returncode == 0, " | ".join(text[-3:])[:300]


def build_only(todo, out: Path, jobs):
    """Build the tests into ``out`` with a list of them (MANIFEST: a name and its
    program, or "-" where it did not build), for a GPU machine without gcc's offload
    compiler; the libgomp and nvptx plugin they run with go into ``out/lib``."""
    (out / "lib").mkdir(parents=True, exist_ok=True)
    for lib in ("libgomp.so.1", "libgomp-plugin-nvptx.so.1"):
        found = subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True,
                               text=True).stdout.strip()
        (out / "lib" / lib).write_bytes(Path(found).read_bytes())
    with ThreadPoolExecutor(jobs) as pool:
        built = [(name, pool.submit(build, name, src, flags, out)) for name, src, flags in todo]
        lines = [f"{name} {os.path.basename(f.result() or '-')}" for name, f in built]
    (out / MANIFEST).write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} tests, {sum(not ln.endswith(' -') for ln in lines)} built into {out}")
    return 0


def prebuilt(out: Path):
    """The tests `build_only` left in ``out``: [(name, program or None)]."""
    out = out.resolve()
    pairs = [line.split() for line in (out / MANIFEST).read_text().splitlines()]
    return [(name, None if exe == "-" else str(out / exe)) for name, exe in pairs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("testsuite", nargs="?")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--budget", type=float, default=240, help="seconds for all of it")
    ap.add_argument("-k", default="")
    ap.add_argument("--build-only", metavar="DIR", type=Path)
    ap.add_argument("--prebuilt", metavar="DIR", type=Path)
    a = ap.parse_args()
    if not a.prebuilt and not a.testsuite:
        ap.error("name TESTSUITE, or --prebuilt DIR")
    if a.build_only:
        return build_only(list(tests(Path(a.testsuite), a.k)), a.build_only, a.jobs)
    end = time.monotonic() + a.budget
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMP_", "ACC_", "GOMP_", "PYGOMP_", "LD_PRELOAD"))}
    if a.prebuilt:                  # the libgomp and nvptx plugin they were built with
        base["LD_LIBRARY_PATH"] = ":".join(filter(None, [
            str(a.prebuilt.resolve() / "lib"), base.get("LD_LIBRARY_PATH")]))
    ways = {"libgomp": dict(base, OMP_TARGET_OFFLOAD="mandatory", ACC_DEVICE_TYPE="nvidia"),
            "shim": dict(base, LD_PRELOAD=shim.path(), PYGOMP_DEVICES="cuda:0",
                         OMP_TARGET_OFFLOAD="mandatory")}

    def both(exe):
        return exe and {w: run(exe, env) for w, env in ways.items()}

    results = {}                    # name -> {way: True/False}, or None: no build
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.jobs) as pool:
        if a.prebuilt:
            todo = [(name, exe) for name, exe in prebuilt(a.prebuilt) if a.k in name]
            runs = {name: pool.submit(both, exe) for name, exe in todo}
        else:
            todo = list(tests(Path(a.testsuite), a.k))
            runs = {name: pool.submit(lambda *b: both(build(*b)), name, src, flags, Path(tmp))
                    for name, src, flags in todo}
        for name, f in runs.items():
            try:
                results[name] = f.result(timeout=max(end - time.monotonic(), 0))
            except TimeoutError:
                print(f"budget of {a.budget:.0f} s spent: {len(results)} of {len(todo)} tests")
                for g in runs.values():
                    g.cancel()
                break
    ran = {n: r for n, r in results.items() if r}
    print(f"{len(results)} tests, {len(results) - len(ran)} did not build")
    for suite in SUITES:
        mine = [r for n, r in ran.items() if n.startswith(suite + "/")]
        print(f"{suite}: passed under libgomp {sum(r['libgomp'][0] for r in mine)}, "
              f"under the shim {sum(r['shim'][0] for r in mine)}, of {len(mine)}")
    lost = sorted(n for n, r in ran.items() if r["libgomp"][0] and not r["shim"][0])
    for n in lost:
        print(f"  passes under libgomp only: {n}: {ran[n]['shim'][1]}")
    for n in sorted(n for n, r in ran.items() if r["shim"][0] and not r["libgomp"][0]):
        print(f"  passes under the shim only: {n}: {ran[n]['libgomp'][1]}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
