"""A C program's start-up with every device (PYGOMP_DEVICES unset): the OpenCL devices
are counted from pygomp's disk cache without importing pyopencl, the host plugin's
device is number 0 (a region runs there natively), and PoCL starts only when a region
runs on it.  Real gcc, real libpygomp.so, real PoCL."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from pygomp.csrc import shim

PROGRAM = r"""
#include <stdio.h>
#include <omp.h>
int main(void)
{
    int x = 0, initial = -1, device = -1;
    #pragma omp target map(tofrom: x, initial, device)
    {
        x += 1;
        initial = omp_is_initial_device();
        device = omp_get_device_num();
    }
    printf("devices %d default %d region initial %d device %d\n", omp_get_num_devices(),
           omp_get_default_device(), initial, device);
    return x != 1;
}
"""


def _env(cache, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "ACC_", "PYGOMP_", "LD_PRELOAD", "PYTHONVERBOSE"))}
    env["PYGOMP_CACHE_DIR"] = str(cache)
    env.update(extra)
    return env


def _python(cache, code):
    done = subprocess.run([sys.executable, "-c", code], env=_env(cache), text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


COUNT = ("from pygomp.runtime import devices\n"
         "print(' '.join(d.plugin.name for d in devices.all_devices()[:-1]))")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The program, its library, a disk cache that has seen every device, and the
    offload devices a Python program numbers (counted by pyopencl, the cache empty)."""
    tmp = tmp_path_factory.mktemp("startup")
    (tmp / "prog.c").write_text(PROGRAM)
    exe = tmp / "prog"
    subprocess.run(["gcc", "-fopenmp", "-foffload=disable", str(tmp / "prog.c"), "-o",
                    str(exe)], check=True)
    cache = tmp / "cache"
    plugins = _python(cache, COUNT).split()
    if "opencl" not in plugins:
        pytest.skip("no OpenCL device works here (tests/test_probe.py says why)")
    return str(exe), shim.path(), cache, plugins


def _run(program, **extra):
    exe, lib, cache, _ = program
    done = subprocess.run([exe], env=_env(cache, LD_PRELOAD=lib, **extra), text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done


def _imported(done):
    return re.findall(r"^import '([\w.]+)'", done.stderr, re.M)


def test_python_numbers_gpus_first_and_the_host_plugin_last(program):
    """A Python program's order is unchanged (PoCL before the host plugin), and the
    second process, counting from the cache, finds the same devices."""
    plugins = program[3]
    assert plugins[-1] == "host" and plugins.index("opencl") < plugins.index("host")
    assert _python(program[2], COUNT).split() == plugins


def test_a_host_region_counts_pocl_without_starting_it(program):
    """Every device: omp_get_num_devices() counts PoCL's devices, the default device 0
    is the host plugin's, where the region runs (not the initial device), and neither
    pyopencl nor anything that starts OpenCL is imported."""
    done = _run(program, PYTHONVERBOSE="1")
    n = len(program[3])
    assert done.stdout == f"devices {n} default 0 region initial 0 device 0\n"
    imported = _imported(done)
    assert "pygomp.plugins.opencl.plugin" in imported       # it counted the devices
    assert [m for m in imported if m.split(".")[0] in ("pyopencl", "numpy")] == []


def test_pocl_starts_when_a_region_runs_there(program):
    """OMP_DEFAULT_DEVICE naming PoCL's device: the region maps there and runs its host
    code with the device's data (it has no image for OpenCL), so pyopencl is imported."""
    pocl = sorted(program[3], key=lambda name: name != "host").index("opencl")
    done = _run(program, OMP_DEFAULT_DEVICE=str(pocl), PYGOMP_INFO="0x10",
                PYTHONVERBOSE="1")
    n = len(program[3])
    assert done.stdout == f"devices {n} default {pocl} region initial 1 device {n}\n"
    assert f"device {pocl} (opencl) has no image of the target region" in done.stderr
    assert "pyopencl" in _imported(done)


def test_pygomp_devices_keeps_its_order(program):
    """PYGOMP_DEVICES set: its order, in a C program too (device 0 is PoCL here)."""
    done = _run(program, PYGOMP_DEVICES="opencl,host")
    assert done.stdout.startswith("devices 2 default 0 region initial 1 device 2\n")


def test_devices_changed_since_they_were_cached(tmp_path):
    """A cache entry that counts a device OpenCL no longer has: the device's start is an
    error that says so, and the entry is mended for the next process."""
    code = ("from pygomp.runtime import devices\n"
            "from pygomp.plugins.opencl import plugin as P\n"
            "p = devices.plugin('opencl')\n"
            "infos = p.devices()\n"
            "if infos and not {0}:\n"
            "    P._remember(P._discovery_key(), infos + [infos[0].replace(name='gone')])\n"
            "elif infos:\n"
            "    try:\n"
            "        p.init_device(len(infos) - 1)\n"
            "    except Exception as e:\n"
            "        print(type(e).__name__, e)\n"
            "print(len(p.devices()))")
    first = _python(tmp_path, code.format(False)).splitlines()
    if first == ["0"]:
        pytest.skip("no OpenCL device here")
    n = int(first[-1])
    out = _python(tmp_path, code.format(True)).splitlines()
    assert out == ["PluginError the OpenCL devices are not those counted at start-up "
                   "(from pygomp's cache): run the program again", str(n + 1)], out
    assert _python(tmp_path, "from pygomp.runtime import devices\n"
                             "print(len(devices.plugin('opencl').devices()))") == str(n)


@pytest.mark.parametrize("carries", ["", "opencl", "cuda"])
def test_a_c_programs_order_follows_the_images_it_carries(program, carries):
    """`devices.native_first` (what libpygomp.so asks for in a C program): devices of a
    plugin whose target a registered table has an image for, then the host plugin's,
    then the others; a table of OpenCL images (`python -m pygomp build`'s) puts PoCL
    back first.  The images are registered before the devices are found, as a
    program's constructors register them."""
    code = ("from pygomp.runtime import devices, images\n"
            "from pygomp.runtime.contract import Image\n"
            "devices.native_first()\n"
            f"if {carries!r}:\n"
            f"    images.register(images.OffloadImage([], [], [Image({carries!r}, b'')]))\n"
            "print(' '.join(d.plugin.name for d in devices.all_devices()[:-1]))")
    python = program[3]
    native = {"host", carries}
    want = sorted(python, key=lambda name: (name not in native, name == "host"))
    assert want[0] == (carries if carries in python else "host")
    assert _python(program[2], code).split() == want
