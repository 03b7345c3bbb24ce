"""Devices prove they work before they are numbered: every OpenCL device builds and runs a
probe kernel (cached on disk); one that fails is listed by `info` with the reason, is no
offload device by default, fails at first use when PYGOMP_DEVICES names it, and gets no
image from `pygomp build`.  A real failure of the plugin's own build path makes a device
fail here: PYGOMP_OPENCL_BUILD_OPTIONS holds an option PoCL refuses."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pygomp.runtime import devices

EXAMPLE = Path(__file__).parent.parent / "examples" / "c" / "kernels.py"
REFUSED = "-cl-no-such-option"
WHY = f"the probe kernel does not build: Invalid build option: {REFUSED}"


def _opencl():
    p = devices.plugins().get("opencl")
    if p is None or isinstance(p, Exception) or not p.num_devices():
        pytest.skip(f"no OpenCL device{f': {p.unavailable}' if p and p.unavailable else ''}")
    return p


def _python(code, **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYGOMP_", "OMP_"))}
    environ["PYGOMP_CACHE_DIR"] = os.environ["PYGOMP_CACHE_DIR"]
    environ.update(env)
    return subprocess.run([sys.executable, *code], capture_output=True, text=True,
                          env=environ, timeout=120)


def test_every_plugin_with_devices_has_one_that_works():
    """Where a plugin finds devices and none works, this fails with their reasons (the
    plugin's other tests then skip for want of a device)."""
    for name, p in devices.plugins().items():
        if isinstance(p, Exception) or not p.num_devices():
            continue
        reasons = [f"{name}:{i} {d.name} [{d.platform}]: {d.problem}"
                   for i, d in enumerate(p.devices())]
        assert p.choose("", named=False), "no device works:\n" + "\n".join(reasons)


def test_a_device_that_fails_its_probe():
    p = _opencl()
    names = [d.name for d in p.devices()]
    bad = {"PYGOMP_OPENCL_BUILD_OPTIONS": REFUSED}

    done = _python(["-m", "pygomp", "info"], **bad)
    assert done.returncode == 0, done.stderr
    for i, name in enumerate(names):
        assert f"opencl:{i} " in done.stdout and f"{name} [" in done.stdout
        assert f"is no offload device: {WHY}" in done.stdout
    numbered = done.stdout.split("devices:")[1]
    assert "opencl:" not in numbered

    listed = "from pygomp.runtime import devices; print([d.plugin.name for d in " \
             "devices.all_devices()])"
    done = _python(["-c", listed], **bad)
    assert done.stdout.split() == ["['host',", "'host']"], done.stderr

    first_use = "import numpy as np, pygomp as omp\n" \
                "with omp.target_data(device=0, to=[np.ones(4)]): pass"
    done = _python(["-c", first_use], PYGOMP_DEVICES="opencl", **bad)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"pygomp.runtime.devices.OffloadError: device 0 (opencl 0: {names[0]}) does not "
        f"work: {WHY}")


def test_build_gives_a_broken_device_no_image(tmp_path):
    p = _opencl()
    out = tmp_path / "k.c"
    done = _python(["-m", "pygomp", "build", str(EXAMPLE), "-o", str(out)],
                   PYGOMP_OPENCL_BUILD_OPTIONS=REFUSED)
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if "opencl" in ln]
    assert lines == [f"pygomp build: no images for opencl:{i} ({d.name}): it does not work: "
                     f"{WHY}" for i, d in enumerate(p.devices())]
    text = out.read_text()
    assert '\\"target\\": \\"host\\"' in text and '\\"target\\": \\"opencl\\"' not in text


def test_build_makes_images_only_for_the_devices_named(tmp_path):
    _opencl()
    out = tmp_path / "k.c"
    done = _python(["-m", "pygomp", "build", str(EXAMPLE), "-o", str(out)],
                   PYGOMP_DEVICES="host")
    assert done.returncode == 0, done.stderr
    assert "no opencl device here" in done.stderr
    assert '\\"target\\": \\"opencl\\"' not in out.read_text()


def test_the_same_cpu_is_numbered_once(tmp_path):
    """Two platforms (the wheel's PoCL and the system's) expose the one CPU: the default
    list holds one device for it, and a selector reaches the other."""
    p = _opencl()
    cpus = [i for i, d in enumerate(p.devices()) if d.kind == "cpu" and not d.problem]
    if len(cpus) < 2:
        pytest.skip("one working OpenCL CPU device here")
    assert [i for i in p.choose("", named=False) if i in cpus] == cpus[:1]
    assert p.devices()[cpus[1]].same_as == cpus[0]
    run = "import numpy as np, pygomp as omp\n" \
          "@omp.target\n" \
          "def twice(x):\n" \
          "    for i in omp.parallel_range(x.shape[0]):\n" \
          "        x[i] = 2.0 * x[i]\n" \
          "x = np.arange(100.0)\n" \
          "twice.on(0)(x)\n" \
          "assert (x == 2.0 * np.arange(100.0)).all()\n" \
          "print(omp.omp_get_num_devices())\n"
    script = tmp_path / "twice.py"
    script.write_text(run)
    for i in cpus[:2]:
        done = _python([str(script)], PYGOMP_DEVICES=f"opencl:{i}")
        assert done.returncode == 0 and done.stdout.split() == ["1"], done.stderr


def test_a_warm_start_builds_no_probe(tmp_path):
    _opencl()
    count = "from pygomp.plugins.opencl import build\n" \
            "calls, probe = [], build._probe\n" \
            "build._probe = lambda *a: calls.append(a) or probe(*a)\n" \
            "from pygomp.runtime import devices\n" \
            "devices.plugin('opencl').devices()\n" \
            "print(len(calls))\n"
    cache = str(tmp_path / "cache")
    first = _python(["-c", count], PYGOMP_CACHE_DIR=cache)
    again = _python(["-c", count], PYGOMP_CACHE_DIR=cache)
    assert int(first.stdout) >= 1, first.stderr
    assert int(again.stdout) == 0, again.stderr
