"""The offload tables a C object carries in its ELF sections, read from memory."""
from __future__ import annotations

import ctypes
import subprocess

from pygomp.runtime import elf_tables

SOURCE = """
int g[4] = {1, 2, 3, 4};
double h;
static float s[3];
#pragma omp declare target to(g, h, s)
int k[10];
#pragma omp declare target link(k)
float *s_address(void) { return s; }
int region(int x) {
    #pragma omp target map(tofrom: x)
    x += 1;
    return x;
}
"""


def test_a_loaded_library_s_tables(tmp_path):
    src, lib = tmp_path / "vars.c", tmp_path / "libvars.so"
    src.write_text(SOURCE)
    subprocess.run(["gcc", "-fopenmp", "-foffload=disable", "-shared", "-fPIC", str(src),
                    "-o", str(lib)], check=True)
    assert elf_tables.sections(str(lib)).keys() == {"functions", "variables"}
    handle = ctypes.CDLL(str(lib))
    found = [t for t in elf_tables.loaded() if t.path == str(lib)]
    assert len(found) == 1
    t = found[0]
    handle.s_address.restype = ctypes.c_void_p
    at = {name: ctypes.addressof(ctypes.c_int.in_dll(handle, name)) for name in "ghk"}
    want = {(at["g"], 16, False), (at["h"], 8, False), (handle.s_address(), 12, False),
            (at["k"], 40, True)}
    assert set((a, s, link) for (a, s), link in zip(t.variables, t.links)) == want
    assert len(t.functions) == 1          # region's outlined body, inside the library
    text = ctypes.cast(handle.region, ctypes.c_void_p).value
    assert abs(t.functions[0] - text) < 1 << 20


def test_files_without_tables(tmp_path):
    assert elf_tables.sections("/bin/sh") == {}
    assert elf_tables.sections(str(tmp_path / "missing")) == {}
    (tmp_path / "short").write_bytes(b"\x7fELF")
    assert elf_tables.sections(str(tmp_path / "short")) == {}
