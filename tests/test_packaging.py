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
