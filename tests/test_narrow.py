"""32-bit indices (compiler/narrow.py): what the CUDA dialect writes as int and the
OpenCL dialect as pyg_index (int, long on CPUs), what stays 64-bit, and results on PoCL
with int indices where a 32-bit value would have overflowed or met an unsigned
operand."""
import re

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp

pytest.importorskip("pyopencl")
from pygomp.plugins.opencl import target as cltarget  # noqa: E402
from test_opencl_plugin import _opencl_device, dev  # noqa: E402,F401  (a fixture)

INT = {"opencl": "pyg_index", "cuda": "int"}


def _diagonals(seq, table):
    n = seq.shape[0]
    for d in range(1, n):
        for i in omp.parallel_range(n - d):
            j = i + d
            t = table[i, j]
            for k in range(i + 1, j):
                t = max(t, table[i, k] + table[k + 1, j] + seq[i])
            table[i, j] = t


diagonals = omp.target(_diagonals)


def _diagonals_ref(seq, table):
    n = seq.shape[0]
    for d in range(1, n):
        for i in range(n - d):
            j = i + d
            t = table[i, j]
            for k in range(i + 1, j):
                t = max(t, table[i, k] + table[k + 1, j] + seq[i])
            table[i, j] = t


def _decl(src, name):
    """The C types ``name`` is declared with in a source."""
    return set(re.findall(rf"\b(int|long|long long|int64_t|int32_t|pyg_index) {name} = ",
                          src))


@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_indices_bounded_by_small_arrays_are_int(target):
    seq, table = np.arange(6, dtype=np.int32), np.zeros((6, 6), np.int32)
    src = diagonals.source(seq, table, target=target)
    c = INT[target]
    for name in ("n", "d", "i", "j", "k"):         # j = i + d < n: from i's loop
        assert _decl(src, name) == {c}, (name, src)
    assert f"table[(i) * (({c})table__s1) + j]" in src
    assert re.search(rf"for \({c} __i\d+ = \(i \+ 1\); __i\d+ < __stop\d+; __i\d+ \+= 1\)",
                     src)


def test_host_dialect_keeps_64_bits():
    seq, table = np.arange(6, dtype=np.int32), np.zeros((6, 6), np.int32)
    src = diagonals.source(seq, table, target="host")
    assert _decl(src, "j") == {"int64_t"} and "((int32_t)" not in src


def test_arrays_of_2_to_the_31_elements_keep_64_bits():
    """A 2-d view of 2**32 elements (no memory: its strides are 0) makes a
    specialization of its own, whose offsets and loop variables stay 64-bit."""
    seq = np.arange(6, dtype=np.int32)
    huge = np.broadcast_to(np.zeros(1, np.int32), (2**16, 2**16))
    src = diagonals.source(seq, huge, target="opencl")
    assert "__small" not in src and "((pyg_index)" not in src
    for name in ("n", "d", "i", "j", "k"):
        assert _decl(src, name) == {"long"}, name
    assert "table[(i) * table__s1 + j]" in src
    small = diagonals.source(seq, np.zeros((6, 6), np.int32), target="opencl")
    assert "__small" in small


def _scaled(y, m):
    for i in omp.parallel_range(y.shape[0]):
        y[i] = (i - 1073741824) * 4 + m     # fits in int32 until the product


def _below(x, u):
    for i in omp.parallel_range(x.shape[0]):
        k = i - 5
        if k < u:                       # a negative int against a uint32
            x[i] = 1.0


scaled, below = omp.target(_scaled), omp.target(_below)


@omp.target
def by_scalar(x, m):
    for i in omp.parallel_range(m):
        x[i % 4] += 1.0


def test_what_may_not_fit_stays_64_bit():
    y = np.zeros(4, np.int64)
    src = scaled.source(y, 1, target="opencl")
    assert _decl(src, "i") == {"pyg_index"}
    assert "(((long)(i - 1073741824)) * 4)" in src       # the product is widened
    # a loop bounded by an int64 argument: the loop variable stays 64-bit
    assert _decl(by_scalar.source(np.zeros(4), 10, target="opencl"), "i") == {"long"}


@pytest.mark.parametrize("spelling", ["int", "long"])
def test_results_on_pocl(dev, spelling, monkeypatch, tmp_path):
    """PoCL with the int indices GPUs get, and with the long ones of CPUs (its own)."""
    monkeypatch.setenv("PYGOMP_CACHE_DIR", str(tmp_path))      # sources of their own
    monkeypatch.setattr(cltarget.OpenCLDialect, "index_decl", f"typedef {spelling} pyg_index;")
    diagonals, scaled, below = (omp.target(f) for f in (_diagonals, _scaled, _below))
    seq = (np.arange(40) % 4).astype(np.int32)
    table = np.zeros((40, 40), np.int32)
    want = table.copy()
    _diagonals_ref(seq, want)
    diagonals.on(dev.number)(seq, table)
    np.testing.assert_array_equal(table, want)
    y = np.zeros(4, np.int64)
    scaled.on(dev.number)(y, 3)
    np.testing.assert_array_equal(y, (np.arange(4) - 2**30) * 4 + 3)
    x, want = np.zeros(10), np.zeros(10)
    below.on(dev.number)(x, np.uint32(3))
    below.on(pygomp.omp_get_initial_device())(want, np.uint32(3))     # 64-bit C
    np.testing.assert_array_equal(x, want)
    assert want.sum() == 3
