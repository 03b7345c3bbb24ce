"""print() in kernels: printf on every device, as close to Python's print as printf
allows; the kernel's output (C's stdout, not sys.stdout) read from a child process."""
import contextlib
import io
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import pygomp.kernels as omp
from pygomp.errors import CompileError


@omp.target
def show(a, n: int, x: float, flag: bool):
    print("n =", n, "x:", x, flag, "100%", 'quote" \\ tab\t.')
    for i in omp.parallel_range(a.shape[0]):
        print("a[", i, "] =", a[i], a[i] > 0, sep="|", end=";\n")


def args():
    return np.array([-3, 0, 7, 120], np.int8), -(1 << 40), 2.5, True


CHILD = """
import sys
sys.path.insert(0, {tests!r})
import test_print
test_print.show.on({device})(*test_print.args())
"""


def test_print_goes_to_the_process_output(device):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show.py_func(*args())
    child = CHILD.format(tests=str(pathlib.Path(__file__).parent), device=device)
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    # the order of the parallel loop's lines is the device's
    assert sorted(r.stdout.splitlines()) == sorted(out.getvalue().splitlines())
    show.spec(args()).unit(omp.dialect_for("cuda"))     # built by test_cuda_build


def test_print_of_an_array_is_refused():
    @omp.target
    def whole(a):
        print("a:", a)

    with pytest.raises(CompileError, match=r"print\(\) of the array 'a': print its elements"):
        whole.spec((np.zeros(3),)).unit(omp.dialect_for("host"))
