"""tests/c/many_maps.c: constructs with 0 to 200 map items of random kinds, under the
shim (the host device, separate memory) and under libgomp alone, with glibc's
MALLOC_PERTURB_ so that a write past a block or a read of freed memory shows."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pygomp.csrc import shim

from test_shim import _env, _passed

HERE = Path(__file__).parent / "c"
PERTURB = {"MALLOC_PERTURB_": "165"}


@pytest.fixture(scope="module")
def many_maps(tmp_path_factory):
    exe = tmp_path_factory.mktemp("many-maps") / "many_maps"
    cmd = ["gcc", "-fopenmp", "-foffload=disable", "-O1", "-Wall", "-Werror",
           str(HERE / "many_maps.c"), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
    return str(exe)


def _run(argv, env):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def test_every_count_of_map_items_under_the_shim(many_maps):
    done = _run([many_maps, "separate"], _env(LD_PRELOAD=shim.path(), **PERTURB))
    _passed(done)
    assert done.stdout == "many maps ok\n"


def test_every_count_of_map_items_under_libgomp(many_maps):
    """The program's own expectations hold for shared memory too."""
    done = _run([many_maps], _env(**PERTURB))
    _passed(done)
    assert done.stdout == "many maps ok\n"
