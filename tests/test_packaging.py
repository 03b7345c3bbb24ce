"""pygomp installed from its package (not editable) carries its examples: `python -m
pygomp demo` runs them from any directory, and says where they are when they are missing."""
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`pip install --no-deps --target SITE` of a copy of the source tree."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src)
    for name in ("pygomp", "plugins", "csrc", "examples"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--target", str(site), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return site


def demo(site, cwd):
    """The demo as an installed pygomp runs it: -S keeps this checkout's editable install
    out; numpy and the other dependencies come from this environment's site-packages."""
    deps = pathlib.Path(np.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{deps}", PYGOMP_DEVICES="host",
               PYGOMP_CACHE_DIR=str(cwd / "cache"))
    return subprocess.run([sys.executable, "-S", "-m", "pygomp", "demo", "--size", "1000"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_installed_package_holds_the_examples(installed):
    ex = installed / "pygomp_examples"
    assert (ex / "saxpy.py").is_file() and (ex / "upc_stencil.py").is_file()
    assert (ex / "c" / "saxpy.c").is_file() and (ex / "c" / "kernels.py").is_file()


def test_demo_runs_the_installed_examples(installed, tmp_path):
    assert not (tmp_path / "examples").exists()
    p = demo(installed, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert f"examples: {installed / 'pygomp_examples'}" in p.stdout
    rows = [line.split() for line in p.stdout.splitlines() if line.startswith("0: host")]
    names = {r[2] for r in rows}
    assert {"saxpy", "dot", "pi", "matvec", "jacobi", "histogram", "transpose"} <= names
    assert all(r[-1] == "ok" for r in rows), p.stdout


def test_demo_without_examples_says_where_they_are(installed, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(installed, site, ignore=shutil.ignore_patterns("pygomp_examples"))
    p = demo(site, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "examples: none found" in p.stdout and "examples/ folder" in p.stdout
    assert "round trip" in p.stdout and "saxpy" not in p.stdout


TWICE = r"""
#include <stdio.h>
int main(void)
{
    double a[4] = {1, 2, 3, 4};
    #pragma omp target map(tofrom: a)
    for (int i = 0; i < 4; i++)
        a[i] *= 2;
    printf("%g %g %g %g\n", a[0], a[1], a[2], a[3]);
    return 0;
}
"""


def test_installed_c_face_and_plugins_live_in_pygomp(installed, tmp_path):
    """The folders csrc/ and plugins/ install as pygomp.csrc (its C sources too) and
    pygomp.plugins (the entry points name them so); the installed C face builds
    libpygomp.so, and a C program's target region runs through it."""
    assert (installed / "pygomp" / "csrc" / "shim.c").is_file()
    assert (installed / "pygomp" / "csrc" / "prof.c").is_file()
    assert (installed / "pygomp" / "plugins" / "host" / "plugin.py").is_file()
    assert not (installed / "csrc").exists() and not (installed / "plugins").exists()
    points = next(installed.glob("pygomp-*.dist-info")) / "entry_points.txt"
    assert "host = pygomp.plugins.host.plugin:HostPlugin" in points.read_text()
    deps = pathlib.Path(np.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=f"{installed}{os.pathsep}{deps}",
               PYGOMP_DEVICES="host", PYGOMP_CACHE_DIR=str(tmp_path / "cache"))
    where = subprocess.run([sys.executable, "-S", "-c", "import pygomp.csrc.abi, "
                            "pygomp.plugins.host.plugin as p; print(p.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert where.stdout.strip() == str(installed / "pygomp" / "plugins" / "host" /
                                       "plugin.py"), where.stderr
    lib = subprocess.run([sys.executable, "-S", "-m", "pygomp", "shim"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert lib.returncode == 0 and os.path.isfile(lib.stdout.strip()), lib.stderr
    (tmp_path / "twice.c").write_text(TWICE)
    subprocess.run(["gcc", "-fopenmp", "-foffload=disable", str(tmp_path / "twice.c"),
                    "-o", str(tmp_path / "twice")], check=True)
    done = subprocess.run([str(tmp_path / "twice")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120,
                          env=dict(env, LD_PRELOAD=lib.stdout.strip(), PYGOMP_INFO="0x01"))
    assert done.returncode == 0 and done.stdout == "2 4 6 8\n", done.stderr
    assert "pygomp" in done.stderr      # PYGOMP_INFO: the shim mapped the array
