"""omp.atomic_add, atomic_max, atomic_min, atomic_exchange and atomic_cas on every
numeric type and every device, many work-items on few elements, against numpy: the
final elements and the old values each call returns."""
import numpy as np
import pytest

import pygomp.kernels as omp
from pygomp.errors import CompileError

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64"]


@omp.target
def contend(keys, vals, mx, mn, ad, xc, cs, olds):
    for i in omp.parallel_range(keys.shape[0]):
        k = keys[i]
        o = omp.atomic_max(mx, k, vals[i])
        olds[0, i] = o
        o = omp.atomic_min(mn, k, vals[i])
        olds[1, i] = o
        o = omp.atomic_add(ad, k, 1)
        olds[2, i] = o
        o = omp.atomic_exchange(xc, k, vals[i])
        olds[3, i] = o
        o = omp.atomic_cas(cs, k, 0, vals[i])
        olds[4, i] = o
        omp.atomic_max(mx, 0, vals[i])          # as a statement


def inputs(dtype, n=3000, nb=7):
    rng = np.random.default_rng(11)
    t = np.dtype(dtype)
    hi = 100 if t.kind == "f" else min(np.iinfo(t).max, 1000)
    lo = -hi if t.kind != "u" else 1
    vals = rng.integers(lo, hi, n).astype(t)
    vals[vals == 0] = 1                         # atomic_cas swaps 0 for a value
    keys = rng.integers(0, nb, n)
    fill = lambda v: np.full(nb, v, t)          # noqa: E731
    return keys, vals, fill(0), fill(0), fill(0), fill(0), fill(0), np.zeros((5, n), t)


def check(keys, vals, mx, mn, ad, xc, cs, olds):
    t = vals.dtype
    for b in range(mx.shape[0]):
        sel = keys == b
        v, o = vals[sel], olds[:, sel]
        top = max(v.max(), 0) if b else max(vals.max(), 0)
        assert mx[b] == top and mn[b] == min(v.min(), 0)
        assert np.all(o[0] <= mx[b]) and np.all(np.isin(o[0], np.append(vals, 0)))
        assert np.all(o[1] >= mn[b]) and np.all(np.isin(o[1], np.append(v, 0)))
        assert ad[b] == np.array(sel.sum()).astype(t)
        np.testing.assert_array_equal(np.sort(o[2]), np.sort(np.arange(sel.sum()).astype(t)))
        np.testing.assert_array_equal(np.sort(np.append(o[3], xc[b])), np.sort(np.append(v, 0)))
        won = o[4] == 0
        assert won.sum() == 1 and cs[b] == v[won][0] and np.all(o[4][~won] == cs[b])


@pytest.mark.parametrize("dtype", DTYPES)
def test_contended_atomics_return_the_old_values(device, dtype):
    args = inputs(dtype)
    contend.on(device)(*args)
    check(*args)


def test_py_func_returns_the_old_values():
    args = inputs("int16")
    contend.py_func(*args)
    check(*args)


def test_atomics_refused():
    @omp.target
    def in_expression(a):
        for i in omp.parallel_range(a.shape[0]):
            a[i] = omp.atomic_max(a, 0, 1) + 1

    @omp.target
    def on_bools(a):
        for i in omp.parallel_range(a.shape[0]):
            omp.atomic_exchange(a, 0, True)

    with pytest.raises(CompileError, match=r"old = omp.atomic_max\(\.\.\.\)"):
        in_expression.on(0)(np.zeros(4, np.int32))
    with pytest.raises(CompileError, match="omp.atomic_exchange on a bool array"):
        on_bools.on(0)(np.zeros(4, bool))


@pytest.mark.parametrize("gangs, workers, vector", [(5, 2, 8), (1, 1, 32)])
def test_contended_atomics_under_the_cuda_emulation(gangs, workers, vector):
    emu = pytest.importorskip("test_cuda_emu")
    cases = [(contend, inputs(t, n=8)) for t in DTYPES]
    lib = emu.emulator(cases)
    for dtype in DTYPES:
        args = inputs(dtype, n=400)
        emu.run(lib, contend, args, gangs, workers, vector)
        check(*args)


@omp.target
def gang_capture(a, out):
    for g in omp.gang(out.shape[0]):
        out[g] = 0
        o = omp.atomic_add(a, 0, 1)         # every work-item of the gang runs this
        out[g] = o


def test_what_work_group_devices_refuse():
    from pygomp.kernels import dialect_for
    args = (np.zeros(1, np.int32), np.zeros(4, np.int32))
    for target in ("opencl", "cuda"):
        with pytest.raises(CompileError, match="its old value cannot be used where"):
            gang_capture.spec(args).unit(dialect_for(target))
    opencl = dialect_for("opencl")
    for dtype, needs in (("int64", True), ("float64", True), ("int16", False)):
        info = contend.spec(inputs(dtype, n=4)).unit(opencl).kernels[0]
        assert ("int64_atomics" in info.requires) == needs


@omp.declare_target
def count(hist, top, k, v):
    omp.atomic_add(hist, k, 1)
    omp.atomic_max(top, k, v)


@omp.target
def first_claims(keys, owner, hist, top):
    for i in omp.parallel_range(keys.shape[0]):
        old = omp.atomic_cas(owner, keys[i], -1, i)
        if old == -1:
            count(hist, top, keys[i], i)


def test_atomics_as_statements_in_a_helper(device):
    keys = np.random.default_rng(3).integers(0, 9, 2000)
    owner, hist, top = np.full(9, -1, np.int64), np.zeros(9, np.int16), np.zeros(9, np.int32)
    first_claims.on(device)(keys, owner, hist, top)
    np.testing.assert_array_equal(hist, 1)
    np.testing.assert_array_equal(top, owner)
    np.testing.assert_array_equal(keys[owner], np.arange(9))
