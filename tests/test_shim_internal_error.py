"""A failure inside pygomp while a C program runs under the shim: the whole Python
traceback on stderr, then libgomp's fatal error ("libgomp: <words>", exit status 1).
An error pygomp raises for the user (a map error) shows libgomp's words alone.

The failure comes through the plugin entry points, as any third party adds a device:
a distribution on PYTHONPATH whose plugin's alloc hook has a bug."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pygomp.csrc import shim

from test_shim import _env, _fatal

HERE = Path(__file__).parent / "c"

BROKEN = '''
from pygomp.plugins.host.plugin import HostPlugin


class BrokenPlugin(HostPlugin):
    name = "broken"

    def _alloc_impl(self, dev, size):
        return {}[5]            # the bug
'''


def _build(tmp_path, src):
    exe = tmp_path / Path(src).stem
    cmd = ["gcc", "-fopenmp", "-foffload=disable", "-O1", str(HERE / src), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
    return str(exe)


@pytest.fixture
def broken_plugin(tmp_path):
    """A directory for PYTHONPATH that installs the plugin "broken"."""
    site = tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "broken_plugin.py").write_text(BROKEN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pygomp.plugins]\nbroken = broken_plugin:BrokenPlugin\n")
    return str(site)


def test_internal_failure_in_a_region_prints_its_traceback(tmp_path, broken_plugin):
    exe = _build(tmp_path, "many_maps.c")         # its first region maps 33 scalars
    done = subprocess.run([exe, "separate"], capture_output=True, text=True, timeout=180,
                          env=_env(LD_PRELOAD=shim.path(), PYTHONPATH=broken_plugin,
                                   PYGOMP_DEVICES="broken"))
    _fatal(done, re.escape("device 0 (broken 0): alloc 4 bytes failed: KeyError: 5"))
    err = done.stderr
    assert err.startswith("Traceback (most recent call last):"), err
    assert re.search(r'File ".*broken_plugin\.py", line 9, in _alloc_impl\n\s+return \{\}\[5\]',
                     err), err
    assert "\nKeyError: 5\n" in err
    assert re.search(r'File ".*csrc/gomp\.py", line \d+, in pg_py_target', err), err
    assert err.rstrip().splitlines()[-1].startswith("libgomp: "), err   # the traceback first
    assert "many maps ok" not in done.stdout


def test_map_error_shows_libgomp_words_alone(tmp_path):
    exe = _build(tmp_path, "errors.c")
    done = subprocess.run([exe, "extend"], capture_output=True, text=True, timeout=180,
                          env=_env(LD_PRELOAD=shim.path()))
    _fatal(done, "is already mapped")
    assert "Traceback" not in done.stderr
