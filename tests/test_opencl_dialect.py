"""The OpenCL dialect: address spaces, clear errors, both work-group paths on PoCL.

The compiler's own kernel tests (tests/test_kernels.py) run on OpenCL devices through
the ``device`` fixture; these tests cover what is particular to OpenCL.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygomp.kernels as omp
from pygomp.compiler import addrspace
from pygomp.errors import CompileError
from pygomp.runtime import devices

pytest.importorskip("pyopencl")
from pygomp.plugins.opencl import target as cltarget  # noqa: E402


from test_opencl_plugin import _opencl_device, dev  # noqa: E402,F401  (a fixture)


@pytest.fixture(scope="module")
def cldev(dev):
    return dev


@omp.declare_target
def total(a, n: int):
    s = a[0] - a[0]
    for j in range(n):
        s += a[j]
    return s


@omp.target(map={"x": "to", "out": "from"})
def shared_sum(x, out):
    for g in omp.gang(out.shape[0]):
        tile = omp.shared_array(8, np.float64)
        for w in omp.worker(8):
            tile[w] = x[g * 8 + w]
        omp.barrier()
        out[g] = total(tile, 8) + total(x, 1)


def test_helper_is_cloned_per_address_space(cldev):
    x = np.arange(32.0)
    out = np.zeros(4)
    src = shared_sum.source(x, out, target="opencl")
    fn = shared_sum.spec((x, out)).ir
    sigs = addrspace.signatures(fn)
    assert sorted(sigs["total"]) == ["g", "l"]
    assert "PYG_AS_local double *a" in src and "PYG_AS_global double *a" in src
    shared_sum.on(cldev.number)(x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 8).sum(1) + x[0])


@omp.target
def branches(x, n: int):
    for i in omp.parallel_range(x.shape[0]):
        k = i
        while k == n:
            k += 1
        if n == 0:
            x[i] = 1.0
        elif n == 1:
            x[i] = k


def test_conditions_have_no_extra_parentheses(cldev):
    """``if n == 0`` is ``if (n == 0)``: clang warns of ``if ((n == 0))``, and
    pyopencl shows such a warning to the user each time a cached binary is loaded."""
    x = np.zeros(4)
    src = branches.source(x, 1, target="opencl")
    assert "while (k == n) {" in src and "if (n == 0) {" in src \
        and "} else if (n == 1) {" in src, src
    branches.on(cldev.number)(x, 1)
    np.testing.assert_array_equal(x, np.arange(4.0) + (np.arange(4) == 1))


def test_space_mismatch_is_a_compile_error():
    x = np.arange(32.0)
    out = np.zeros(4)
    fn = shared_sum.spec((x, out)).ir
    call = next(n for n in __import__("pygomp.compiler.ir", fromlist=["ir"]).walk(fn.body)
                if type(n).__name__ == "HelperCall" and n.args[0].type.space == "local")
    glob = next(h for h in fn.helpers if h.params[0][1].space == "global")
    saved = call.fn
    call.fn = glob                  # a local array passed to the global clone
    try:
        with pytest.raises(CompileError, match="local array passed to the global parameter"):
            addrspace.check(fn)
    finally:
        call.fn = saved


def test_forbidden_conversions_name_the_python_line():
    def returns_shared(out):
        t = omp.shared_array(4, np.float64)
        return t

    def rebinds_shared(out):
        t = omp.shared_array(4, np.float64)
        u = t
        out[0] = u[0]
        u = out

    for f, what in ((returns_shared, "may return only a scalar"),
                    (rebinds_shared, "'u' already denotes another array")):
        k = omp.target(f)
        with pytest.raises(CompileError, match=what) as info:
            k.source(np.zeros(4), target="opencl")
        assert "test_opencl_dialect.py:" in str(info.value)


def test_float64_without_fp64_is_a_clear_error(cldev, monkeypatch):
    @omp.target
    def twice(y):
        for i in omp.parallel_range(y.shape[0]):
            y[i] = y[i] * 2.0

    plugin = cldev.plugin
    caps = plugin.device_capabilities(cldev.local)
    monkeypatch.setattr(plugin, "device_capabilities",
                        lambda dev: caps - {"fp64", "int64_atomics"})
    with pytest.raises(CompileError, match=r"uses float64 \(the device has no cl_khr_fp64\)"):
        twice.on(cldev.number)(np.ones(4))
    y = np.ones(4, np.float32)
    twice.on(cldev.number)(y)                      # float32 needs no fp64
    assert (y == 2).all()


def test_opencl_compiler_error_is_a_compile_error(cldev, monkeypatch):
    @omp.target
    def fine(y):
        for i in omp.parallel_range(y.shape[0]):
            y[i] = 1.0

    real = cltarget.OpenCLDialect.preamble
    monkeypatch.setattr(cltarget.OpenCLDialect, "preamble",
                        lambda self, fn: real(self, fn) + "\nthis is not C;\n")
    with pytest.raises(CompileError, match="OpenCL compilation of kernel .*fine.* failed"):
        fine.on(cldev.number)(np.ones(3))


def test_build_options_follow_the_device(cldev, monkeypatch):
    from pygomp.runtime.plugin import KernelInfo, Source
    plugin = cldev.plugin
    img = Source("", (KernelInfo("k", any_group_size=True),))
    opts = plugin.build_options(cldev.local, img)
    if plugin.devices()[cldev.local].kind == "cpu":
        assert "-D PYGOMP_DEVICE_CPU=1" in opts and "PYGOMP_SINGLE_ITEM_GROUPS" in opts
    caps = plugin.device_capabilities(cldev.local)
    monkeypatch.setattr(plugin, "device_capabilities",
                        lambda dev: caps | {"generic_address_space"})
    opts = plugin.build_options(cldev.local, img)
    assert "-D PYGOMP_GENERIC_ADDRESS_SPACE=1" in opts and "-cl-std=" in opts
    monkeypatch.setenv("PYGOMP_OPENCL_CPU_WORKGROUPS", "1")
    assert "SINGLE_ITEM" not in plugin.build_options(cldev.local, img)


def test_source_has_python_lines_and_no_generic_pointers():
    x = np.arange(10.0)
    src = omp.target(lambda_saxpy).source(2.0, x, x, target="opencl")
    assert '#line' in src and "test_opencl_dialect.py" in src
    assert "__kernel void" in src and "__global double *x" in src


@omp.target(map={"x": "to", "out": "from"})
def mixed_levels(x, out):
    m, p = x[0], x[0] - x[0] + 1
    for i in omp.worker(x.shape[0], reduction="max:m;*:p"):
        m = max(m, x[i])
        p *= 1 if x[i] % 5 else -1
    q, o = x[0], x[0] - x[0]
    for i in omp.vector(x.shape[0], reduction="min:q;|:o"):
        q = min(q, x[i])
        o |= x[i]
    out[0], out[1], out[2], out[3] = m, p, q, o


def lambda_saxpy(a: float, x, y):
    for i in omp.parallel_range(x.shape[0]):
        y[i] = a * x[i] + y[i]


WORKGROUPS = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {tests!r})
    import test_opencl_dialect as t
    import test_kernels as k
    from pygomp.runtime import devices
    dev = t._opencl_device().number
    x = np.arange(64.0); out = np.zeros(8)
    t.shared_sum.on(dev)(x, out)
    assert (out == x.reshape(8, 8).sum(1) + x[0]).all(), out
    r = np.random.default_rng(0).random(100003)
    assert abs(k.dot.on(dev)(r, r) - float(r @ r)) < 1e-6 * float(r @ r)
    A, v = np.random.default_rng(1).random((33, 70)), np.random.default_rng(2).random(70)
    y = np.zeros(33)
    k.matvec.on(dev)(A, v, y)
    assert np.allclose(y, A @ v)
    a = np.random.default_rng(3).random((19, 13)); b = np.zeros((13, 19))
    k.transpose.on(dev)(a, b)
    assert (b == a.T).all()
    xi = np.random.default_rng(4).integers(-50, 1000, 997)
    o = np.zeros(4, np.int64)
    t.mixed_levels.on(dev)(xi, o)
    ref = [xi.max(), (-1) ** int((xi % 5 == 0).sum()), xi.min(), np.bitwise_or.reduce(xi)]
    assert o.tolist() == ref, (o, ref)
    import test_language as lang
    x, y = np.zeros(6), np.zeros((6, 9))
    lang.bump_a_gang.on(dev)(x, y)                  # a helper's store: once a gang
    assert (x == np.arange(1.0, 7.0)).all() and (y.T == 2 * x).all(), (x, y)
    for f in lang.COLUMN_SUMS:                      # idle work-items' copies count once
        y = np.zeros(13)
        lang.omp.target(f, num_gangs=3, num_workers=4, vector_length=4).on(dev)(a, y)
        assert np.allclose(y, a.sum(0)), (f.__name__, y / a.sum(0))
    print("ok")
""")


def test_real_work_groups_with_local_trees(cldev, tmp_path):
    """On CPUs the plugin uses single-item groups; force real groups (trees, barriers)."""
    tests = os.path.dirname(__file__)
    env = dict(os.environ, PYGOMP_OPENCL_CPU_WORKGROUPS="1",
               PYGOMP_DEVICES="opencl", PYGOMP_CACHE_DIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", WORKGROUPS.format(tests=tests)], env=env,
                       capture_output=True, text=True, timeout=280)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]


@pytest.mark.slow
def test_language_and_regions_in_real_work_groups(cldev, tmp_path):
    """The multi-launch regions (a time loop around two parallel loops lost the second
    loop's stores in work-groups), continue before barriers and array reductions, with
    PoCL's real work-groups; the whole kernel suite passes this way too (slowly):
    PYGOMP_OPENCL_CPU_WORKGROUPS=1 PYGOMP_DEVICES=opencl pytest tests/test_kernels.py ..."""
    tests = os.path.dirname(__file__)
    env = dict(os.environ, PYGOMP_OPENCL_CPU_WORKGROUPS="1",
               PYGOMP_DEVICES="opencl", PYGOMP_CACHE_DIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        os.path.join(tests, "test_regions.py"),
                        os.path.join(tests, "test_language.py"),
                        "-k", "regions or loop or continue or reductions or while"],
                       env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0 and " passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]


def test_barriers_in_loops_whose_trips_differ_between_workers(cldev, tmp_path):
    env = dict(os.environ, PYGOMP_OPENCL_CPU_WORKGROUPS="1",
               PYGOMP_DEVICES="opencl", PYGOMP_CACHE_DIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        os.path.join(os.path.dirname(__file__), "test_language.py"),
                        "-k", "prefix_rows_of_workers"],
                       env=env, capture_output=True, text=True, timeout=280)
    assert p.returncode == 0 and " passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]


def test_image_requirements_checked_at_load(cldev, monkeypatch):
    from pygomp.runtime.plugin import KernelInfo, PluginError, Source
    plugin = cldev.plugin
    img = plugin.compile(cldev.local, Source("__kernel void needs64(double x) {}",
                                             (KernelInfo("needs64", args=("f64",),
                                                         requires=("fp64",)),)))
    monkeypatch.setattr(plugin, "device_capabilities", lambda dev: frozenset())
    with pytest.raises(PluginError, match="image needs64 needs fp64"):
        plugin.load_image(cldev.local, img, 1, 0)


SECOND = textwrap.dedent("""
    import json, sys, numpy as np
    sys.path.insert(0, {tests!r})
    import test_kernels as k
    from pygomp.plugins.opencl import build
    from pygomp.runtime import devices
    dev = [d for d in devices.all_devices() if d.plugin.name == "opencl"][0].number
    x = np.ones(1000)
    assert k.dot.on(dev)(x, x) == 1000.0
    print(json.dumps(build.stats))
""")


def test_second_process_runs_kernels_without_the_opencl_compiler(cldev, tmp_path):
    env = dict(os.environ, PYGOMP_CACHE_DIR=str(tmp_path))
    code = SECOND.format(tests=os.path.dirname(__file__))

    def child():
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=200)
        assert p.returncode == 0, p.stderr[-2000:]
        import json
        return json.loads(p.stdout.strip().splitlines()[-1])

    assert child() == {"builds": 1, "cache_hits": 0}
    assert child() == {"builds": 0, "cache_hits": 1}


def test_array_across_a_cut_is_a_clear_error():
    def keeps(x):
        acc = np.zeros(3)
        for i in omp.parallel_range(x.shape[0]):
            x[i] += 1.0
        x[0] = acc[0]

    with pytest.raises(CompileError, match="'acc' is created outside the parallel loops and "
                                           "used on both sides of a gang loop") as info:
        omp.target(keeps).source(np.zeros(4), target="opencl")
    assert "test_opencl_dialect.py:" in str(info.value)


def test_loads_no_store_reaches_are_read_before_the_loop():
    from test_language import row_updates
    src = row_updates.source(np.zeros((2, 2)), np.zeros((2, 2)), target="opencl")
    program, one = src.split("row_updates__f82_f82__small__one(")
    # the k loop's round is one launch, made twice (steps.py): each copy once, and once
    # in the one-group variant
    for s, copies in ((program, 2), (one, 1)):
        # (small arrays: 32-bit offsets, narrow.py)
        assert s.count("? A[(i) * ((pyg_index)A__s1) + k] : 0.0;") == copies      # the A loop's
        assert s.count("? B[(i) * ((pyg_index)B__s1) + k] : 0.0;") == copies      # the last loop's
        assert "(B[(i) * ((pyg_index)B__s1) + k] * 0.5" in s                  # read in every trip


@omp.target
def mul_add(a, b, c, out, chain):
    for i in omp.parallel_range(out.shape[0]):
        out[i] = a[i] * b[i] + c[i]
    s = c[0]
    for i in range(a.shape[0]):
        s = s * b[i] + a[i]
    chain[0] = s


def test_products_are_rounded_before_the_sum_as_in_python(cldev):
    """a * b + c rounds the product (OpenCL C would fuse it into one fma)."""
    n = 64
    e = 2.0 ** -30
    a = np.full(n, 1.0 + e)
    b = np.full(n, 1.0 - e)
    c = np.full(n, -1.0)
    out, chain = np.zeros(n), np.zeros(1)
    mul_add.on(cldev.number)(a, b, c, out, chain)
    assert (out == a * b + c).all() and out[0] == 0.0     # fused: -2**-60
    s = c[0]
    for x, y in zip(b, a):
        s = s * x + y
    assert chain[0] == s


@omp.target
def column_sums(a, out):
    for j in omp.parallel_range(a.shape[1]):
        s = 0
        for i in range(a.shape[0]):
            s = max(s, a[i, j] + i)
        out[j] = s


@pytest.mark.parametrize("shape", [(7, 1), (1, 7), (0, 3), (9, 5)])
def test_extents_of_one_and_zero(cldev, shape):
    """Extents reach the kernel through max(.., 0): rows of one element (a stride of
    1), one row and no rows index as numpy does."""
    a = (np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) * 7) % 5
    out = np.full(shape[1], -1, np.int32)
    column_sums.on(cldev.number)(a, out)
    want = [max([0] + [int(a[i, j]) + i for i in range(shape[0])]) for j in range(shape[1])]
    assert out.tolist() == want


@omp.target
def count_visits(out, rows):
    for i in omp.parallel_range(out.shape[0]):
        out[i] += 1
    for r in range(rows):                       # a looping program: fewer groups
        for i in omp.parallel_range(r, out.shape[0]):
            out[i] += 1


@pytest.mark.parametrize("n", [1, 15, 17, 50, 1001])
def test_every_iteration_runs_once_whatever_the_split(cldev, n):
    """The work-items' blocks cover the range exactly, when the range is shorter or
    not a multiple of the work-items."""
    out = np.zeros(n, np.int64)
    count_visits.on(cldev.number)(out, 3)
    assert out.tolist() == [1 + min(i + 1, 3) for i in range(n)]
