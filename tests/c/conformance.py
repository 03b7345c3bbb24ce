"""GCC 12's libgomp offload tests under libpygomp.so and under libgomp alone.

    python tests/c/conformance.py [--src DIR] [--jobs N] [-k PATTERN] [-v]

`make conformance` runs this (it is not part of `make test`).  It fetches GCC 12's
source package with ``apt-get download gcc-12-source`` (into PYGOMP_CACHE_DIR; nothing
of it is committed; --src names an unpacked gcc-12 tree instead), checks pygomp's map
kinds against gomp-constants.h, builds every run test of libgomp.c and
libgomp.c-c++-common that uses an offload construct or routine with
``gcc -fopenmp -foffload=disable`` and the test's own options, and runs each one
under libgomp alone (its host fallback, shared memory) and under the shim on the host
device (separate memory).  A test that fails under the shim is run again under the
shim on the initial device (shared memory), and every failure is listed with its
reason: SEPARATE_MEMORY for those that fail only because memory is separate, KNOWN
for the others that are understood.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pygomp import shim
from pygomp.runtime import env, kinds

SUITES = ("libgomp.c", "libgomp.c-c++-common")
OFFLOAD = re.compile(r"#\s*pragma\s+omp\s+(target|declare\s+target)\b|\bomp_target_\w+\s*\("
                     r"|\bomp_get_num_devices\b|\bomp_is_initial_device\b")
TIMEOUT = 120

_DECLARE_TARGET = ("uses a 'declare target' variable: the region's host code reads and "
                   "writes the host's own variable (no offload image gives it a device copy), "
                   "while the maps copy it as separate memory")
# Why a test fails only because memory is separate.
SEPARATE_MEMORY = {
    "libgomp.c-c++-common/ptr-attach-1.c": _DECLARE_TARGET + " (gp[:N] attaches to nothing)",
    "libgomp.c/pr86660.c": _DECLARE_TARGET + " (map(always, tofrom: v) copies the old v back)",
    "libgomp.c/target-link-1.c": _DECLARE_TARGET + " (declare target to/link b, c, d)",
    "libgomp.c/declare-variant-2.c": "the region's host code calls the variants selected for "
                                     "device={kind(host)}, which abort unless "
                                     "omp_is_initial_device(); on the host device it is 0",
}
# Why other tests fail under the shim.
KNOWN = {
    "libgomp.c-c++-common/target-has-device-addr-1.c":
        "pygomp maps nothing for an absent zero-length section (libgomp makes a zero-length "
        "entry), so use_device_addr of 'int u[0]' finds nothing",
    "libgomp.c/target-20.c":
        "pygomp keeps OpenACC's two reference counts for OpenMP too: 'target exit data' "
        "inside 'target data' leaves the structured count (OpenMP and libgomp have one count)",
    "libgomp.c/address-space-1.c":
        "a __seg_fs variable: host code cannot reach it through a generic pointer (it needs "
        "a device of its own; libgomp alone does not run it either)",
}

# The effective-target probes of libgomp's testsuite (lib/libgomp.exp), decided by
# running them under each runtime.
PROBES = {
    "offload_device": "#include <omp.h>\nint main(void) { int a;\n"
                      "#pragma omp target map(from: a)\n a = omp_is_initial_device();\n"
                      "return a; }\n",
    "offload_device_nonshared_as": "int main(void) { int a = 8;\n"
                                   "#pragma omp target map(to: a)\n a++;\n return a != 8; }\n",
    "offload_device_shared_as": "int main(void) { int x = 10;\n"
                                "#pragma omp target map(to: x)\n x++;\n return x == 10; }\n",
}
# Effective targets this machine (x86_64 Linux, gcc 12 with -foffload=disable) has.
HAVE = {"vect_simd_clones", "lto", "tls_runtime", "__float128", "large_long_double", "c",
        "x86_64-*-*", "i?86-*-*", "*-*-linux*", "*-*-gnu*", "*-*-*", "alias"}


def fetch(cache: Path) -> Path:
    """An unpacked libgomp testsuite and include/ of GCC 12 (downloaded once)."""
    root = cache / "gcc-12"
    if (root / "libgomp" / "testsuite").is_dir():
        return root
    with tempfile.TemporaryDirectory() as tmp:
        print("fetching gcc-12-source (apt-get download) ...", flush=True)
        subprocess.run(["apt-get", "download", "gcc-12-source"], cwd=tmp, check=True,
                       capture_output=True)
        deb = next(Path(tmp).glob("gcc-12-source_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp + "/x"], check=True)
        tarball = next(Path(tmp, "x/usr/src/gcc-12").glob("gcc-12*.tar.*"))
        subprocess.run(["tar", "-xf", str(tarball), "-C", tmp, "--wildcards",
                        "*/libgomp/testsuite/*", "*/include/gomp-constants.h"], check=True)
        unpacked = next(p for p in Path(tmp).glob("gcc-12*") if p.is_dir())
        root.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.move(str(unpacked), root)
    return root


def check_constants(header: Path) -> list[str]:
    """Mismatches between gomp-constants.h and the values pygomp uses: the map kinds of
    pygomp.runtime.kinds, the resolver's device numbers and shim.c's #defines."""
    from pygomp.runtime import devices
    text = header.read_text().replace("\\\n", " ")
    exprs = dict(re.findall(r"#define\s+GOMP_(\w+)[ \t]+(.+)", text))
    enum = re.search(r"enum gomp_map_kind\s*{(.*?)};", text, re.S).group(1)
    exprs.update(re.findall(r"GOMP_(MAP_\w+)\s*=\s*([^,]+),?",
                            re.sub(r"/\*.*?\*/", "", enum, flags=re.S)))

    def value(name):
        expr = re.sub(r"/\*.*?\*/", "", exprs[name])
        expr = re.sub(r"GOMP_(\w+)", lambda m: f"({value(m.group(1))})", expr)
        return eval(expr.replace("U)", ")"))        # C integer expressions of constants

    ours = {f"MAP_{n}": getattr(kinds, n) for n in dir(kinds)
            if n.isupper() and f"MAP_{n}" in exprs and isinstance(getattr(kinds, n), int)}
    ours.update({"DEVICE_ICV": devices.GOMP_DEVICE_ICV,
                 "DEVICE_HOST_FALLBACK": devices.GOMP_DEVICE_HOST_FALLBACK,
                 "TARGET_FLAG_NOWAIT": kinds.TARGET_FLAG_NOWAIT,
                 "TARGET_FLAG_EXIT_DATA": kinds.TARGET_FLAG_EXIT_DATA})
    shim_c = (Path(__file__).resolve().parents[2] / "csrc" / "shim.c").read_text()
    for name, v in re.findall(r"#define\s+(\w+)\s+\(?(-?\d+(?:\s*<<\s*\d+)?)\)?\s*(?:/\*.*)?$",
                              shim_c, re.M):
        for candidate in (name, f"MAP_{name}"):
            if candidate in exprs:
                ours[candidate] = eval(v)
    problems = [f"GOMP_{n} = {value(n)}, pygomp has {v}" for n, v in sorted(ours.items())
                if value(n) != v]
    if len(ours) < 30:
        problems.append(f"only {len(ours)} constants compared")
    return problems


def _tcl(s: str) -> str:
    """A Tcl double-quoted string's backslash substitutions."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r", "t": "\t"}.get(m.group(1),
                                                                           m.group(1)), s)


def _selected(selector: str | None) -> bool | str:
    """Whether a { target ... } selector holds here; the probe name if it needs one."""
    if not selector:
        return True
    if selector.lstrip("{ ").startswith("!"):
        return not _selected(selector.lstrip("{ ")[1:])
    words = re.findall(r"[\w.*?+-]+", selector)
    for w in words:
        if w in PROBES:
            return w
    return any(w in HAVE for w in words)


class Test:
    def __init__(self, path: Path, root: Path):
        self.path = path
        self.name = str(path.relative_to(root))
        text = path.read_text(errors="replace")
        self.options, self.sources, self.env, self.output = [], [], {}, ""
        self.shouldfail = False
        self.skip = None                   # why it is not run
        self.probes = []                   # effective targets decided by running probes
        for d, rest in re.findall(r"\{\s*dg-([\w-]+)\s*(.*?)\}\s*(?:\*/|$)", text, re.M):
            self._directive(d, rest.strip())

    def _directive(self, d, rest):
        sel = re.search(r"\{\s*target\s+(.*?)\s*\}?\s*$", rest)
        selector = sel.group(1).strip("{} ") if sel else None
        ok = _selected(selector)
        if isinstance(ok, str):
            self.probes.append(ok)
            ok = True
        if d == "do":
            what = rest.split()[0].strip('"') if rest else "run"
            if what != "run":
                self.skip = f"dg-do {what}"
            elif not ok:
                self.skip = f"target {selector}"
        elif d in ("options", "additional-options") and ok:
            m = re.match(r'"(.*?)"', rest)
            if m:
                self.options += m.group(1).split()
        elif d == "additional-sources":
            self.sources += rest.strip('"{} ').split()
        elif d == "require-effective-target":
            word = rest.split()[0]
            if word in PROBES:
                self.probes.append(word)
            elif word not in HAVE:
                self.skip = f"effective target {word}"
        elif d == "skip-if" and re.search(r"\{\s*\*-\*-\*\s*\}", rest):
            self.skip = "dg-skip-if (an auxiliary file)"
        elif d == "shouldfail":
            self.shouldfail = True
        elif d == "output":
            m = re.match(r'"(.*)"', rest)
            if m:
                self.output += _tcl(m.group(1))
        elif d == "set-target-env-var":
            name, value = rest.split(None, 1)
            self.env[name] = value.strip('"{} ')

    def build(self, work: Path):
        exe = work / self.name.replace("/", "__").replace(".c", "")
        srcs = [str(self.path)] + [str(self.path.parent / s) for s in self.sources]
        cmd = ["gcc", "-fopenmp", "-foffload=disable", "-O2", *self.options, *srcs,
               f"-I{self.path.parent}", "-o", str(exe), "-lm"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        return (str(exe), None) if done.returncode == 0 else (None, done.stderr[-2000:])

    def passed(self, done) -> bool:
        if done is None or (done.returncode != 0) != self.shouldfail:   # None: timed out
            return False
        return not self.output or re.search(self.output, done.stdout + done.stderr) is not None


def run(exe, environ):
    try:
        return subprocess.run([exe], env=environ, capture_output=True, text=True,
                              timeout=TIMEOUT, errors="replace")
    except subprocess.TimeoutExpired:
        return None


def runtimes(lib):
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMP_", "PYGOMP_", "LD_PRELOAD"))}
    return {"libgomp": dict(base),
            "shim": dict(base, LD_PRELOAD=lib, PYGOMP_DEVICES="host"),
            "shim-initial": dict(base, LD_PRELOAD=lib, PYGOMP_DEVICES="")}


def probe(work: Path, envs) -> dict:
    """name -> {runtime: bool}: libgomp's effective-target checks under each runtime."""
    out = {}
    for name, src in PROBES.items():
        c = work / f"probe_{name}.c"
        c.write_text(src)
        exe = str(work / f"probe_{name}")
        subprocess.run(["gcc", "-fopenmp", "-foffload=disable", str(c), "-o", exe], check=True)
        out[name] = {rt: (run(exe, e) or subprocess.CompletedProcess([], 1)).returncode == 0
                     for rt, e in envs.items()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", help="an unpacked gcc-12 source tree (default: fetch it)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("-k", default="", help="only tests whose name contains this")
    ap.add_argument("-v", action="store_true", help="print every test's results")
    args = ap.parse_args(argv)
    root = Path(args.src) if args.src else fetch(Path(env.cache_dir()) / "conformance")
    problems = check_constants(root / "include" / "gomp-constants.h")
    print(f"map kinds against gomp-constants.h: "
          f"{'all equal' if not problems else '; '.join(problems)}")
    tests_root = root / "libgomp" / "testsuite"
    tests = [Test(p, tests_root) for suite in SUITES
             for p in sorted((tests_root / suite).rglob("*.c"))
             if OFFLOAD.search(p.read_text(errors="replace"))]
    tests = [t for t in tests if args.k in t.name]
    lib = shim.path()
    envs = runtimes(lib)
    work = Path(tempfile.mkdtemp(prefix="pygomp-conformance-"))
    try:
        probes = probe(work, envs)
        todo = [t for t in tests if t.skip is None]
        with ThreadPoolExecutor(args.jobs) as pool:
            built = dict(zip(todo, pool.map(lambda t: t.build(work), todo)))
            jobs = {}
            for t, (exe, _) in built.items():
                if exe is None:
                    continue
                for rt in ("libgomp", "shim"):
                    if all(probes[p][rt] for p in t.probes):
                        jobs[t, rt] = pool.submit(run, exe, dict(envs[rt], **t.env))
            results = {k: t.passed(f.result()) for k, f in jobs.items() for t in [k[0]]}
            again = {t: pool.submit(run, built[t][0], dict(envs["shim-initial"], **t.env))
                     for t in todo if results.get((t, "shim")) is False}
            initial = {t: t.passed(f.result()) for t, f in again.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(tests, built, results, initial, args.v)


def report(tests, built, results, initial, verbose) -> int:
    skipped = [t for t in tests if t.skip]
    broken = [t for t, (exe, _) in built.items() if exe is None]
    print(f"\n{len(tests)} offload tests in {' and '.join(SUITES)}: {len(skipped)} not run "
          f"(not run tests or targets this machine lacks), {len(broken)} do not build")
    print(f"\n{'':28s}{'libgomp alone':>16s}{'libpygomp.so':>16s}")
    for label, pred in (("passed", lambda r: r is True), ("failed", lambda r: r is False),
                        ("unsupported (probe)", lambda r: r is None)):
        counts = [sum(1 for t, (exe, _) in built.items() if exe and pred(results.get((t, rt))))
                  for rt in ("libgomp", "shim")]
        print(f"  {label:26s}{counts[0]:>16d}{counts[1]:>16d}")
    failing = sorted(initial, key=lambda t: t.name)
    separate = [t for t in failing if t.name in SEPARATE_MEMORY]
    print(f"\nfailing under the shim only because memory is separate ({len(separate)}):")
    for t in separate:
        print(f"  {t.name}: {SEPARATE_MEMORY[t.name]}")
    other = [t for t in failing if t.name not in SEPARATE_MEMORY]
    print(f"\nother failures under the shim ({len(other)}):")
    for t in other:
        where = "passes" if initial[t] else "fails"
        print(f"  {t.name} ({where} on the initial device): "
              f"{KNOWN.get(t.name, 'not understood yet')}")
    if broken:
        print("\nnot built:")
        for t in broken:
            print(f"  {t.name}: {built[t][1].strip().splitlines()[-1] if built[t][1] else ''}")
    if verbose:
        print("\nevery test (libgomp, shim):")
        for t in tests:
            print(f"  {t.name}: {t.skip or (results.get((t, 'libgomp')), results.get((t, 'shim')))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
