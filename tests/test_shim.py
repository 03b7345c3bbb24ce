"""libpygomp.so: the C programs of tests/c/, built with gcc -fopenmp -foffload=disable,
run through the shim on the host device (separate memory).

The programs are built once a session, in parallel, and every run below is started at
once (they are separate processes); each test then checks one run's exit status and
output.  maps.c, tasks.c and threads.c check stale values, so they fail under libgomp
alone: a pass shows that the shim, not libgomp, ran them.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ctypes

import numpy as np
import pytest

from pygomp.csrc import shim
from pygomp.runtime import kinds, mapping
from pygomp.runtime.mapping import Item, MappingError

from runtime_helpers import addr, dev, dev_read, plugin, user_entries  # noqa: F401

HERE = Path(__file__).parent / "c"
EXAMPLE = Path(__file__).parent.parent / "examples" / "c"
PROGRAMS = ["maps.c", "tasks.c", "threads.c", "errors.c", "references.cc",
            "declare_target.c", "legacy.c", "empty_region.c", "repeat.c", "planned.c",
            "teams.c"]
TIMEOUT = 180


def _opencl_devices() -> int:
    """OpenCL devices that work (tests/test_probe.py fails where none does)."""
    from pygomp.runtime import devices
    p = devices.plugins().get("opencl")
    return 0 if p is None or isinstance(p, Exception) else len(p.choose("", named=False))


def _env(**extra):
    """The environment of a run: this one less OpenMP and pygomp settings, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "ACC_", "PYGOMP_", "LD_PRELOAD"))}
    env["PYGOMP_CACHE_DIR"] = os.environ["PYGOMP_CACHE_DIR"]
    env["PYGOMP_DEVICES"] = "host"
    env.update(extra)
    return env


def _compile(exe: Path, src: str, *flags) -> str:
    cc = "g++" if src.endswith(".cc") else "gcc"
    cmd = [cc, "-fopenmp", "-foffload=disable", "-O1", "-Wall", str(HERE / src), "-o", str(exe),
           *flags]             # (HERE / an absolute path) is that path
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
    return str(exe)


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """Every program of tests/c/ and the library they run under, built once."""
    lib = shim.path()
    out = tmp_path_factory.mktemp("c-programs")
    libdir = os.path.dirname(lib)
    jobs = {src: (src,) for src in PROGRAMS}
    jobs["maps-linked"] = ("maps.c", f"-L{libdir}", "-lpygomp", f"-Wl,-rpath,{libdir}")
    jobs["libinterop.so"] = ("interop.c", "-shared", "-fPIC")
    tables = out / "kernels_offload.c"         # Python kernels, called from C, images for
    build_env = _env()                         # every device: one that fails has none
    del build_env["PYGOMP_DEVICES"]
    done = subprocess.run([sys.executable, "-m", "pygomp", "build", str(EXAMPLE / "kernels.py"),
                           "-o", str(tables)], capture_output=True, text=True, env=build_env)
    assert done.returncode == 0, done.stderr
    jobs["saxpy"] = (str(EXAMPLE / "saxpy.c"), str(tables), "-lm")
    jobs["libkernels.so"] = (str(tables), "-shared", "-fPIC")
    jobs["tables.c"] = ("tables.c", "-ldl")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {k: pool.submit(_compile, out / k.replace(".", "_"), *job)
                   for k, job in jobs.items()}
        exes = {k: f.result() for k, f in futures.items()}
    return lib, exes


def _runs(lib, exes):
    """name -> (argv, environment): every run the tests below look at."""
    pre = {"LD_PRELOAD": lib}
    clean = {"PATH": "/usr/bin:/bin", "PYGOMP_DEVICES": "host", "LD_PRELOAD": lib}
    runs = {
        "maps": ([exes["maps.c"]], _env(**pre)),
        "maps-debug": ([exes["maps.c"]], _env(GOMP_DEBUG="1", **pre)),
        "tasks": ([exes["tasks.c"]], _env(**pre)),
        "threads": ([exes["threads.c"]], _env(**pre)),
        "references": ([exes["references.cc"]], _env(**pre)),
        "repeat": ([exes["repeat.c"]], _env(**pre)),        # prepared regions in loops
        "planned": ([exes["planned.c"]], _env(**pre)),      # regions that C runs itself
        "planned-info": ([exes["planned.c"]], _env(PYGOMP_INFO="1", **pre)),
        "linked": ([exes["maps-linked"]], _env()),
        "clean-env": ([exes["maps.c"]], clean),
        "interop": ([sys.executable, str(HERE / "interop.py"), exes["libinterop.so"]], _env()),
        "libgomp-alone": ([exes["maps.c"]], _env()),
        "device-7": ([exes["errors.c"], "device"], _env(**pre)),
        "device-7-mandatory": ([exes["errors.c"], "device"],
                               _env(OMP_TARGET_OFFLOAD="mandatory", **pre)),
    }
    for mode in ("extend", "use_device_ptr", "attach_null"):
        runs[mode] = ([exes["errors.c"], mode], _env(**pre))
    runs["attach_skipped"] = ([exes["errors.c"], "attach_skipped"], _env(PYGOMP_INFO="1", **pre))
    runs["legacy"] = ([exes["legacy.c"]], _env(**pre))
    for mode in ("table", "forget"):
        runs[f"legacy-{mode}"] = ([exes["legacy.c"], mode], _env(**pre))
    runs["imports"] = ([exes["empty_region.c"]], _env(PYTHONVERBOSE="1", **pre))
    trace = os.path.join(os.path.dirname(exes["empty_region.c"]), "trace.json")
    runs["profile"] = ([exes["empty_region.c"]], _env(PYGOMP_PROFILE=trace, **pre))
    traced = os.path.join(os.path.dirname(exes["planned.c"]), "planned.json")
    runs["planned-profile"] = ([exes["planned.c"]], _env(PYGOMP_PROFILE=traced, **pre))
    runs["teams"] = ([exes["teams.c"]], _env(**pre))
    runs["teams-libgomp"] = ([exes["teams.c"]], _env())
    runs["declare-host"] = ([exes["declare_target.c"], "1"], _env(**pre))
    runs["declare-initial"] = ([exes["declare_target.c"], "1"],
                               _env(PYGOMP_DEVICES="none", **pre))
    runs["leftover"] = ([exes["errors.c"], "leftover"], _env(PYGOMP_INFO="0x4", **pre))
    runs["tables-host"] = ([exes["saxpy"], "5000"], _env(PYGOMP_INFO="0x18", **pre))
    runs["tables-quiet"] = ([exes["saxpy"], "5000"], _env(**pre))   # prepared calls
    runs["tables-libgomp"] = ([exes["saxpy"], "5000"], _env())
    runs["tables-dlopen"] = ([exes["tables.c"], exes["libkernels.so"]],
                             _env(PYGOMP_INFO="0x10", **pre))
    if _opencl_devices():
        runs["tables-opencl"] = ([exes["saxpy"], "5000"],
                                 _env(PYGOMP_DEVICES="opencl", PYGOMP_INFO="0x18", **pre))
    if _opencl_devices():
        runs["declare-opencl"] = ([exes["declare_target.c"], "0"],
                                  _env(PYGOMP_DEVICES="opencl", **pre))
        runs["teams-opencl"] = ([exes["teams.c"]], _env(PYGOMP_DEVICES="opencl", **pre))
        runs["no-image"] = ([exes["errors.c"], "fallback"],
                            _env(PYGOMP_DEVICES="opencl", PYGOMP_INFO="0x10", **pre))
        runs["no-image-mandatory"] = ([exes["errors.c"], "fallback"],
                                      _env(PYGOMP_DEVICES="opencl",
                                           OMP_TARGET_OFFLOAD="mandatory", **pre))
    return runs


@pytest.fixture(scope="session")
def runs(built):
    lib, exes = built

    def run(argv, env):
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT)

    todo = _runs(lib, exes)
    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        futures = {name: pool.submit(run, *job) for name, job in todo.items()}
        return {name: f.result() for name, f in futures.items()}


def _passed(done):
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stdout}{done.stderr}"
    assert "check failed" not in done.stderr


@pytest.mark.parametrize("name", ["maps", "tasks", "threads", "references", "repeat",
                                  "planned", "planned-info"])
def test_program_passes_under_the_shim(runs, name):
    _passed(runs[name])


@pytest.mark.parametrize("where", ["host", "opencl", "libgomp"])
def test_teams_are_libgomps_inside_the_region(runs, where):
    """teams.c: GOMP_teams4, GOMP_teams_reg and omp_get_num_teams/team_num are not the
    shim's; a region runs inside libgomp's own host fallback, so its teams are libgomp's
    (num_teams, thread_limit, distribute's blocks a team each) on every device, as under
    libgomp alone; on the host device the region is still the device's."""
    key = "teams" if where == "host" else f"teams-{where}"
    if key not in runs:
        pytest.skip("no OpenCL device works here (tests/test_probe.py says why)")
    _passed(runs[key])
    if where == "host":
        assert runs[key].stdout == "initial 0 device 0\n"


def test_regions_in_loops_are_reported_each_time(runs):
    """PYGOMP_INFO keeps every region on Python's path, which reports each map: the
    first loop of planned.c maps its struct ``to`` in each of its 40 regions."""
    done = runs["planned-info"]
    mapped = re.findall(r"device 0: mapped \[(0x[0-9a-f]+)\.\.0x[0-9a-f]+\) \(TO\)",
                        done.stderr)
    assert max(mapped.count(a) for a in set(mapped)) >= 40, done.stderr[-3000:]


def test_a_region_imports_only_what_it_needs(runs):
    """A region on the host device starts the embedded Python and pygomp's runtime, but
    neither numpy nor the compiler nor another plugin (PYTHONVERBOSE lists every
    import)."""
    done = runs["imports"]
    assert done.returncode == 0, done.stderr[-3000:]
    imported = re.findall(r"^import '([\w.]+)'", done.stderr, re.M)
    assert "pygomp.csrc.abi" in imported and "pygomp.plugins.host.plugin" in imported
    assert [m for m in imported if m.split(".")[0] in ("numpy", "pyopencl", "cupy")
            or m.startswith(("pygomp.compiler", "pygomp.plugins.opencl"))] == []


def test_a_c_program_writes_its_profile(runs):
    """PYGOMP_PROFILE: the trace of a C program is written when it ends (the embedded
    interpreter never runs Python's atexit)."""
    done = runs["profile"]
    _passed(done)
    trace = os.path.join(os.path.dirname(done.args[0]), "trace.json")
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["name"] for e in events if e.get("ph") == "X"}
    assert {"init", "map", "alloc", "copy host to device", "copy device to host",
            "free"} <= names, names


def test_a_profile_shows_every_region_of_a_loop(runs):
    """Under PYGOMP_PROFILE no region runs by a plan from C: the trace has an unmap for
    each of planned.c's 1368 target regions (40 + 80 + 40 + 4 threads x 40 x 2 + 4 x 2
    + 4 threads x 200 + 80)."""
    done = runs["planned-profile"]
    _passed(done)
    with open(os.path.join(os.path.dirname(done.args[0]), "planned.json")) as f:
        events = json.load(f)["traceEvents"]
    assert sum(e["name"] == "unmap" for e in events if e.get("ph") == "X") == 1368


def test_older_compilers_and_fortran_entry_points(runs):
    """GCC 5's GOMP_target/_data/_update (8-bit kinds) and GOACC_parallel, called as
    such binaries call them, map on the host device; omp_pause_resource(_all) and
    Fortran's omp_*_ names answer for pygomp's devices (libgomp's own would not)."""
    _passed(runs["legacy"])


def test_gomp_debug_traces_an_openmp_attach(runs):
    """GOMP_DEBUG=1: libgomp's line for the pointer a struct's array section attaches
    (its device copy, in the struct's, gets the section's device address)."""
    done = runs["maps-debug"]
    _passed(done)
    m = re.search(r"^gomp_attach_pointer: attaching host (0x[0-9a-f]+), target (0x[0-9a-f]+) "
                  r"\(struct base (0x[0-9a-f]+)\) to (0x[0-9a-f]+)$", done.stderr, re.M)
    assert m, done.stderr
    host, target, base, value = (int(x, 16) for x in m.groups())
    assert 0 <= target - base < 64 and value not in (0, host)
    assert "gomp_attach_pointer" not in runs["maps"].stderr


def test_unversioned_offload_registration(runs):
    """GCC 5's and 6's GOMP_offload_register(_unregister): a table of pygomp's type goes
    to the runtime when it starts (this one is not pygomp's: the error names it), and
    one unregistered before that never does."""
    done = runs["legacy-table"]
    _fatal(done, re.escape(f"the offload table at {done.stdout.split()[0]} is not pygomp's"))
    _passed(runs["legacy-forget"])


@pytest.mark.parametrize("where", ["host", "initial", "opencl"])
def test_declare_target_variables(runs, where):
    """The program's declare target variables (its .gnu.offload_vars) are the host
    device's own: present from the start, mapped and updated onto themselves.  On
    OpenCL, where regions have no image, they are not present."""
    if f"declare-{where}" not in runs:
        pytest.skip("no OpenCL device works here (tests/test_probe.py says why)")
    _passed(runs[f"declare-{where}"])


def test_linked_ahead_of_libgomp(runs, built):
    """gcc ... -L$DIR -lpygomp -fopenmp: no LD_PRELOAD, the shim's definitions win."""
    lib, exes = built
    needed = subprocess.run(["readelf", "-d", exes["maps-linked"]], capture_output=True,
                            text=True).stdout
    libs = re.findall(r"Shared library: \[(.*?)\]", needed)
    assert libs.index("libpygomp.so") < libs.index("libgomp.so.1")
    _passed(runs["linked"])


def test_clean_environment(runs):
    """Started from a shell with no Python environment (PATH=/usr/bin:/bin, nothing
    else), the embedded interpreter still finds pygomp and numpy."""
    _passed(runs["clean-env"])


def test_python_and_c_share_one_runtime(runs):
    """pygomp.csrc.shim.load(): C code loaded with ctypes sees Python's maps and the other
    way round (tests/c/interop.py asserts each step)."""
    _passed(runs["interop"])
    assert "interop ok" in runs["interop"].stdout


def test_separate_memory_is_what_the_programs_check(runs):
    """Under libgomp alone (shared memory) maps.c's stale-value checks fail (and then
    its call of omp_get_mapped_ptr, which libgomp 12 lacks, crashes it)."""
    done = runs["libgomp-alone"]
    assert done.returncode != 0 and "check failed: a[3] == -3" in done.stderr


def _fatal(done, message):
    """libgomp's gomp_fatal: '\\nlibgomp: ' + message on stderr, exit status 1."""
    assert done.returncode == 1, f"exit status {done.returncode}\n{done.stdout}{done.stderr}"
    assert re.search(r"^libgomp: .*" + message, done.stderr, re.M), done.stderr


def test_conflicting_map_names_both_ranges(runs):
    done = runs["extend"]
    a0, a8, m0, m1 = done.stdout.split()
    _fatal(done, re.escape(f"[{a0}..{a8}) when [{m0}..{m1}) is already mapped"))


def test_use_device_ptr_of_unmapped_memory(runs):
    done = runs["use_device_ptr"]
    _fatal(done, re.escape(f"use_device_ptr pointer wasn't mapped (host address "
                           f"{done.stdout.split()[0]})"))


def test_a_skipped_attach_is_reported(runs):
    """map(to: s.x, s.p[:4]) maps no range holding s.p: its attach is skipped, as
    libgomp skips it (a program error that reads garbage on a device); PYGOMP_INFO=1
    says so."""
    done = runs["attach_skipped"]
    _passed(done)
    assert (f"attach of the pointer at {done.stdout.split()[0]} skipped: no mapped range "
            f"holds it") in done.stderr


def test_attach_of_a_null_pointer(runs):
    done = runs["attach_null"]
    _fatal(done, re.escape(f"attempt to attach null pointer (at {done.stdout.split()[0]})"))


def test_still_mapped_at_exit_is_reported(runs):
    """At the end of a C program the devices are released, and PYGOMP_INFO=0x4 lists
    what was still mapped, as at the end of a Python program."""
    done = runs["leftover"]
    start, end = done.stdout.split()
    assert done.returncode == 0, done.stderr
    assert "device 0 still has 1 mapping(s) at exit" in done.stderr
    assert f"[{start}..{end})" in done.stderr


def test_missing_device_falls_back_unless_mandatory(runs):
    assert runs["device-7"].returncode == 0 and "ran: 1" in runs["device-7"].stdout
    _fatal(runs["device-7-mandatory"], "OMP_TARGET_OFFLOAD is set to MANDATORY, but device 7 "
                                       "not found")


def test_device_without_image(runs):
    """On OpenCL a gcc-built region has no image: it runs on the initial device, and
    PYGOMP_INFO says so; under mandatory it is libgomp's error."""
    if "no-image" not in runs:
        pytest.skip("no OpenCL device")
    done = runs["no-image"]
    assert done.returncode == 0, done.stderr
    assert "ran on the initial device: 1" in done.stdout
    assert re.search(r"device 0 \(opencl\) has no image of the target region at 0x[0-9a-f]+: "
                     r"host fallback", done.stderr)
    _fatal(runs["no-image-mandatory"], "OMP_TARGET_OFFLOAD is set to MANDATORY, but device "
                                       "cannot be used for offloading")


@pytest.mark.parametrize("where", ["host", "opencl"])
def test_c_calls_kernels_written_in_python(runs, where):
    """examples/c: `python -m pygomp build kernels.py` gives saxpy and dot C entry points;
    under the shim they run from the table's images (a launch per call), and inside the
    program's own target data region they copy nothing."""
    if f"tables-{where}" not in runs:
        pytest.skip("no OpenCL device")
    done = runs[f"tables-{where}"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout
    assert len(re.findall(r"device 0: run 0x[0-9a-f]+ launch", done.stderr)) == 5
    # saxpy maps x and y (2), the data region (2), the three calls in it (0), dot (2)
    assert len(re.findall(r"copy to device", done.stderr)) == 6, done.stderr


def test_c_calls_repeated_with_data_present_are_right(runs):
    """Without PYGOMP_INFO, a region repeated inside the program's target data region
    runs through its prepared call (`calls.Call`) and still computes what it should."""
    done = runs["tables-quiet"]
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


def test_tables_of_libraries_loaded_and_unloaded(runs):
    """A library's table unregistered before Python starts is forgotten; one loaded later
    goes to the runtime at once and runs from its image; unloading unregisters it."""
    done = runs["tables-dlopen"]
    assert done.returncode == 0 and "check failed" not in done.stderr, done.stderr
    assert len(re.findall(r"device 0: run 0x[0-9a-f]+ launch", done.stderr)) == 2


def test_c_kernels_without_the_shim(runs):
    """Under libgomp alone the table's host code runs (libgomp's host fallback)."""
    done = runs["tables-libgomp"]
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


def test_only_the_offload_entry_points_are_exported(built):
    lib, _ = built
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                         text=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert names and all(n.startswith(("GOMP_target", "GOMP_offload", "omp_", "GOACC_", "acc_"))
                         for n in names)
    assert "GOMP_parallel" not in names and "omp_get_thread_num" not in names
    assert {"GOMP_target_ext", "GOMP_target_data_ext", "GOMP_target_end_data",
            "GOMP_target_update_ext", "GOMP_target_enter_exit_data"} <= names


def test_shim_command_prints_the_path(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pygomp", "shim"], capture_output=True,
                          text=True, env=_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout == shim.path() + "\n"


# -- kinds no gcc 12 C or C++ construct emits, through the core directly --------------

def test_pointer_kind_translates_a_pointer_variable(dev):
    """GOMP_MAP_POINTER (Fortran's; libgomp's rule): the pointer variable is mapped too,
    and its device copy holds the device address of its target (looked up at the
    target plus the bias, the item's size).  An unmapped target is libgomp's error,
    and nothing stays mapped."""
    a = np.arange(8.0)
    ptr = ctypes.c_uint64(addr(a))
    region = mapping.begin(dev, [Item(addr(a), a.nbytes, kinds.TO, a),
                                 Item(ctypes.addressof(ptr), 16, kinds.POINTER, ptr)])
    assert dev_read(dev, region.args[1], np.zeros(1, np.uint64))[0] == region.args[0]
    mapping.end(region)
    assert user_entries(dev) == [] and ptr.value == addr(a)
    other = ctypes.c_uint64(addr(np.zeros(4)))
    with pytest.raises(MappingError, match="Pointer target of array section wasn't mapped"):
        mapping.begin(dev, [Item(addr(a), a.nbytes, kinds.TO, a),
                            Item(ctypes.addressof(other), 0, kinds.POINTER, other)])
    assert user_entries(dev) == []


def test_failed_attach_leaves_nothing_mapped(dev):
    """A struct mapped with a pointer member whose target is not mapped: the error names
    the pointer, and neither the struct nor an attach count stays behind."""
    s = (ctypes.c_uint64 * 2)(0, addr(np.zeros(4)))       # { int64 x; double *p; }
    base = ctypes.addressof(s)
    with pytest.raises(MappingError, match=f"pointer target not mapped for attach "
                                           f"\\(the pointer at {base + 8:#x}"):
        mapping.enter_data(dev, [Item(base, 16, kinds.TO, s),
                                 Item(base + 8, 0, kinds.ATTACH)])
    assert user_entries(dev) == []
