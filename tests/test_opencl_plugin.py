"""The OpenCL plugin on a real device (PoCL on the CPU): memory, copies, images, cache."""
import ctypes
import os
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from pygomp.runtime import devices, images, kinds, mapping
from pygomp.runtime.images import HostSymbol, OffloadImage
from pygomp.runtime.mapping import Item
from pygomp.runtime.plugin import KernelInfo, PluginError, Source

pytest.importorskip("pyopencl")
from pygomp.plugins.opencl import build  # noqa: E402
from pygomp.plugins.opencl.plugin import OpenCLPlugin  # noqa: E402


def _opencl_device():
    for d in devices.all_devices():
        if d.plugin.name == "opencl":
            return d
    return None


@pytest.fixture(scope="module")
def dev():
    d = _opencl_device()
    if d is None:
        pytest.skip("no OpenCL device (set PYGOMP_DEVICES or install pyopencl[pocl])")
    d.ensure_init()
    return d


@pytest.fixture(scope="module")
def plugin(dev):
    return dev.plugin


def f32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


SAXPY = """\
#line 1 "saxpy.py"
__kernel void saxpy(float a, __global float *x, ulong xo, __global float *y, ulong yo, int n)
{
    x = (__global float *)((__global char *)x + xo);
    y = (__global float *)((__global char *)y + yo);
    int stride = get_global_size(0) * get_global_size(1);
    for (int i = get_global_id(0) + get_global_id(1) * get_global_size(0); i < n; i += stride)
        y[i] += a * x[i];
}

__kernel void scalars(__global ulong *out, ulong oo, double d, float f, int i, long l,
                      uchar b)
{
    out = (__global ulong *)((__global char *)out + oo);
    if (get_global_id(0) == 0 && get_global_id(1) == 0) {
        ((__global double *)out)[0] = d;
        ((__global float *)out)[2] = f;
        ((__global long *)out)[2] = i;
        ((__global long *)out)[3] = l;
        out[4] = b;
    }
}

__kernel void geometry(__global int *out, ulong oo, __local double *scratch)
{
    out = (__global int *)((__global char *)out + oo);
    int lid = get_local_id(0) + get_local_id(1) * get_local_size(0);
    scratch[lid] = lid;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_global_id(0) == 0 && get_global_id(1) == 0) {
        int n = get_local_size(0) * get_local_size(1);
        out[0] = get_num_groups(1);
        out[1] = get_local_size(1);
        out[2] = get_local_size(0);
        out[3] = (int)scratch[n - 1];
    }
}
"""

FUNCS = (KernelInfo("saxpy", args=("f32", "p", "p", "i32")),
         KernelInfo("scalars", args=("p", "f64", "f32", "i32", "i64", "u8")),
         KernelInfo("geometry", args=("p",), tree_bytes=8))


@pytest.fixture(scope="module")
def table(dev):
    """A hand-written image registered through the runtime's descriptor tables."""
    syms = [HostSymbol(k.name) for k in FUNCS]
    t = OffloadImage(functions=[s.address for s in syms], variables=[],
                     images=(dev.plugin.compile(dev.local, Source(SAXPY, FUNCS)),),
                     name="opencl-test", keepalive=syms)
    images.register(t)
    yield {k.name: s.address for k, s in zip(FUNCS, syms)}
    images.unregister(t)


GENERIC = """
void store(int *p, int v) { *p = v; }
__kernel void k(__global int *x) { store(x, 1); }
"""
FP64 = "__kernel void k(__global double *x) { x[0] = x[0] * 0.5; }"


def _builds(cldev, source, options=""):
    import pyopencl as cl
    try:
        cl.Program(cl.Context([cldev]), source).build(options=options)
        return True
    except cl.Error:
        return False


def test_devices_and_selection():
    p = OpenCLPlugin()
    infos = p.devices()
    if not infos:
        pytest.skip("no OpenCL device")
    for info in infos:
        assert info.kind in ("cpu", "gpu", "accelerator")
        assert info.properties["opencl_c_version"].startswith("OpenCL C")
        assert info.memory > 0
    pocl = p.select("pocl")
    if pocl:
        assert p.select("POCL:0") == pocl[:1]
    assert p.select("no-such-device") == []
    for i, info in enumerate(infos):        # what the plugin claims, checked by compiling
        cldev, caps = p.cl_device(i)[0], p.device_capabilities(i)
        std = info.properties["cl_std"]
        if "generic_address_space" in caps:
            assert std in ("CL2.0", "CL3.0") and _builds(cldev, GENERIC, f"-cl-std={std}")
        else:
            assert std == "CL1.2" and not _builds(cldev, GENERIC, "-cl-std=CL1.2")
        assert ("fp64" in caps) == _builds(cldev, FP64)


def test_alloc_free_and_addresses(plugin, dev):
    a = plugin.alloc(dev.local, 100)
    b = plugin.alloc(dev.local, 0)
    c = plugin.alloc(dev.local, 1 << 20)
    assert len({a, b, c}) == 3 and a and b and c
    assert not (a <= c < a + 100) and not (c <= a < c + (1 << 20))
    plugin.free(dev.local, b)
    with pytest.raises(PluginError, match="free"):
        plugin.free(dev.local, b)                 # freed twice
    with pytest.raises(PluginError, match="free"):
        plugin.free(dev.local, a + 8)             # not the start of a buffer
    d = plugin.alloc(dev.local, 100)
    assert d not in (a, b, c)                     # ranges are not reused
    for x in (a, c, d):
        plugin.free(dev.local, x)


def test_copies_with_offsets(plugin, dev):
    n = 1000
    x = np.arange(n, dtype=np.float64)
    a = plugin.alloc(dev.local, x.nbytes)
    b = plugin.alloc(dev.local, x.nbytes)
    try:
        plugin.host2dev(dev.local, a, x.ctypes.data, x.nbytes)
        plugin.host2dev(dev.local, a + 80, x.ctypes.data + 8 * 500, 8 * 10)   # x[10:20] = x[500:510]
        y = np.zeros(n)
        plugin.dev2host(dev.local, y.ctypes.data, a, x.nbytes)
        want = x.copy()
        want[10:20] = x[500:510]
        assert np.array_equal(y, want)
        plugin.dev2dev(dev.local, b + 8 * 3, a + 8 * 100, 8 * 50)            # b[3:53] = a[100:150]
        z = np.full(60, -1.0)
        plugin.dev2host(dev.local, z.ctypes.data, b + 8 * 3, 8 * 50)
        assert np.array_equal(z[:50], want[100:150])
        plugin.dev2dev(dev.local, a + 8, a, 8 * 100)                          # overlapping
        plugin.dev2host(dev.local, y.ctypes.data, a, 8 * 101)
        assert np.array_equal(y[1:101], want[:100])
        with pytest.raises(PluginError, match=r"past the end"):
            plugin.dev2host(dev.local, y.ctypes.data, a + 8, x.nbytes)
        with pytest.raises(PluginError, match=r"dev2host .* bytes"):
            plugin.dev2host(dev.local, y.ctypes.data, 12345, 8)
    finally:
        plugin.free(dev.local, a)
        plugin.free(dev.local, b)


def test_run_through_the_runtime(dev, table):
    n = 1001
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    items = [Item(f32(2.5), 0, kinds.FIRSTPRIVATE_INT),
             Item(x.ctypes.data, x.nbytes, kinds.TO, x),
             Item(y.ctypes.data, y.nbytes, kinds.TOFROM, y),
             Item(n, 0, kinds.FIRSTPRIVATE_INT)]
    mapping.target(dev, table["saxpy"], items, launch=(3, 2, 16))
    assert np.array_equal(y, 1 + 2.5 * x)
    mapping.target(dev, table["saxpy"], items)                       # default geometry
    assert np.array_equal(y, 1 + 5 * x)


def test_view_is_a_subrange_of_its_parent(dev, table):
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, dtype=np.float32)
    mapping.enter_data(dev, [Item(x.ctypes.data, x.nbytes, kinds.TO, x),
                             Item(y.ctypes.data, y.nbytes, kinds.TO, y)])
    try:
        xv, yv = x[10:20], y[50:60]
        mapping.target(dev, table["saxpy"], [
            Item(f32(1.0), 0, kinds.FIRSTPRIVATE_INT),
            Item(xv.ctypes.data, xv.nbytes, kinds.TO, xv),
            Item(yv.ctypes.data, yv.nbytes, kinds.TOFROM, yv),
            Item(10, 0, kinds.FIRSTPRIVATE_INT)], launch=(1, 1, 4))
        assert not y.any()                              # still mapped: nothing copied back
        mapping.update(dev, [Item(y.ctypes.data, y.nbytes, kinds.FROM)])
        assert np.array_equal(y[50:60], x[10:20]) and not y[:50].any() and not y[60:].any()
    finally:
        mapping.exit_data(dev, [Item(x.ctypes.data, x.nbytes, kinds.RELEASE),
                                Item(y.ctypes.data, y.nbytes, kinds.RELEASE)])


def test_missing_from_leaves_a_stale_host_value(dev, table, plugin):
    import pyopencl as cl
    x = np.ones(64, dtype=np.float32)
    y = np.zeros(64, dtype=np.float32)
    mapping.enter_data(dev, [Item(y.ctypes.data, y.nbytes, kinds.TO, y)])
    try:
        mapping.target(dev, table["saxpy"], [
            Item(f32(3.0), 0, kinds.FIRSTPRIVATE_INT),
            Item(x.ctypes.data, x.nbytes, kinds.TO, x),
            Item(y.ctypes.data, y.nbytes, kinds.TO, y),      # no from
            Item(64, 0, kinds.FIRSTPRIVATE_INT)])
        assert not y.any()                                    # stale on the host
        addr = dev.map.find(y.ctypes.data, y.ctypes.data + y.nbytes).dev_start
        buf, off, _ = plugin._space.resolve(addr)
        seen = np.empty_like(y)
        cl.enqueue_copy(plugin.cl_device(dev.local)[2], seen, buf, src_offset=off)
        assert np.array_equal(seen, np.full(64, 3.0, np.float32))   # fresh on the device
    finally:
        mapping.exit_data(dev, [Item(y.ctypes.data, y.nbytes, kinds.DELETE)])
    assert not y.any()


def test_scalar_words(dev, table):
    out = np.zeros(5, dtype=np.uint64)
    mapping.target(dev, table["scalars"], [
        Item(out.ctypes.data, out.nbytes, kinds.FROM, out),
        Item(f64(-1.25e300), 0, kinds.FIRSTPRIVATE_INT),
        Item(f32(0.1), 0, kinds.FIRSTPRIVATE_INT),
        Item(-7 & (2**64 - 1), 0, kinds.FIRSTPRIVATE_INT),
        Item(-(2**40), 0, kinds.FIRSTPRIVATE_INT),
        Item(300, 0, kinds.FIRSTPRIVATE_INT)], launch=(1, 1, 1))
    assert out[:1].view(np.float64)[0] == -1.25e300
    assert out[1:2].view(np.float32)[0] == np.float32(0.1)
    assert out[2:4].view(np.int64).tolist() == [-7, -(2**40)]
    assert out[4] == 300 & 0xFF


def test_launch_geometry_and_local_memory(dev, table, plugin):
    out = np.zeros(4, dtype=np.int32)
    item = Item(out.ctypes.data, out.nbytes, kinds.FROM, out)
    mapping.target(dev, table["geometry"], [item], launch=(5, 3, 8))
    assert out.tolist() == [5, 3, 8, 23]
    limit = plugin.devices()[dev.local].properties["max_work_group_size"]
    mapping.target(dev, table["geometry"], [item], launch=(2, 64, limit))
    g, w, v, last = out.tolist()
    assert g == 2 and w * v <= limit and last == w * v - 1


def test_run_async_and_threads(dev, table, plugin):
    n = 4096
    errors = []

    def work(seed):
        try:
            x = np.full(n, seed, dtype=np.float32)
            y = np.zeros(n, dtype=np.float32)
            for _ in range(10):
                mapping.target(dev, table["saxpy"], [
                    Item(f32(1.0), 0, kinds.FIRSTPRIVATE_INT),
                    Item(x.ctypes.data, x.nbytes, kinds.TO, x),
                    Item(y.ctypes.data, y.nbytes, kinds.TOFROM, y),
                    Item(n, 0, kinds.FIRSTPRIVATE_INT)])
            assert np.array_equal(y, np.full(n, 10.0 * seed, np.float32))
        except Exception as e:       # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

    fn = mapping.function_address(dev, table["saxpy"])
    x = np.ones(n, dtype=np.float32)
    a, b = plugin.alloc(dev.local, x.nbytes), plugin.alloc(dev.local, x.nbytes)
    try:
        plugin.host2dev(dev.local, a, x.ctypes.data, x.nbytes)
        plugin.host2dev(dev.local, b, x.ctypes.data, x.nbytes)
        e1 = plugin.run_async(dev.local, fn, [f32(1.0), a, b, n])
        e2 = plugin.run_async(dev.local, fn, [f32(1.0), a, b, n], wait_for=[e1])
        e2.wait()
        plugin.synchronize(dev.local)
        y = np.empty_like(x)
        plugin.dev2host(dev.local, y.ctypes.data, b, x.nbytes)
        assert np.array_equal(y, np.full(n, 3.0, np.float32))
    finally:
        plugin.free(dev.local, a)
        plugin.free(dev.local, b)


def test_launches_set_the_arguments_again_only_when_the_words_change(dev, table, plugin):
    """The launcher's words (a tuple, kept) and run_async's (a list) take turns on one
    kernel: each launch uses its own words; wrong calls say what is wrong."""
    fn = mapping.function_address(dev, table["saxpy"])
    n = 256
    x = np.ones(n, dtype=np.float32)
    a, b, c = (plugin.alloc(dev.local, x.nbytes) for _ in range(3))
    try:
        for addr in (a, b, c):
            plugin.host2dev(dev.local, addr, x.ctypes.data, x.nbytes)
        prepare, start = plugin.launcher(dev.local, fn, (0, 0, 0), 4)
        words = prepare([f32(1.0), a, b, n])
        start(words)
        start(words)                                            # b: 1 + 2
        plugin.run_async(dev.local, fn, [f32(2.0), a, c, n]).wait()     # c: 1 + 2
        start(words)                                            # b: 4
        plugin.run_async(dev.local, fn, [f32(2.0), a, c, n]).wait()     # c: 5
        got = np.empty_like(x)
        plugin.dev2host(dev.local, got.ctypes.data, b, x.nbytes)
        assert np.array_equal(got, np.full(n, 4.0, np.float32))
        plugin.dev2host(dev.local, got.ctypes.data, c, x.nbytes)
        assert np.array_equal(got, np.full(n, 5.0, np.float32))
        with pytest.raises(PluginError, match="takes 4 argument words, got 3"):
            plugin.run_async(dev.local, fn, [f32(1.0), a, b])
        with pytest.raises(PluginError, match="no kernel is loaded at 0x1234"):
            plugin.run_async(dev.local, 0x1234, [f32(1.0), a, b, n])
        with pytest.raises(PluginError, match="run: no device 99"):
            plugin.run_async(99, fn, [f32(1.0), a, b, n])
    finally:
        plugin.synchronize(dev.local)
        for addr in (a, b, c):
            plugin.free(dev.local, addr)


def test_a_kernel_failing_on_the_device_is_a_plugin_error(dev, table, plugin):
    import pyopencl as cl
    fn = mapping.function_address(dev, table["saxpy"])
    n = 64
    x = np.ones(n, dtype=np.float32)
    a = plugin.alloc(dev.local, x.nbytes)
    try:
        plugin.host2dev(dev.local, a, x.ctypes.data, x.nbytes)
        gate = cl.UserEvent(plugin.cl_device(dev.local)[1])
        event = plugin.run_async(dev.local, fn, [f32(1.0), a, a, n], wait_for=[gate])
        gate.set_status(-1)             # what it waited for failed: so does the kernel
        with pytest.raises(PluginError, match=rf"^device {dev.number} \(opencl "
                                              rf"{dev.local}\): a kernel failed on the "
                                              rf"device: RuntimeError: clWaitForEvents"):
            plugin.wait(dev.local, event)
        plugin.run(dev.local, fn, [f32(1.0), a, a, n])      # the queue goes on
        y = np.empty_like(x)
        plugin.dev2host(dev.local, y.ctypes.data, a, x.nbytes)
        assert np.array_equal(y, np.full(n, 2.0, np.float32))
    finally:
        plugin.free(dev.local, a)


def test_messages_name_the_device_number_the_user_chose():
    # opencl is device 1 here: its errors say so (and its number in the plugin)
    code = textwrap.dedent("""
        import numpy as np, pygomp
        from pygomp.runtime import devices
        print([d.plugin.label(d.local) for d in devices.all_devices()])
        for call in (lambda: pygomp.omp_target_free(12345, 1),
                     lambda: pygomp.omp_target_memcpy(12345, np.zeros(2), 16, 0, 0, 1, 2)):
            try:
                call()
            except pygomp.PluginError as e:
                print(e)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    env.update(PYGOMP_DEVICES="host,opencl:pocl", PYGOMP_CACHE_DIR=os.environ["PYGOMP_CACHE_DIR"])
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == ("['device 0 (host 0)', 'device 1 (opencl 0)', "
                      "'device 2 (the initial device)']")
    assert out[1].startswith("device 1 (opencl 0): free at 0x3039 failed: KeyError: ")
    assert out[2].startswith("device 1 (opencl 0): host2dev 16 bytes from host 0x")
    assert " to device 0x3039 failed: KeyError: " in out[2]


def test_build_error_shows_the_python_line(plugin, dev):
    src = '#line 42 "mykernel.py"\n__kernel void k(__global int *x, ulong xo) { x[0] = y; }\n'
    bad = Source(src, (KernelInfo("bad", ("k",), ("p",)),))
    with pytest.raises(PluginError) as info:
        plugin.compile(dev.local, bad)
    msg = str(info.value)
    assert isinstance(info.value, build.OpenCLBuildError)
    assert "mykernel.py:42" in msg and "undeclared identifier 'y'" in msg
    assert "build of bad failed" in msg


def test_unknown_argument_code(plugin, dev):
    img = plugin.compile(dev.local, Source("__kernel void k(int x) {}",
                                           (KernelInfo("k", args=("q7",)),)))
    with pytest.raises(PluginError, match="unknown argument code 'q7'"):
        plugin.load_image(dev.local, img, 1, 0)


def test_variables_are_zeroed_buffers(plugin, dev):
    img = plugin.compile(dev.local, Source("__kernel void k(__global int *x, ulong xo) { }",
                                           (KernelInfo("k", args=("p",)),),
                                           (("v", 24), ("w", 0))))
    got = plugin.load_image(dev.local, img, 1, 2)
    try:
        out = np.ones(3, dtype=np.int64)
        plugin.dev2host(dev.local, out.ctypes.data, got.variables[0], 24)
        assert not out.any()
    finally:
        plugin.unload_image(dev.local, img)
    with pytest.raises(PluginError):
        plugin.dev2host(dev.local, out.ctypes.data, got.variables[0], 24)


CHILD = textwrap.dedent("""
    import json, sys
    from pygomp.runtime.plugin import KernelInfo, Source
    from pygomp.plugins.opencl.plugin import OpenCLPlugin
    from pygomp.plugins.opencl import build
    p = OpenCLPlugin()
    dev = p.select("pocl")[0] if p.select("pocl") else 0
    src = "__kernel void k(__global int *x, ulong xo) { x[get_global_id(0)] = %s; }"
    unit = Source(src % sys.argv[1], (KernelInfo("k", args=("p",)),))
    p.load_image(dev, p.compile(dev, unit), 1, 0)
    print(json.dumps(build.stats))
""")


def test_build_cache_hit_in_a_second_process(tmp_path, plugin):
    env = dict(os.environ, PYGOMP_CACHE_DIR=str(tmp_path))
    token = str(os.getpid())

    def child():
        out = subprocess.run([sys.executable, "-c", CHILD, token], env=env, check=True,
                             capture_output=True, text=True).stdout
        import json
        return json.loads(out.strip().splitlines()[-1])

    assert child() == {"builds": 1, "cache_hits": 0}
    assert child() == {"builds": 0, "cache_hits": 1}
    entries = [p for p in tmp_path.rglob("*.bin")
               if not p.name.endswith((".latest.bin", ".probe.bin", ".opencl-devices.bin"))]
    assert len(entries) == 1
    entries[0].write_bytes(entries[0].read_bytes()[:-100] + b"x" * 100)      # corrupt
    assert child() == {"builds": 1, "cache_hits": 0}
    assert child() == {"builds": 0, "cache_hits": 1}


def test_no_pyopencl_import_at_import_of_pygomp():
    code = "import sys, pygomp, pygomp.runtime.devices; print('pyopencl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "False"


def test_memory_view_helpers_roundtrip(plugin, dev):
    raw = ctypes.create_string_buffer(b"hello, opencl", 16)
    a = plugin.alloc(dev.local, 16)
    try:
        plugin.host2dev(dev.local, a, ctypes.addressof(raw), 16)
        back = ctypes.create_string_buffer(16)
        plugin.dev2host(dev.local, ctypes.addressof(back), a, 16)
        assert back.raw == raw.raw
    finally:
        plugin.free(dev.local, a)


def test_copies_wait_for_a_launch_in_flight(dev, table, plugin):
    """On a CPU device a copy is a memcpy only while no launch is in flight: one behind a
    kernel that waits for a gate returns once the kernel ran, with what it wrote."""
    import pyopencl as cl
    fn = mapping.function_address(dev, table["saxpy"])
    n = 64
    x = np.ones(n, dtype=np.float32)
    a, b = plugin.alloc(dev.local, x.nbytes), plugin.alloc(dev.local, x.nbytes)
    try:
        plugin.host2dev(dev.local, a, x.ctypes.data, x.nbytes)
        plugin.host2dev(dev.local, b, x.ctypes.data, x.nbytes)
        gate = cl.UserEvent(plugin.cl_device(dev.local)[1])
        event = plugin.run_async(dev.local, fn, [f32(3.0), a, b, n], wait_for=[gate])
        once = threading.Lock()

        def release(status):            # the gate's status, set once
            if once.acquire(blocking=False):
                gate.set_status(status)
        timer = threading.Timer(5.0, release, [-1])         # a wrong copy never hangs
        timer.start()
        got, y = [], np.zeros_like(x)
        reader = threading.Thread(target=lambda: got.append(
            plugin.dev2host(dev.local, y.ctypes.data, b, x.nbytes)))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and not y.any()        # behind the kernel
        release(cl.command_execution_status.COMPLETE)
        reader.join()
        assert got == [None] and np.array_equal(y, np.full(n, 4.0, np.float32))
        plugin.wait(dev.local, event)
        plugin.host2dev(dev.local, b, x.ctypes.data, x.nbytes)    # quiet: at once
        plugin.dev2host(dev.local, y.ctypes.data, b, x.nbytes)
        assert np.array_equal(y, x)
    finally:
        release(-1)
        timer.cancel()
        try:
            plugin.synchronize(dev.local)
        finally:
            plugin.free(dev.local, a)
            plugin.free(dev.local, b)
