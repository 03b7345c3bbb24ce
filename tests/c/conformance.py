"""GCC 12's libgomp offload tests under libpygomp.so and under libgomp alone.

    python tests/c/conformance.py [--src DIR] [--jobs N] [-k PATTERN] [-v]

`make conformance` runs this (it is not part of `make test`).  It fetches GCC 12's
source package with ``apt-get download gcc-12-source`` (into PYGOMP_CACHE_DIR; nothing
of it is committed; --src names an unpacked gcc-12 tree instead), checks pygomp's map
kinds against gomp-constants.h, and builds and runs the run tests of five directories
with ``-foffload=disable``, ``-O2`` and each test's own options (Fortran's with
gfortran-12, or gfortran; without either they are not run, and it says so):

- libgomp.c, libgomp.c-c++-common and libgomp.fortran (those that use an offload
  construct or routine), built with ``-fopenmp``: under libgomp alone (its host
  fallback, shared memory) and under the shim on the host device (separate memory);
- libgomp.oacc-c-c++-common and libgomp.oacc-fortran, built with ``-fopenacc`` as
  libgomp's testsuite builds them
  for its host (``-DACC_DEVICE_TYPE_host=1 -DACC_MEM_SHARED=1``, ACC_DEVICE_TYPE=host)
  for libgomp alone, and as for a device with memory of its own
  (``-DACC_DEVICE_TYPE_host=1 -DACC_MEM_SHARED=0``: its regions are host code, its
  memory separate; no openacc_*_selected target, whose selectors mean shared memory)
  for the shim on the host device.  The two builds select different tests
  (``dg-skip-if`` on ACC_MEM_SHARED), so the counts are each runtime's own.

A test that fails under the shim is run again under the shim on the initial device
(shared memory; the libgomp build), and every failure is listed with its reason:
SEPARATE_MEMORY for those that fail only because memory is separate, NEEDS_DEVICE for
OpenACC tests that need code compiled for a real accelerator, KNOWN for the others that
are understood.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from dejagnu import directives, flags_match, holds, tcl, words
from pygomp.csrc import shim
from pygomp.runtime import env, kinds

OPENMP_SUITES = ("libgomp.c", "libgomp.c-c++-common", "libgomp.fortran")
OPENACC_SUITE = "libgomp.oacc-c-c++-common"
OPENACC_SUITES = (OPENACC_SUITE, "libgomp.oacc-fortran")
_ROUTINES = r"|\bomp_target_\w+\s*\(|\bomp_get_num_devices\b|\bomp_is_initial_device\b"
OFFLOAD = re.compile(r"#\s*pragma\s+omp\s+(target|declare\s+target)\b" + _ROUTINES)
OFFLOAD_FORTRAN = re.compile(r"!\$omp\s+(target|declare\s+target)\b" + _ROUTINES, re.I)
FORTRAN_SOURCE = re.compile(r"\.[fF](|90|95|03|08)$")     # libgomp's fortran.exp's
TIMEOUT = 120

# Why a test fails only because memory is separate.  The program's declare target
# variables are the host device's own (pygomp reads .gnu.offload_vars), so a region's
# host code and the maps see the same memory; what remains is where a device would
# keep a copy of its own.
SEPARATE_MEMORY = {
    "libgomp.c/target-link-1.c":
        "expects the 'to' variable b's device copy to keep its initial value while the host "
        "changes b (no shared memory), or shared_mem to be set (shared memory); on the host "
        "device b is the host's own and shared_mem is mapped",
    "libgomp.c/declare-variant-2.c": "the region's host code calls the variants selected for "
                                     "device={kind(host)}, which abort unless "
                                     "omp_is_initial_device(); on the host device it is 0",
    "libgomp.fortran/map-alloc-ptr-2.f90":
        "the data pointers of declare target descriptors: on the host device the "
        "descriptor is the host's own, so a region's always_pointer cannot point it to "
        "the device's copy of the data; the region writes the host's data, and the copy "
        "back of the device's copy overwrites it",
}
# Why an OpenACC test needs a real accelerator (code compiled for it).
_ONE_GANG = ("on the host one gang runs the region (GCC's host code), where a device runs "
             "num_gangs gangs redundantly")
NEEDS_DEVICE = {f"{OPENACC_SUITE}/{t}": why for t, why in {
    "gang-reduction-var-assignment.c": _ONE_GANG + " (libgomp's own host fails it too: "
                                                   "its xfail, PR88852)",
    "if-1.c": "acc_on_device(acc_device_host) in the region: GCC folds it to the host's "
              "answer in host code, where the data is the device's",
}.items()}
NEEDS_DEVICE["libgomp.oacc-fortran/if-1.f90"] = NEEDS_DEVICE[f"{OPENACC_SUITE}/if-1.c"]
_HOST_DEVICE = ("the host device answers acc_device_host (GCC 12 has no host_nonshm) but "
                "has memory of its own: the test expects libgomp's host (no data or launch "
                "events, async ignored) and gets the events of the host device's maps and "
                "launches (it passes on the initial device, PYGOMP_DEVICES=none)")
# Why other tests fail under the shim.
KNOWN = {
    **{f"{OPENACC_SUITE}/acc_prof-{t}.c": _HOST_DEVICE
       for t in ("init-1", "parallel-1", "kernels-1", "valid_bytes-1")},
    f"{OPENACC_SUITE}/acc_map_data-device_already-3.c":
        "acc_map_data of a device address already mapped (a declared variable's) is "
        "refused, as OpenACC says; the test expects libgomp's missing check (PR92888)",
    "libgomp.oacc-fortran/declare-5.f90":
        "acc declare device_resident of COMMON blocks: GCC 12 emits nothing for them "
        "(PR92790; libgomp's testsuite expects it to fail on devices with memory of "
        "their own), so their variables are not present",
    "libgomp.oacc-fortran/deep-copy-6-no_finalize.F90":
        "expects the host to see a device pointer (an attachment left without "
        "finalize, copied back with its struct); pygomp never copies an attached "
        "pointer back, so the host keeps its own",
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
# Effective targets this machine (x86_64 Linux, gcc 12 with -foffload=disable) has
# (weak_undefined: a weak undefined function links and is NULL here).
HAVE = frozenset({"vect_simd_clones", "lto", "tls_runtime", "__float128", "weak_undefined",
                  "large_long_double", "c", "alias"})


class Config(NamedTuple):
    """How a test is built: its flags, the effective targets its selectors see and the
    compiler (a Fortran one for Fortran's suites)."""
    name: str
    flags: tuple
    have: frozenset
    compiler: str = "gcc"


OPENMP = Config("openmp", ("-fopenmp",), HAVE)
ACC_HOST = Config("acc-host", ("-fopenacc", "-DACC_DEVICE_TYPE_host=1", "-DACC_MEM_SHARED=1"),
                  HAVE | {"openacc_host_selected"})
ACC_DEVICE = Config("acc-device", ("-fopenacc", "-DACC_DEVICE_TYPE_host=1",
                                   "-DACC_MEM_SHARED=0"), HAVE)


def gfortran():
    """The Fortran compiler of GCC 12 (gfortran-12, else gfortran), or None."""
    return shutil.which("gfortran-12") or shutil.which("gfortran")


def fortran(config: Config) -> Config:
    """``config`` for Fortran's tests."""
    return config._replace(name="f-" + config.name, compiler=gfortran())


def fetch(cache: Path) -> Path:
    """An unpacked libgomp testsuite, include/ and the goacc tests it includes of GCC 12
    (downloaded once)."""
    root = cache / "gcc-12"
    if (root / "gcc" / "testsuite" / "gfortran.dg").is_dir():   # a tree fetched before the
        return root                                                 # Fortran suites: again
    with tempfile.TemporaryDirectory() as tmp:
        print("fetching gcc-12-source (apt-get download) ...", flush=True)
        subprocess.run(["apt-get", "download", "gcc-12-source"], cwd=tmp, check=True,
                       capture_output=True)
        deb = next(Path(tmp).glob("gcc-12-source_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp + "/x"], check=True)
        tarball = next(Path(tmp, "x/usr/src/gcc-12").glob("gcc-12*.tar.*"))
        subprocess.run(["tar", "-xf", str(tarball), "-C", tmp, "--wildcards",
                        "*/libgomp/testsuite/*", "*/include/gomp-constants.h",
                        "*/gcc/testsuite/c-c++-common/goacc/*",
                        "*/gcc/testsuite/gfortran.dg/goacc/*"], check=True)
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


class Test:
    """One test file as one build configuration sees it."""

    def __init__(self, path: Path, root: Path, config: Config):
        self.path, self.config, self.root = path, config, root
        self.name = str(path.relative_to(root))
        self.options, self.sources, self.env, self.output = [], [], {}, ""
        self.shouldfail = self.xfail = False
        self.skip = None                   # why it is not run
        self.probes = []                   # effective targets decided by running probes
        later = []                         # skip-if, xfail-run-if: need the options
        text = path.read_text(errors="replace")
        for d, rest in directives(text):
            args = words(rest)
            if d in ("skip-if", "xfail-run-if"):
                later.append((d, args))
            else:
                self._directive(d, args)
        flags = [*config.flags, "-O2", *self.options]
        for d, args in later:
            sel, inc, exc = (args[1:] + ["*-*-*", '"*"', '""'][len(args) - 1:])[:3]
            if self._holds(sel) and flags_match(inc, flags) and not flags_match(exc, flags):
                if d == "skip-if":
                    self.skip = self.skip or f"dg-skip-if {{{sel}}} {{{inc}}} {{{exc}}}"
                else:
                    self.xfail = True

    def _holds(self, selector):
        return holds(selector, self.config.have, PROBES, self.probes)

    def _target(self, args, i) -> bool:
        """Whether the optional ``{ target SELECTOR }`` at args[i] holds."""
        if len(args) <= i or not args[i].startswith("target"):
            return True
        return self._holds(args[i][len("target"):])

    def _directive(self, d, args):
        if d == "do":
            what = args[0] if args else "run"
            if what != "run":
                self.skip = f"dg-do {what}"
            elif not self._target(args, 1):
                self.skip = f"dg-do run {{{args[1]}}}"
        elif d in ("options", "additional-options"):
            if args and self._target(args, 1):
                self.options += args[0].split()
        elif d == "additional-sources":
            self.sources += args[0].split()
        elif d == "require-effective-target":
            if args[0] in PROBES:
                self.probes.append(args[0])
            elif args[0] not in self.config.have:
                self.skip = f"effective target {args[0]}"
        elif d == "shouldfail":
            if len(args) < 2 or self._holds(args[1]):
                self.shouldfail = True
        elif d == "output":
            if args and self._target(args, 1):
                self.output += tcl(args[0])
        elif d == "set-target-env-var":
            self.env[args[0]] = args[1]

    def build(self, work: Path):
        exe = work / f"{self.config.name}__{self.name.replace('/', '__').replace('.', '_')}"
        srcs = [str(self.path)] + [str(self.path.parent / s) for s in self.sources]
        include = self.root.parents[1] / "include"          # gomp-constants.h
        modules = []                        # Fortran's .mod files: a folder per test
        if self.config.compiler != "gcc":
            Path(f"{exe}.mod").mkdir()
            modules = [f"-J{exe}.mod"]
        cmd = [self.config.compiler, *self.config.flags, "-foffload=disable", "-O2",
               *self.options, *srcs, f"-I{self.path.parent}", f"-I{include}", *modules,
               "-o", str(exe), "-lm"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        return (str(exe), None) if done.returncode == 0 else (None, done.stderr[-2000:])

    def passed(self, done) -> bool:
        if done is None:                   # timed out
            return False
        if self.xfail:                     # an expected failure: either outcome will do
            return True
        if (done.returncode != 0) != self.shouldfail:
            return False
        with warnings.catch_warnings():         # Tcl's "[[" is no nested set
            warnings.simplefilter("ignore", FutureWarning)
            return not self.output or re.search(self.output, done.stdout + done.stderr,
                                                re.S) is not None  # Tcl's '.' takes newlines


def run(exe, environ):
    try:
        return subprocess.run([exe], env=environ, capture_output=True, text=True,
                              timeout=TIMEOUT, errors="replace")
    except subprocess.TimeoutExpired:
        return None


RUNTIMES = ("libgomp", "shim")
SUITES = (*OPENMP_SUITES, *OPENACC_SUITES)


def runs(suite: str, lib: str) -> dict:
    """runtime -> (the build configuration, the environment) for a suite's tests;
    "shim-initial" is the second try of a test that fails under the shim."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMP_", "PYGOMP_", "ACC_", "LD_PRELOAD"))}
    shim_host = dict(base, LD_PRELOAD=lib, PYGOMP_DEVICES="host")
    shim_initial = dict(base, LD_PRELOAD=lib, PYGOMP_DEVICES="none")
    if suite in OPENACC_SUITES:
        out = {"libgomp": (ACC_HOST, dict(base, ACC_DEVICE_TYPE="host")),
               "shim": (ACC_DEVICE, shim_host),
               "shim-initial": (ACC_HOST, dict(shim_initial, ACC_DEVICE_TYPE="host"))}
    else:
        out = {"libgomp": (OPENMP, base), "shim": (OPENMP, shim_host),
               "shim-initial": (OPENMP, shim_initial)}
    if "fortran" in suite:
        out = {rt: (fortran(config), e) for rt, (config, e) in out.items()}
    return out


def sources(suite_dir: Path, suite: str):
    """A suite's test files, and of OpenMP's those that use an offload construct or
    routine."""
    if "fortran" in suite:
        files, offload = (p for p in suite_dir.rglob("*") if FORTRAN_SOURCE.search(p.name)), \
            OFFLOAD_FORTRAN
    else:
        files, offload = suite_dir.rglob("*.c"), OFFLOAD
    for p in sorted(files):
        if suite in OPENACC_SUITES or offload.search(p.read_text(errors="replace")):
            yield p


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
    lib = shim.path()
    cases = {}                      # (suite, name) -> {runtime: (Test, environment)}
    for suite in SUITES:
        if "fortran" in suite and not gfortran():
            print(f"{suite}: not run: no gfortran-12 or gfortran on PATH (`make` installs "
                  f"Debian's gfortran-12 as root)")
            continue
        ways = runs(suite, lib)
        for p in sources(tests_root / suite, suite):
            if args.k not in str(p.relative_to(tests_root)):
                continue
            seen = {}
            cases[suite, str(p.relative_to(tests_root))] = {
                rt: (seen.setdefault(config, Test(p, tests_root, config)), environ)
                for rt, (config, environ) in ways.items()}
    work = Path(tempfile.mkdtemp(prefix="pygomp-conformance-"))
    try:
        probes = probe(work, {rt: e for rt, (_, e) in runs(OPENMP_SUITES[0], lib).items()})
        todo = list(dict.fromkeys(t for ways in cases.values() for t, _ in ways.values()
                                  if t.skip is None))
        with ThreadPoolExecutor(args.jobs) as pool:
            built = dict(zip(todo, pool.map(lambda t: t.build(work), todo)))
            jobs = {}
            for key, ways in cases.items():
                for rt in RUNTIMES:
                    t, environ = ways[rt]
                    exe = built.get(t, (None, None))[0]
                    if exe and all(probes[p][rt] for p in t.probes):
                        jobs[key, rt] = pool.submit(run, exe, dict(environ, **t.env))
            results = {k: cases[k[0]][k[1]][0].passed(f.result()) for k, f in jobs.items()}
            again = {}
            for key, ways in cases.items():
                t, environ = ways["shim-initial"]
                if results.get((key, "shim")) is False and built.get(t, (None,))[0]:
                    again[key] = pool.submit(run, built[t][0], dict(environ, **t.env))
            initial = {k: cases[k]["shim-initial"][0].passed(f.result()) for k, f in again.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(cases, built, results, initial, args.v)


def _again(initial, k) -> str:
    if k not in initial:
        return "not run on the initial device: its build skips it"
    return "passes on the initial device" if initial[k] else "fails on the initial device"


def report(cases, built, results, initial, verbose) -> int:
    for suite in SUITES:
        keys = [k for k in cases if k[0] == suite]
        if not keys:
            continue
        print(f"\n{suite}: {len(keys)} tests"
              + ("" if suite in OPENACC_SUITES else " that use an offload construct or routine"))
        print(f"{'':28s}{'libgomp alone':>16s}{'libpygomp.so':>16s}")
        rows = (("passed", lambda k, rt, t: results.get((k, rt)) is True),
                ("failed", lambda k, rt, t: results.get((k, rt)) is False),
                ("not run (target, options)", lambda k, rt, t: t.skip is not None),
                ("not built", lambda k, rt, t: t.skip is None and not built[t][0]),
                ("unsupported (probe)", lambda k, rt, t: t.skip is None and built[t][0]
                 and (k, rt) not in results))
        for label, pred in rows:
            counts = [sum(1 for k in keys if pred(k, rt, cases[k][rt][0])) for rt in RUNTIMES]
            print(f"  {label:26s}{counts[0]:>16d}{counts[1]:>16d}")
    failing = sorted(k for k in cases if results.get((k, "shim")) is False)
    for title, table in (("only because memory is separate", SEPARATE_MEMORY),
                         ("because they need code compiled for a real accelerator",
                          NEEDS_DEVICE)):
        listed = [k for k in failing if k[1] in table]
        print(f"\nfailing under the shim {title} ({len(listed)}):")
        for k in listed:
            print(f"  {k[1]}: {table[k[1]]}")
    other = [k for k in failing if k[1] not in SEPARATE_MEMORY and k[1] not in NEEDS_DEVICE]
    print(f"\nother failures under the shim ({len(other)}):")
    for k in other:
        print(f"  {k[1]} ({_again(initial, k)}): {KNOWN.get(k[1], 'not understood yet')}")
    broken = sorted({t for ways in cases.values() for t, _ in ways.values()
                     if t in built and not built[t][0]}, key=lambda t: t.name)
    if broken:
        print("\nnot built:")
        for t in broken:
            lines = (built[t][1] or "").strip().splitlines() or [""]
            why = next((x for x in lines if "error" in x), lines[-1])
            print(f"  {t.name} ({t.config.name}): {why.split(': ', 1)[-1].strip()}")
    if verbose:
        print("\nevery test (libgomp, shim):")
        for k, ways in cases.items():
            print(f"  {k[1]}: " + ", ".join(
                ways[rt][0].skip or str(results.get((k, rt))) for rt in RUNTIMES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
