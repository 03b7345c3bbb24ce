"""The CUDA plugin.  Without a GPU: it loads, finds no device and says why, costs no
cupy import, and arrays in GPU memory are refused by other devices with a clear error;
NVRTC's errors point at the Python line; a kernel's program orders its launches.  On
every device: what a kernel of several launches must keep (a block-wide reduction each
gang makes, gang loops in turn, arrays of a thread and of a gang written by redundant
code).  With a GPU (tests that skip here with the plugin's
reason): CuPy and DLPack arrays used in place, images cached for a second process, a
task chain on the stream, large copies, launch geometry."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp
from pygomp import CompileError
from pygomp.runtime import cache, devices, mapping, tasks

nvrtc = pytest.importorskip("pygomp.plugins.cuda.nvrtc")


def cuda_plugin():
    p = devices.plugins().get("cuda")
    if p is None or isinstance(p, Exception):
        pytest.skip(f"the CUDA plugin is not installed: {p}")
    return p


@pytest.fixture
def gpu():
    """The first CUDA device's number (skips with the plugin's reason without one)."""
    p = cuda_plugin()
    found = [d.number for d in devices.all_devices()
             if not d.is_initial and d.plugin is p]
    if not found:
        pytest.skip(f"no CUDA device: {p.unavailable or 'PYGOMP_DEVICES leaves it out'}")
    return found[0]


@omp.target(map={"x": "to", "y": "tofrom"})
def saxpy(a: float, x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@omp.target
def add_one(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] += 1.0


# -- without a GPU -------------------------------------------------------------------

def test_no_gpu_no_devices_and_the_reason(capsys):
    p = cuda_plugin()
    if p.num_devices():
        pytest.skip("this machine has a GPU")
    assert p.unavailable                    # e.g. "no CUDA driver (libcuda.so.1: ...)"
    from pygomp.__main__ import main
    assert main(["info"]) == 0
    assert f"no devices here: {p.unavailable}" in capsys.readouterr().out


def test_discovery_imports_no_cupy():
    code = ("import sys, pygomp; from pygomp.runtime import devices; devices.all_devices(); "
            "print('cupy' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


@omp.target(num_gangs=5, num_workers=4, vector_length=8)
def scale_by_total(x, y):
    """A block-wide reduction every gang makes for itself, then a gang loop using it."""
    s = 0.0
    for i in omp.worker(x.shape[0], reduction="+:s"):
        s += x[i]
    for i in omp.gang(x.shape[0]):
        y[i] = x[i] / s


@omp.target(num_gangs=7, num_workers=2, vector_length=4)
def steps(x, y, t: int):
    """Gang loops one after another in a sequential loop, and a gang reduction of what
    the last one stored (each gang loop reads what the one before it stored)."""
    n = x.shape[0]
    for _ in range(t):
        for i in omp.gang(n):
            for j in omp.vector(1):
                y[i] = x[(i + 1) % n] + 1.0
        for i in omp.parallel_range(n):
            x[i] = y[(i + 3) % n]
    s = 0.0
    for i in omp.parallel_range(n, reduction="+:s"):
        s += x[i]
    return s


@omp.target(num_gangs=3, num_workers=2, vector_length=4)
def own_arrays(x, y):
    """Arrays written by code that runs redundantly: a thread's own, a gang's shared."""
    t = np.zeros(2)
    t[1] = 3.0
    for g in omp.gang(x.shape[0] // 8):
        s = omp.shared_array(2, np.float64)
        s[0] = x[g * 8]
        for w in omp.worker(8):
            y[g * 8 + w] = x[g * 8 + w] * t[1] + s[0]


def test_gang_joins(device):
    x = np.arange(64.0)
    y = np.zeros_like(x)
    own_arrays.on(device)(x, y)
    np.testing.assert_array_equal(y, 3 * x + np.repeat(x[::8], 8))

    x = np.arange(1.0, 1001.0)
    y = np.zeros_like(x)
    scale_by_total.on(device)(x, y)
    np.testing.assert_allclose(y, x / x.sum())
    want = x.copy()
    for _ in range(3):
        want = np.roll(np.roll(want, -1) + 1.0, -3)
    got = steps.on(device)(x, y, 3)
    np.testing.assert_array_equal(x, want)
    assert got == want.sum()


class CudaArrayLike:
    """What CuPy, Numba and PyTorch arrays show of themselves (never dereferenced here)."""
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f8", "data": (0x7f0000000000, False),
                                "version": 3, "strides": None}


class DLPackLike:
    def __dlpack_device__(self):
        return (2, 0)                       # kDLCUDA, GPU 0

    def __dlpack__(self, stream=None):
        raise AssertionError("not to be called")


@pytest.mark.parametrize("what", [CudaArrayLike, DLPackLike])
def test_gpu_arrays_are_refused_by_other_devices(device, what):
    d = devices.resolve(device)
    if d.plugin.name == "cuda":
        pytest.skip("a CUDA device uses them (test_cupy_array_in_place)")
    where = "the initial device" if d.is_initial else f"device {device} \\({d.plugin.name}\\)"
    with pytest.raises(TypeError, match=rf"^add_one: argument 'x' \({what.__name__}\) cannot "
                                        rf"be used on {where}: it is in GPU memory"):
        add_one.on(device)(what())


def test_nvrtc_errors_point_at_the_python_line(tmp_path):
    try:
        nvrtc.version()
    except nvrtc.NvrtcMissing as e:
        pytest.skip(str(e))
    py = tmp_path / "k.py"
    py.write_text("a = 1\nb = undefined_name\n")
    src = f'#line 2 "{py}"\nextern "C" __global__ void k() {{ undefined_name(); }}\n'
    with pytest.raises(CompileError) as e:
        nvrtc.compile(src, "compute_80", name="k")
    assert (e.value.file, e.value.line) == (str(py), 2)
    assert "b = undefined_name" in str(e.value)


def test_the_contracts_cuda_source_builds():
    """The hand-written three-entry kernel test_contract.py runs on a GPU."""
    try:
        nvrtc.version()
    except nvrtc.NvrtcMissing as e:
        pytest.skip(str(e))
    from test_contract import CUDA_SOURCE
    from pygomp.plugins.cuda.plugin import OPTIONS
    ptx = nvrtc.compile(CUDA_SOURCE, f"compute_{min(nvrtc.supported_archs())}", OPTIONS)
    assert all(f".entry {e}(" in ptx.decode() for e in ("mean", "center", "report"))


def test_images_for_the_devices_own_capability():
    try:
        archs = nvrtc.supported_archs()
    except nvrtc.NvrtcMissing as e:
        pytest.skip(str(e))
    assert nvrtc.target_for(90) == "sm_90"                  # a cubin for a known GPU
    assert nvrtc.target_for(max(archs) + 1) == f"compute_{max(archs)}"   # PTX for a newer
    with pytest.raises(CompileError, match="cannot compile for compute capability 2.0"):
        nvrtc.target_for(20)


# -- with a GPU -------------------------------------------------------------------------

def test_info_names_the_gpu(gpu, capsys):
    from pygomp.__main__ import main
    main(["info"])
    d = devices.resolve(gpu)
    out = capsys.readouterr().out
    assert f"{gpu}: cuda:{d.local} gpu: {d.info.name}" in out
    assert f"compute_capability: {d.info.properties['compute_capability']}" in out


def test_cupy_array_in_place(gpu):
    import cupy
    x = cupy.arange(1000, dtype=cupy.float64)
    y = cupy.ones(1000)
    before = y.data.ptr
    saxpy.on(gpu)(2.0, x, y)
    assert y.data.ptr == before
    np.testing.assert_allclose(cupy.asnumpy(y), 2 * np.arange(1000.0) + 1)
    assert not mapping.is_present(devices.resolve(gpu), y.data.ptr)   # nothing was mapped


def test_dlpack_array_in_place(gpu):
    import cupy
    x = cupy.zeros(100)

    class OnlyDLPack:           # a producer that speaks DLPack only
        def __dlpack__(self, **kw):
            return x.__dlpack__(**kw)

        def __dlpack_device__(self):
            return x.__dlpack_device__()

    add_one.on(gpu)(OnlyDLPack())
    assert float(x.sum()) == 100.0


def test_cupy_array_of_another_gpu(gpu):
    import cupy
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one GPU")
    d = devices.resolve(gpu)
    with cupy.cuda.Device(1 - d.local):
        x = cupy.zeros(10)
    with pytest.raises(ValueError, match=rf"argument 'x' \(ndarray\) cannot be used on device "
                                         rf"{gpu} \(cuda\): it is in the memory of GPU"):
        add_one.on(gpu)(x)


def test_cached_image_loads_in_a_second_process(gpu, tmp_path):
    code = (f"import numpy as np, pygomp.kernels as omp\n"
            f"from pygomp.runtime import cache\n"
            f"@omp.target\n"
            f"def inc(x):\n"
            f"    for i in omp.parallel_range(x.shape[0]):\n"
            f"        x[i] += 1.0\n"
            f"x = np.zeros(5); inc.on({gpu})(x); assert (x == 1).all()\n"
            f"print(cache.target_stats('cuda'))\n")
    env = dict(os.environ, PYGOMP_CACHE_DIR=str(tmp_path))
    program = tmp_path / "inc.py"           # kernels need a file: python -c keeps no source
    program.write_text(code)
    runs = [subprocess.run([sys.executable, str(program)], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    assert "'builds': 1" in runs[0].stdout
    assert "'builds': 0, 'cache_hits': 1" in runs[1].stdout


def test_task_chain_runs_on_the_stream(gpu):
    x = np.zeros(4096)
    threads = threading.active_count()
    with pygomp.target_data(gpu, tofrom=[x]):
        k = add_one.on(gpu)
        k(x)
        chain = [k(x, nowait=True, depend={"inout": [x]}) for _ in range(50)]
        assert threading.active_count() == threads          # no thread waits per task
        assert all(t._future is None for t in chain)         # started on the stream
        tasks.taskwait()
    assert (x == 51).all()


def test_large_copies_through_staging(gpu):
    from pygomp.plugins.cuda.plugin import CHUNK
    n = (5 * CHUNK + 24) // 8 + 3
    x = np.random.default_rng(2).random(n)
    y = x.copy()
    add_one.on(gpu)(y)
    np.testing.assert_array_equal(y, x + 1)


@omp.target
def geometry(out):
    for i in omp.parallel_range(1):
        out[0] = omp.num_gangs()
        out[1] = omp.num_workers()
        out[2] = omp.vector_length()


@pytest.mark.parametrize("launch, want", [
    ((0, 0, 0), (None, 8, 32)), ((6, 3, 0), (6, 3, 32)), ((5, 2, 48), (5, 2, 32)),
    ((5, 0, 8), (5, 32, 8)), ((1, 64, 32), (1, 32, 32))])
def test_launch_geometry(gpu, launch, want):
    d = devices.resolve(gpu)
    out = np.zeros(3, np.int64)
    omp.target(geometry.py_func, num_gangs=launch[0], num_workers=launch[1],
               vector_length=launch[2]).on(gpu)(out)
    sms = d.info.properties["multiprocessors"]
    if want[0] is None:                     # as many gangs as stay resident
        assert out[0] >= sms and out[0] % sms == 0
        want = (out[0],) + want[1:]
    assert tuple(out) == want


def test_reduction_without_cooperative_launch_beyond_resident_blocks(gpu):
    @omp.target(num_gangs=100000, num_workers=1, vector_length=32)
    def total(x):
        s = 0.0
        for i in omp.parallel_range(x.shape[0], reduction="+:s"):
            s += x[i]
        return s
    x = np.ones(3_200_001)
    stats = cache.target_stats("cuda")
    before = stats["builds"] + stats["cache_hits"]
    assert total.on(gpu)(x) == x.size
    assert stats["builds"] + stats["cache_hits"] == before + 1    # made for the GPU
