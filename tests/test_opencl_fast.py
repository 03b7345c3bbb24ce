"""Single launches from C (plugins/opencl/fast.py) on PoCL: the same results as the
Python path, a kernel's record dropped whenever what it launches with may change."""
import threading

import numpy as np
import pytest

import pygomp as omp
from pygomp.runtime import devices, mapping
from pygomp.runtime.plugin import PluginError

pytest.importorskip("pyopencl")
from pygomp.plugins.opencl import fast  # noqa: E402


@omp.target
def bump(x, v: float):
    for i in omp.parallel_range(x.shape[0]):
        x[i] += v


@pytest.fixture(scope="module")
def dev():
    for d in devices.all_devices():
        if d.plugin.name == "opencl":
            if not d.plugin.fast_path():
                pytest.skip("no C compiler or Python headers for the fast launch")
            return d
    pytest.skip("no OpenCL device")


def address(dev, kernel, *args):
    return mapping.function_address(dev, kernel.spec(args).symbol.address)


def test_the_plugin_launches_through_the_runner(dev):
    assert isinstance(dev.plugin.run_async, fast._state["module"][0].Runner)
    x = np.zeros(5)
    with omp.target_data(dev.number, tofrom=[x]):
        bump.on(dev.number)(x, 1.0)
        fn = address(dev, bump, x, 1.0)
        k = dev.plugin._kernels[fn]
        assert dev.plugin._records[fn][:3] == (dev.local, k.last_words, (0, 0, 0))
        bump.on(dev.number)(x, 2.0)     # other words: the Python path sets them
        assert dev.plugin._records[fn][1] == k.last_words
    np.testing.assert_array_equal(x, 3.0)


def test_a_freed_buffer_drops_every_record(dev):
    """A new array mapped where a freed one was: the launch must see the new buffer."""
    call = bump.on(dev.number)
    for k in range(4):
        x = np.full(1000, float(k))
        with omp.target_data(dev.number, tofrom=[x]):
            call(x, 1.0)
            assert dev.plugin._records
            call(x, 1.0)                # the record's words: from C
        assert not dev.plugin._records  # the exit freed x's buffer
        np.testing.assert_array_equal(x, k + 2.0)


def test_words_of_a_record_launch_again_from_c(dev):
    x = np.zeros(8)
    with omp.target_data(dev.number, tofrom=[x]):
        bump.on(dev.number)(x, 1.0)
        fn = address(dev, bump, x, 1.0)
        words = list(dev.plugin._records[fn][1])
        for _ in range(10):
            dev.plugin.run_async(dev.local, fn, words).wait()            # equal words
            dev.plugin.run_async(dev.local, fn, tuple(words), (0, 0, 0), ()).wait()
    np.testing.assert_array_equal(x, 21.0)


def test_wrong_calls_get_the_python_paths_errors(dev):
    x = np.zeros(4)
    bump.on(dev.number)(x, 1.0)
    fn = address(dev, bump, x, 1.0)
    with pytest.raises(PluginError, match=r"run: kernel bump takes 3 argument words, got 2"):
        dev.plugin.run_async(dev.local, fn, [1, 2])
    with pytest.raises(PluginError, match=r"run: no kernel is loaded at 0x3039"):
        dev.plugin.run_async(dev.local, 0x3039, [1, 2, 3])


def test_threads_launch_one_kernel_with_their_own_arrays(dev):
    n, rounds = 4, 50
    xs = [np.zeros(100) for _ in range(n)]
    errors = []

    def work(x):
        try:
            for _ in range(rounds):
                bump.on(dev.number)(x, 1.0)
        except Exception as e:          # reported below
            errors.append(e)
    with omp.target_data(dev.number, tofrom=xs):
        ts = [threading.Thread(target=work, args=(x,)) for x in xs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors
    for x in xs:
        np.testing.assert_array_equal(x, float(rounds))


def test_the_python_path_alone_gives_the_same(dev, monkeypatch):
    monkeypatch.delattr(dev.plugin, "run_async")       # the base's, not the runner
    monkeypatch.setattr(dev.plugin, "fast", False)
    x = np.zeros(6)
    f = omp.target(bump.py_func)
    for v in (1.0, 2.0, 2.0):
        f.on(dev.number)(x, v)
    np.testing.assert_array_equal(x, 5.0)
