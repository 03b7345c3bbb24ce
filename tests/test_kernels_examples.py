"""The examples (examples/*.py) on every device, at small sizes, against numpy."""
import importlib.util
import pathlib

import numpy as np
import pytest


ROOT = pathlib.Path(__file__).resolve().parent.parent / "examples"
NAMES = ["saxpy", "dot", "pi", "matvec", "jacobi", "histogram", "transpose"]
SMALL = {"saxpy": 100003, "dot": 100003, "pi": 1 << 16, "matvec": 123, "jacobi": 67,
         "histogram": 50000, "transpose": 77}


def load(name):
    spec = importlib.util.spec_from_file_location(f"examples.{name}", ROOT / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_mods = {}


@pytest.mark.parametrize("name", NAMES)
def test_example(device, name):
    mod = _mods.get(name) or _mods.setdefault(name, load(name))
    assert mod.NAME == name and mod.SIZE > 0
    result, reference = mod.run(device, SMALL[name])
    assert np.allclose(result, reference, rtol=1e-4, atol=1e-6)
