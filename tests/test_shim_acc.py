"""libpygomp.so and OpenACC: the programs tests/c/acc_*.c, built with gcc -fopenacc
-foffload=disable, run through the shim (GOACC_* entry points, acc_* routines) on the
host device (separate memory), on OpenACC's host (the initial device) and on OpenCL.

acc_maps.c checks stale values and reference counts as memory separate from the host
makes them; acc_routines.c checks device types that only pygomp has, so it fails under
libgomp alone: a pass shows that the shim ran them.
"""
from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pygomp.csrc import shim

from test_shim import _env, _fatal, _opencl_devices, _passed

HERE = Path(__file__).parent / "c"
PROGRAMS = ["acc_maps.c", "acc_routines.c", "acc_async.c", "acc_errors.c",
            "acc_declare.c"]
TIMEOUT = 180


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    lib = shim.path()
    out = tmp_path_factory.mktemp("acc-programs")

    def build(src):
        exe = out / src.replace(".c", "")
        cmd = ["gcc", "-fopenacc", "-foffload=disable", "-O1", "-Wall", str(HERE / src),
               "-o", str(exe), "-lpthread"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
        return str(exe)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        exes = dict(zip(PROGRAMS, pool.map(build, PROGRAMS)))
    pre = {"LD_PRELOAD": lib}
    todo = {name: ([exes[f"{name}.c"]], _env(**pre))
            for name in ("acc_maps", "acc_routines", "acc_async", "acc_declare")}
    todo["acc_maps-debug"] = ([exes["acc_maps.c"]], _env(GOMP_DEBUG="1", **pre))
    todo["acc_routines-debug"] = ([exes["acc_routines.c"]], _env(GOMP_DEBUG="1", **pre))
    todo["acc_declare-map"] = ([exes["acc_declare.c"], "map"], _env(**pre))
    todo["acc_maps-initial"] = ([exes["acc_maps.c"]], _env(ACC_DEVICE_TYPE="host", **pre))
    todo["acc_maps-libgomp"] = ([exes["acc_maps.c"]], _env())
    todo["acc_routines-libgomp"] = ([exes["acc_routines.c"]], _env())
    if _opencl_devices():
        todo["acc_maps-opencl"] = ([exes["acc_maps.c"]],
                                   _env(PYGOMP_DEVICES="opencl", PYGOMP_INFO="0x10", **pre))
    for mode in ("present", "update", "outside", "unmap", "free", "attach", "async",
                 "device"):
        todo[f"error-{mode}"] = ([exes["acc_errors.c"], mode], _env(**pre))

    def run(argv, env):
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT)

    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        futures = {name: pool.submit(run, *job) for name, job in todo.items()}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("name", ["acc_maps", "acc_routines", "acc_async", "acc_declare"])
def test_program_passes_under_the_shim(runs, name):
    _passed(runs[name])


def test_gomp_debug_traces_the_constructs(runs):
    """GOMP_DEBUG=1: libgomp's trace lines for the constructs the shim runs."""
    done = runs["acc_maps-debug"]
    _passed(done)
    entry = r"{}: mapnum=\d+, hostaddrs=0x[0-9a-f]+, size=0x[0-9a-f]+, kinds=0x[0-9a-f]+\n"
    assert re.search(entry.format("GOACC_parallel_keyed"), done.stderr)
    assert re.search(entry.format("GOACC_data_start") + r"  GOACC_data_start: prepare "
                     r"mappings\n  GOACC_data_start: mappings prepared\n", done.stderr)
    assert "  GOACC_data_end: restore mappings\n  GOACC_data_end: mappings restored\n" \
        in done.stderr
    assert "mapnum=" not in runs["acc_maps"].stderr


def test_gomp_debug_traces_attach_and_detach(runs):
    """GOMP_DEBUG=1: libgomp's lines for a pointer attached twice and detached twice
    (acc_attach, acc_detach, acc_detach_finalize), with the program's addresses."""
    done = runs["acc_routines-debug"]
    _passed(done)
    ptr, slot, base, x_d = re.search(r"attach (\S+) (\S+) (\S+) (\S+)", done.stdout).groups()
    x = re.search(r"detach (\S+)", done.stdout).group(1)
    where = f"host {ptr}, target {slot} (struct base {base})"
    assert (f"gomp_attach_pointer: attaching {where} to {x_d}\n"
            f"gomp_attach_pointer: attach count for {ptr} -> 2\n") in done.stderr
    assert f"gomp_detach_pointer: attach count for {ptr} -> 1\n" in done.stderr
    assert f"gomp_detach_pointer: detaching {where} to {x}\n" in done.stderr
    assert "gomp_attach_pointer" not in runs["acc_routines"].stderr


def test_a_declared_variable_s_device_address_is_taken(runs):
    _fatal(runs["acc_declare-map"], r"device address \[0x[0-9a-f]+, \+8\] is already mapped")


def test_clauses_with_separate_and_shared_memory(runs):
    """acc_maps.c on the host device (separate memory, acc_device_host = 2), on
    OpenACC's host under the shim and under libgomp alone (shared memory, 2)."""
    assert "device type 2, separate memory 1" in runs["acc_maps"].stdout
    for name in ("acc_maps-initial", "acc_maps-libgomp"):
        _passed(runs[name])
        assert "device type 2, separate memory 0" in runs[name].stdout


def test_routines_check_what_only_the_shim_gives(runs):
    done = runs["acc_routines-libgomp"]
    assert done.returncode != 0 and "check failed: acc_get_num_devices(" \
        "ACC_DEVICE_HOST_NONSHM) == 1" in done.stderr


def test_compute_regions_on_opencl_run_on_the_host_with_the_device_data(runs):
    """On PoCL a gcc-built region has no image: its host code runs on the host with the
    OpenCL device's data (stale values and counts stay a device's), and PYGOMP_INFO
    says so."""
    if "acc_maps-opencl" not in runs:
        pytest.skip("no OpenCL device")
    done = runs["acc_maps-opencl"]
    _passed(done)
    assert "separate memory 1" in done.stdout
    assert re.search(r"device 0 \(opencl\) has no image of the compute region at 0x[0-9a-f]+: "
                     r"its host code runs on the host with the device's data", done.stderr)


@pytest.mark.parametrize("mode, message", [
    ("present", r"present clause: !acc_is_present \({a}, 64 \(0x40\)\)"),
    ("update", r"\[{a},64\] is not mapped"),
    ("outside", r"\[{a},\+64\] outside mapped block \[{a},\+32\]"),
    ("unmap", r"refusing to unmap block \[{a},\+64\] that has not been mapped by "
              r"'acc_map_data'"),
    ("free", r"refusing to free device memory space at {d} that is still mapped at "
             r"\[{a},\+64\]"),
    ("attach", r"struct not mapped for acc_attach"),
    ("async", r"invalid async-argument: -5"),
    ("device", r"device 5 out of range"),
])
def test_errors_as_libgomp_words_them(runs, mode, message):
    done = runs[f"error-{mode}"]
    words = done.stdout.split()
    _fatal(done, message.format(a=re.escape(words[0]),
                                d=re.escape(words[1]) if len(words) > 1 else ""))

