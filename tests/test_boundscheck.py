"""Bounds checking: ``@omp.target(boundscheck=True)`` and ``PYGOMP_BOUNDSCHECK=1``.

On every device, and for CUDA under the emulation of test_cuda_emu, an access out of
range is not done (a read gives 0, a store is skipped), and the call raises numpy's
IndexError naming the access's file and line; the next call runs normally.  With the
setting off, the generated code has no trace of the checks.
"""
import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygomp as omp
from pygomp.compiler import boundscheck as BC
from pygomp.runtime import devices

FILE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(FILE))


def line(tag):
    """The line of this file that ends with the comment ``# <tag>``."""
    with open(FILE) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# <{tag}>"):
                return n
    raise KeyError(tag)


def out_of_range(tag, index, axis, size):
    return f"{FILE}:{line(tag)}: index {index} is out of bounds for axis {axis} with size {size}"


@omp.target(boundscheck=True)
def shifted_read(x, y, shift: int):
    for i in omp.parallel_range(y.shape[0]):
        y[i] = x[i + shift]                     # <read>


@omp.target(boundscheck=True)
def shifted_write(x, y, shift: int):
    for i in omp.parallel_range(x.shape[0]):
        y[i + shift] = x[i]                     # <write>


@omp.target(boundscheck=True)
def row_sums(a, out, extra: int):
    for i in omp.parallel_range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1] + extra):
            s += a[i, j]                        # <columns>
        out[i] = s


@omp.target(boundscheck=True)
def next_row(a, out):
    for i in omp.parallel_range(a.shape[0]):
        out[i] = a[i + 1, 0]                    # <rows>


@omp.target(boundscheck=True)
def view_column(a, out, j: int):
    for i in omp.parallel_range(a.shape[0]):
        row = a[i]
        out[i] = row[j]                         # <view>


@omp.declare_target
def after(i):
    return i + 1


@omp.declare_target
def element(x, i):
    return x[i]                                 # <helper-read>


@omp.target(boundscheck=True)
def through_helpers(x, y, mode: int):
    for i in omp.parallel_range(y.shape[0]):
        if mode == 0:
            y[i] = x[after(i)]                  # <helper-index>
        else:
            y[i] = element(x, after(i))


@omp.target(boundscheck=True)
def top_write(x, k: int):
    x[k] = 1.0                                  # <top-write>


@omp.target(boundscheck=True)
def top_read(x, k: int):
    return x[k]                                 # <top-read>


@omp.target(boundscheck=True)
def counts(bins, hist):
    for i in omp.parallel_range(bins.shape[0]):
        omp.atomic_add(hist, bins[i], 1)        # <atomic>


def raised(call, *args, **kw):
    with pytest.raises(IndexError) as e:
        call(*args, **kw)
    return str(e.value)


def test_reads_past_either_end(device):
    x, y = np.arange(1.0, 11.0), np.full(10, 7.0)
    k = shifted_read.on(device)
    assert raised(k, x, y, 1) == out_of_range("read", 10, 0, 10)
    np.testing.assert_array_equal(y, np.append(x[1:], 0.0))      # the read gave 0
    y[:] = 7.0
    assert raised(k, x, y, -11) == out_of_range("read", -11, 0, 10)
    np.testing.assert_array_equal(y, np.append(0.0, x[:-1]))     # -10 .. -2 count from the end
    k(x, y, 0)                          # the runtime goes on: the next call runs normally
    np.testing.assert_array_equal(y, x)


def test_writes_past_either_end_are_skipped(device):
    x = np.arange(1.0, 11.0)
    buf = np.zeros(12)
    y = buf[1:11]                       # one element on each side that no store may touch
    k = shifted_write.on(device)
    assert raised(k, x, y, 1) == out_of_range("write", 10, 0, 10)
    np.testing.assert_array_equal(buf, np.concatenate([[0.0, 0.0], x[:-1], [0.0]]))
    buf[:] = 0.0
    assert raised(k, x, y, -11) == out_of_range("write", -11, 0, 10)
    np.testing.assert_array_equal(buf, np.concatenate([[0.0], x[1:], [0.0, 0.0]]))
    buf[:] = 0.0
    k(x, y, 0)
    np.testing.assert_array_equal(y, x)


def test_two_dimensional_axes(device):
    a, out = np.arange(12.0).reshape(3, 4), np.zeros(3)
    assert raised(row_sums.on(device), a, out, 1) == out_of_range("columns", 4, 1, 4)
    np.testing.assert_array_equal(out, a.sum(axis=1))            # the reads gave 0
    assert raised(next_row.on(device), a, out) == out_of_range("rows", 3, 0, 3)
    assert raised(view_column.on(device), a, out, 4) == out_of_range("view", 4, 0, 4)
    view_column.on(device)(a, out, -1)
    np.testing.assert_array_equal(out, a[:, -1])


def test_index_from_a_helper_and_access_in_a_helper(device):
    x, y = np.arange(10.0), np.zeros(10)
    k = through_helpers.on(device)
    assert raised(k, x, y, 0) == out_of_range("helper-index", 10, 0, 10)
    assert raised(k, x, y, 1) == out_of_range("helper-read", 10, 0, 10)
    z = np.zeros(9)
    k(x, z, 1)
    np.testing.assert_array_equal(z, x[1:])


def test_top_level_accesses(device):
    x = np.arange(10.0)
    assert raised(top_write.on(device), x, 12) == out_of_range("top-write", 12, 0, 10)
    np.testing.assert_array_equal(x, np.arange(10.0))
    assert raised(top_read.on(device), x, -11) == out_of_range("top-read", -11, 0, 10)
    assert top_read.on(device)(x, -1) == 9.0
    top_write.on(device)(x, -10)
    assert x[0] == 1.0


def test_atomics(device):
    hist = np.zeros(3, np.int64)
    bins = np.array([0, 1, 2, 3, 1], np.int64)
    assert raised(counts.on(device), bins, hist) == out_of_range("atomic", 3, 0, 3)
    np.testing.assert_array_equal(hist, [1, 2, 1])


def test_nothing_is_left_mapped(device):
    x, y = np.arange(10.0), np.zeros(10)
    shifted_read.on(device)(x, y, 0)    # loaded: the map holds what stays
    dev = devices.resolve(device)
    held = len(dev.map)
    raised(shifted_read.on(device), x, y, 1)
    assert len(dev.map) == held
    if not dev.is_initial:
        assert not omp.omp_target_is_present(x, device)
        assert not omp.omp_target_is_present(y, device)


def test_nowait_calls_raise_at_wait(device):
    x, y = np.arange(10.0), np.zeros(10)
    task = shifted_read.on(device)(x, y, 1, nowait=True)
    assert raised(task.wait) == out_of_range("read", 10, 0, 10)
    assert raised(omp.taskwait) == out_of_range("read", 10, 0, 10)     # and it is gone
    shifted_read.on(device)(x, y, 0, nowait=True).wait()
    np.testing.assert_array_equal(y, x)


# -- the setting ----------------------------------------------------------------------

def plain(x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = 2.0 * x[i]


TARGETS = ("host", "opencl", "cuda")


def dialect(name):
    mod = pytest.importorskip(f"pygomp.plugins.{name}.target")
    return mod.HOOKS


@pytest.mark.parametrize("target", TARGETS)
def test_off_leaves_no_trace(target):
    import test_kernels_examples as tke
    hooks = dialect(target)
    x = np.zeros(4)
    cases = [(omp.target(plain), (x, x)), (tke.load("dot").dot, (x, x)),
             (tke.load("jacobi").sweep, (np.zeros((2, 2)), np.zeros((2, 2)))),
             (tke.load("histogram").histogram, (x, 0.0, 1.0, np.zeros(2, np.int64)))]
    for k, args in cases:
        off = k.source(*args, target=hooks, boundscheck=False)
        assert off == k.source(*args, target=hooks)         # PYGOMP_BOUNDSCHECK is unset
        assert not any(w in off for w in ("pyg_ix", "pyg_rd", "pyg_ok", BC.RECORD))
        on = k.source(*args, target=hooks, boundscheck=True)
        assert "pyg_ix" in on and on != off


def test_switching_rebuilds(device):
    k = omp.target(plain)
    x, y = np.arange(5.0), np.zeros(5)
    k.on(device)(x, y)
    assert not k.boundscheck
    k.boundscheck = True
    k.on(device)(x, y)
    on, off = k.spec((x, y)), k.spec((x, y), boundscheck=False)
    assert on is not off and on.checked and not off.checked and on.name != off.name
    assert raised(k.on(device), x, np.zeros(4)) == \
        f"{FILE}:{inspect.getsourcelines(plain)[1] + 2}: index 4 is out of bounds for " \
        f"axis 0 with size 4"
    k.boundscheck = False
    k.on(device)(x, y)
    np.testing.assert_array_equal(y, 2.0 * x)


SCRIPT = """\
import numpy as np
import pygomp as omp

@omp.target
def read(x, k: int):
    return x[k]

@omp.target(boundscheck=False)
def unchecked(x, k: int):
    return x[k]

print(read.boundscheck, unchecked.boundscheck, "pyg_ix" in unchecked.source(np.zeros(3), 0))
if read.boundscheck:
    try:
        read(np.zeros(3), 3)
    except IndexError as e:
        print(f"IndexError: {e}")
    print(read(np.arange(3.0), 2))
"""


@pytest.mark.parametrize("value", ["1", "0", ""])
def test_environment_variable(tmp_path, value):
    script = tmp_path / "kernel.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYGOMP_BOUNDSCHECK=value)
    for _ in range(2):                  # the second process finds the kernel on disk
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        if value == "1":
            assert r.stdout == textwrap.dedent(f"""\
                True False False
                IndexError: {script}:6: index 3 is out of bounds for axis 0 with size 3
                2.0
                """)
        else:
            assert r.stdout == "False False False\n"


# -- CUDA C under the emulation --------------------------------------------------------

class _WithRecord:
    """A kernel whose last argument is its record: test_cuda_emu.run passes it as one
    more array (the record is the checked kernel's last array parameter)."""

    def __init__(self, kernel):
        self.kernel = kernel

    def spec(self, args):
        return self.kernel.spec(args[:-1])


@pytest.fixture(scope="module")
def emu():
    pytest.importorskip("pygomp.plugins.cuda.target")
    import test_cuda_emu
    return test_cuda_emu


CUDA_CASES = [(shifted_read, (np.zeros(2), np.zeros(2), 0)),
              (shifted_write, (np.zeros(2), np.zeros(2), 0)),
              (row_sums, (np.zeros((2, 2)), np.zeros(2), 0)),
              (view_column, (np.zeros((2, 2)), np.zeros(2), 0)),
              (through_helpers, (np.zeros(2), np.zeros(2), 0)),
              (top_read, (np.zeros(2), 0)),
              (counts, (np.zeros(2, np.int64), np.zeros(2, np.int64)))]


@pytest.fixture(scope="module")
def lib(emu):
    return emu.emulator(CUDA_CASES)


def cuda(emu, lib, kernel, *args, geometry=(3, 2, 4)):
    """``kernel(*args)`` under the emulation: its result and the record's message."""
    from pygomp.plugins.cuda.target import HOOKS
    record = np.zeros(BC.WORDS, np.int64)
    out = emu.run(lib, _WithRecord(kernel), args + (record,), *geometry)
    return out, BC.message(record, kernel.spec(args).unit(HOOKS).sites)


@pytest.mark.parametrize("geometry", [(3, 2, 4), (1, 1, 32)])
def test_cuda_emulation(emu, lib, geometry):
    x, y = np.arange(1.0, 11.0), np.full(10, 7.0)
    assert cuda(emu, lib, shifted_read, x, y, 1, geometry=geometry)[1] == \
        out_of_range("read", 10, 0, 10)
    np.testing.assert_array_equal(y, np.append(x[1:], 0.0))
    assert cuda(emu, lib, shifted_read, x, y, -11, geometry=geometry)[1] == \
        out_of_range("read", -11, 0, 10)
    assert cuda(emu, lib, shifted_read, x, y, 0, geometry=geometry)[1] is None
    np.testing.assert_array_equal(y, x)

    buf = np.zeros(12)
    assert cuda(emu, lib, shifted_write, x, buf[1:11], 1, geometry=geometry)[1] == \
        out_of_range("write", 10, 0, 10)
    np.testing.assert_array_equal(buf, np.concatenate([[0.0, 0.0], x[:-1], [0.0]]))

    a, out = np.arange(12.0).reshape(3, 4), np.zeros(3)
    assert cuda(emu, lib, row_sums, a, out, 1, geometry=geometry)[1] == \
        out_of_range("columns", 4, 1, 4)
    np.testing.assert_array_equal(out, a.sum(axis=1))
    assert cuda(emu, lib, view_column, a, out, 4, geometry=geometry)[1] == \
        out_of_range("view", 4, 0, 4)
    assert cuda(emu, lib, through_helpers, x, y, 0, geometry=geometry)[1] == \
        out_of_range("helper-index", 10, 0, 10)
    assert cuda(emu, lib, through_helpers, x, y, 1, geometry=geometry)[1] == \
        out_of_range("helper-read", 10, 0, 10)
    assert cuda(emu, lib, top_read, x, 10, geometry=geometry) == \
        (0.0, out_of_range("top-read", 10, 0, 10))
    assert cuda(emu, lib, top_read, x, -1, geometry=geometry) == (10.0, None)
    hist = np.zeros(3, np.int64)
    assert cuda(emu, lib, counts, np.array([0, 1, 2, 3, 1]), hist, geometry=geometry)[1] \
        == out_of_range("atomic", 3, 0, 3)
    np.testing.assert_array_equal(hist, [1, 2, 1])
