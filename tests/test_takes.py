"""The README's table of what kernels take from numpy: each row's example, compiled as
a kernel, computes what its ``py_func`` computes on every device (tests/test_callables.py
runs every function of the compiler's registry)."""
import importlib.util
import pathlib
import re

import numpy as np
import pytest


README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def table():
    """[(what, example)] of the rows between the README's takes markers."""
    text = README.read_text()
    body = text[text.index("<!-- takes -->"):text.index("<!-- /takes -->")]
    rows = [line for line in body.splitlines()[3:] if line.startswith("| ")]
    out = []
    for row in rows:
        what, example = (c.strip() for c in row.strip("|").rsplit("|", 1))
        out.append((what, example.strip("`")))
    return out


ROWS = table()
RECORD = np.dtype([("a", np.float64), ("b", np.int32), ("v", np.float64, (2,))])
KERNEL = """import cmath
import math

import numpy as np
import pygomp as omp


@omp.target
def k(x, y, A, B, M, z, w, xi, out, r):
{body}
"""


def inputs():
    rng = np.random.default_rng(5)
    v = lambda: 0.5 + rng.random(8)                                      # noqa: E731
    c = lambda: (rng.random(8) - 0.5) + 1j * (rng.random(8) - 0.5)      # noqa: E731
    r = np.zeros(8, RECORD)
    r["a"], r["b"], r["v"] = v(), rng.integers(-50, 50, 8), rng.random((8, 2))
    return [v(), v(), rng.random((8, 8)), rng.random((8, 8)), np.zeros((8, 8)), c(), c(),
            rng.integers(-50, 50, 8), np.zeros(8), r]


def kernel(example, path):
    body = "\n".join(f"    {s.strip()}" for s in example.split("; "))
    path.write_text(KERNEL.format(body=body))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def test_table_is_read():
    assert len(ROWS) >= 15 and all(w and e for w, e in ROWS)


@pytest.mark.parametrize("row", range(len(ROWS)),
                         ids=[re.sub(r"\W+", "-", w).strip("-")[:40] for w, _ in ROWS])
def test_each_entry_means_its_py_func(device, row, tmp_path):
    k = kernel(ROWS[row][1], tmp_path / f"takes_{row}.py")
    args, want = inputs(), inputs()
    with np.errstate(all="ignore"):
        k.py_func(*want)
    k.on(device)(*args)
    for name, a, b in zip("x y A B M z w xi out r".split(), args, want):
        for f in a.dtype.names or (None,):          # a record array: field by field
            np.testing.assert_allclose(a if f is None else a[f], b if f is None else b[f],
                                       rtol=1e-9, err_msg=f"{ROWS[row][1]}: {name} {f}")
