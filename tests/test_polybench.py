"""The benchmark kernels of bench/polybench at tiny sizes: C against numpy (or the
original loops in plain Python), and the pygomp kernel on every device against C."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.polybench import BENCHES  # noqa: E402
from bench.polybench.harness import Variant, find_device, fresh, mismatch  # noqa: E402
from pygomp.runtime import devices, mapping  # noqa: E402

NAMES = [b.name for b in BENCHES]
BY_NAME = {b.name: b for b in BENCHES}


def test_at_least_twelve_kernels():
    assert len(set(NAMES)) == len(NAMES) >= 12


def test_the_check_sees_one_wrong_element():
    b = BY_NAME["gemm"]
    got = Variant(b, b.data("tiny")).result()
    want = {"C": got["C"].copy()}
    got["C"][3, 4] *= 1 + 1e-6
    assert mismatch(got, want, "C") == (f"C: C[3, 4] is {got['C'][3, 4]}, not "
                                        f"{want['C'][3, 4]} (1 elements differ)")


@pytest.mark.parametrize("name", NAMES)
def test_c_against_numpy(name):
    b = BY_NAME[name]
    data = b.data("tiny")
    assert b.reference is not None
    assert mismatch(Variant(b, data).result(), b.reference(fresh(data)), "C") is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["atax", "doitgen", "nussinov"])
def test_numba_anchor_against_c(name):
    """The Numba column's rewrite: an array reduction (atax), collapse and np.zeros
    (doitgen), integers and a wavefront (nussinov)."""
    pytest.importorskip("numba")
    b = BY_NAME[name]
    data = b.data("tiny")
    assert mismatch(Variant(b, data, numba=True).result(), Variant(b, data).result(),
                    "Numba") is None


@pytest.mark.parametrize("name", NAMES)
def test_kernel_against_c(device, name):
    b = BY_NAME[name]
    data = b.data("tiny")
    want = Variant(b, data).result()
    with Variant(b, data, find_device(str(device))) as v:
        got = v.result()
    assert mismatch(got, want, f"device {device}") is None
    assert all(g.dtype == w.dtype and g.shape == w.shape for g, w in
               zip(got.values(), want.values()))


@pytest.mark.parametrize("name", NAMES)
def test_one_work_group_against_c(monkeypatch, name):
    """The kernels whose program loops, as one work-group on PoCL (a fresh kernel, so
    that it loads under PYGOMP_OPENCL_ONE_GROUP=1)."""
    import dataclasses

    import pygomp as omp
    dev = next((d for d in devices.all_devices()
                if d.plugin.name == "opencl" and d.info.kind == "cpu"), None)
    if dev is None:
        pytest.skip("no OpenCL CPU device")
    b = BY_NAME[name]
    data = b.data("tiny")
    kernel = omp.target(b.kernel.py_func)
    if "__one(" not in kernel.source(*b.args(data), target="opencl"):
        pytest.skip("no one-group variant: its program does not loop")
    monkeypatch.setenv("PYGOMP_OPENCL_ONE_GROUP", "1")
    want = Variant(b, data).result()
    with Variant(dataclasses.replace(b, kernel=kernel), data, dev) as v:
        got = v.result()
        fn = mapping.function_address(dev, kernel.spec(tuple(b.args(v.data))).symbol.address)
    assert dev.plugin._kernels[fn].choice.mode == "1"
    assert mismatch(got, want, "one work-group") is None
