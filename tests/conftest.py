"""Shared fixtures (keep this file small).

- ``device``: parametrizes a test over every device number (offload devices and the
  initial device); a device whose plugin has no kernel compiler target is skipped with
  the reason.
- ``offload_device``: the same, without the initial device (separate memory only).
- The kernel disk cache lives in a fresh directory for the whole session
  (``PYGOMP_CACHE_DIR``), so kernels compile once a session and tests stay hermetic.
- ``SPECS`` records every kernel specialization the session makes; the tests of
  ``LAST`` run after all others (test_cuda_build.py compiles every kernel for CUDA).
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CACHE = None
SPECS = []
LAST = ("test_cuda_build.py",)


def pytest_configure(config):
    global _CACHE
    _CACHE = tempfile.mkdtemp(prefix="pygomp-test-cache-")
    os.environ["PYGOMP_CACHE_DIR"] = _CACHE
    from pygomp import kernels
    made = kernels.Spec.__init__

    def record(self, *args, **kw):
        made(self, *args, **kw)
        SPECS.append(self)
    kernels.Spec.__init__ = record


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name in LAST)


def pytest_unconfigure(config):
    if _CACHE:
        shutil.rmtree(_CACHE, ignore_errors=True)


def _device_params(offload_only):
    from pygomp.runtime import devices
    out = []
    for d in devices.all_devices():
        if offload_only and d.is_initial:
            continue
        name = "initial" if d.is_initial else d.plugin.name
        marks = ()
        try:
            d.plugin.target_hooks()
        except Exception as e:          # noqa: BLE001  (any failure: no compiler target)
            marks = pytest.mark.skip(reason=f"device {d.number} ({name}) has no kernel "
                                            f"compiler target: {type(e).__name__}: {e}")
        out.append(pytest.param(d.number, id=f"dev{d.number}-{name}", marks=marks))
    return out


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", _device_params(False))
    elif "offload_device" in metafunc.fixturenames:
        metafunc.parametrize("offload_device", _device_params(True))
