"""Sequential loops around barriers on OpenCL: where every work-item of a group has the
same trip count the loop takes no group-wide maximum; the results stay numpy's, in
PoCL's real work-groups (barriers that work) as in single-item groups."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygomp as omp
from pygomp.runtime import devices

pytest.importorskip("pyopencl")


@omp.target(num_gangs=3, num_workers=4)
def rotate_rows(a, b, m: int):
    """Each round rotates every row left by one and adds the round: the second worker
    loop reads what other workers stored in the first."""
    c = a.shape[1]
    for i in omp.gang(a.shape[0]):
        for t in range(m):
            for j in omp.worker(c):
                b[i, j] = a[i, (j + 1) % c] + t
            for j in omp.worker(c):
                a[i, j] = b[i, j]


@omp.target(num_gangs=3, num_workers=4)
def rounds_per_row(a, b, m: int):
    """As rotate_rows, with i % 3 + m rounds in row i (the same in the row's group)."""
    c = a.shape[1]
    for i in omp.gang(a.shape[0]):
        for t in range(i % 3 + m):
            for j in omp.worker(c):
                b[i, j] = a[i, (j + 1) % c] + t
            for j in omp.worker(c):
                a[i, j] = b[i, j]


@omp.target(num_gangs=3, num_workers=4)
def rounds_from_memory(a, b, k):
    """Rounds read from memory: the loop keeps its group-wide maximum."""
    c = a.shape[1]
    for i in omp.gang(a.shape[0]):
        for t in range(k[i]):
            for j in omp.worker(c):
                b[i, j] = a[i, (j + 1) % c] + t
            for j in omp.worker(c):
                a[i, j] = b[i, j]


@omp.target(num_gangs=3, num_workers=4)
def rotate_until(a, b, m: int):
    """As rotate_rows, leaving at round 2: after a jump the loop keeps its maximum."""
    c = a.shape[1]
    for i in omp.gang(a.shape[0]):
        for t in range(m):
            if t == 2:
                break
            for j in omp.worker(c):
                b[i, j] = a[i, (j + 1) % c] + t
            for j in omp.worker(c):
                a[i, j] = b[i, j]


@omp.target(num_gangs=3, num_workers=4)
def nested_rounds(a, b, m: int):
    """As rotate_rows, its rounds in two nested loops: the inner one is uniform too."""
    c = a.shape[1]
    for i in omp.gang(a.shape[0]):
        for s in range(2):
            for t in range(s, m):
                for j in omp.worker(c):
                    b[i, j] = a[i, (j + 1) % c] + t * s
                for j in omp.worker(c):
                    a[i, j] = b[i, j]


def cases():
    rng = np.random.default_rng(5)
    a = rng.random((7, 13))
    k = np.array([0, 3, 1, 4, 2, 5, 1])
    return [(rotate_rows, (a, np.zeros_like(a), 4)),
            (rounds_per_row, (a, np.zeros_like(a), 2)),
            (rounds_from_memory, (a, np.zeros_like(a), k)),
            (rotate_until, (a, np.zeros_like(a), 4)),
            (nested_rounds, (a, np.zeros_like(a), 3))]


def check(dev):
    """Every case on device ``dev`` against its Python function on numpy arrays."""
    for kernel, args in cases():
        want = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        kernel.py_func(*want)
        got = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        kernel.on(dev)(*got)
        np.testing.assert_array_equal(got[0], want[0], err_msg=kernel.__name__)


def test_only_a_loop_whose_trips_may_differ_takes_the_group_maximum():
    group_max = "long pyg_most"
    for kernel, args in cases():
        src = kernel.source(*args, target="opencl")
        uniform = kernel in (rotate_rows, rounds_per_row, nested_rounds)
        assert (f"const {group_max}" in src) == uniform, kernel.__name__
        assert group_max in src
        if kernel is nested_rounds:         # both loops
            assert src.count(f"const {group_max}") == 2 and src.count(group_max) == 2


def test_uniform_loops_in_single_item_groups():
    dev = next((d for d in devices.all_devices() if d.plugin.name == "opencl"), None)
    if dev is None:
        pytest.skip("no OpenCL device")
    check(dev.number)


def test_uniform_loops_in_real_work_groups(tmp_path):
    if not any(d.plugin.name == "opencl" for d in devices.all_devices()):
        pytest.skip("no OpenCL device")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import test_uniform_loops as t
        from pygomp.runtime import devices
        t.check(next(d for d in devices.all_devices() if d.plugin.name == "opencl").number)
        print("ok")
    """)
    env = dict(os.environ, PYGOMP_OPENCL_CPU_WORKGROUPS="1", PYGOMP_DEVICES="opencl",
               PYGOMP_CACHE_DIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                       text=True, timeout=280)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]
