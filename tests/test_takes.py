"""The README's table of what kernels take from numpy: each row's example, compiled as
a kernel, computes what its ``py_func`` computes on every device; and every function
the compiler's tables know is in the table."""
import builtins
import cmath
import importlib.util
import math
import pathlib

import numpy as np
import pytest

from pygomp.compiler.callables import ABS, COMPLEX, CUMULATIVE, MATH, METHODS, MINMAX, REDUCE

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def table():
    """[(what, example)] of the rows between the README's takes markers."""
    text = README.read_text()
    body = text[text.index("<!-- takes -->"):text.index("<!-- /takes -->")]
    rows = [line for line in body.splitlines() if line.startswith("| `")]
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


@pytest.mark.parametrize("row", range(len(ROWS)), ids=[w.split()[0].strip("`")
                                                       for w, _ in ROWS])
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


def spelled(f):
    """How the table writes function ``f``."""
    if f is np.linalg.norm:
        return "np.linalg.norm"
    name = f.__name__
    for prefix, mod in (("np.", np), ("math.", math), ("cmath.", cmath), ("", builtins)):
        if getattr(mod, name, None) is f:
            return prefix + name
    raise AssertionError(f)


def test_every_function_the_compiler_knows_is_listed():
    text = " ".join(w for w, _ in ROWS)
    known = set(MATH) | set(MINMAX) | set(ABS) | set(COMPLEX) | set(REDUCE) | set(CUMULATIVE) \
        | {np.where, np.clip, np.outer, np.linalg.norm, np.zeros, np.empty}
    missing = sorted(spelled(f) for f in known if f"`{spelled(f)}`" not in text)
    missing += [f".{m}()" for m in METHODS if f"`.{m}()`" not in text]
    assert not missing, f"README's table lacks {missing}"
