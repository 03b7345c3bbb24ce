"""A third-party plugin, registered under the entry-point group as the built-in ones are."""
import os
import subprocess
import sys
import textwrap

import pytest

PLUGIN = textwrap.dedent("""
    import ctypes, os, tempfile
    from pygomp.runtime.plugin import DeviceInfo, Kernel, Plugin
    from pygomp.plugins.host.plugin import compile_c

    class BytesKernel(Kernel):
        '''One C function per entry; the base does the rest of a run.'''
        def __init__(self, lib, info):
            self.entries = [getattr(lib, e) for e in info.entries]
            super().__init__(info, ctypes.cast(self.entries[0], ctypes.c_void_p).value)

        def _launch_impl(self, run, entry):
            words, (gangs, sizes) = run
            grid, (vector, workers) = sizes[entry]
            self.entries[entry]((ctypes.c_uint64 * max(len(words), 1))(*words),
                                (ctypes.c_int64 * 3)(grid, workers, vector))

    class BytesPlugin(Plugin):
        '''Device memory in ctypes buffers; kernels are the host dialect's C.'''
        name, target = "bytes", "bytes"

        def __init__(self):
            super().__init__()
            self.mem, self.libs = {}, {}

        def _devices_impl(self):
            return [DeviceInfo(name="bytes device")]

        def _alloc_impl(self, dev, size):
            buf = ctypes.create_string_buffer(size)
            self.mem[ctypes.addressof(buf)] = buf
            return ctypes.addressof(buf)

        def _free_impl(self, dev, addr):
            del self.mem[addr]

        def _host2dev_impl(self, dev, dst, src, size):
            ctypes.memmove(dst, src, size)

        _dev2host_impl = _dev2dev_impl = _host2dev_impl

        def _compile_impl(self, dev, unit):
            return compile_c(unit.source)

        def _load_image_impl(self, dev, image):
            with tempfile.NamedTemporaryFile(suffix=".so", delete=False) as f:
                f.write(image.code)
            lib = self.libs[id(image)] = ctypes.CDLL(f.name)
            os.unlink(f.name)
            return [BytesKernel(lib, info) for info in image.kernels], []

        def target_hooks(self):
            from pygomp.plugins.host.target import HostDialect

            class BytesDialect(HostDialect):
                target = "bytes"

                def preamble(self, fn):
                    return "/* the bytes dialect */\\n" + super().preamble(fn)
            return BytesDialect()

    class OldPlugin(BytesPlugin):
        name, api_version = "old", 0
""")

ENTRY_POINTS = """\
[pygomp.plugins]
bytes = thirdparty_plugin:BytesPlugin
old = thirdparty_plugin:OldPlugin
"""

CHECK = textwrap.dedent("""
    import numpy as np, pygomp as omp
    from pygomp.runtime import devices
    print(sorted(devices.plugins()))
    print(devices.all_devices()[0])
    a = np.arange(8.0)
    omp.target_enter_data(0, to=[a])
    a[:] = 0
    omp.target_update(0, from_=[a[2:4]])
    print(a.tolist())
    omp.target_exit_data(0, delete=[a])
    print(omp.omp_target_is_present(a, 0))
""")


@pytest.fixture
def site(tmp_path):
    (tmp_path / "thirdparty_plugin.py").write_text(PLUGIN)
    info = tmp_path / "thirdparty_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-plugin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return tmp_path


def run(site, devices_var, code=CHECK):
    env = dict(os.environ, PYTHONPATH=str(site), PYGOMP_DEVICES=devices_var)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_third_party_plugin_is_found_and_maps_data(site):
    p = run(site, "bytes")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "bytes" in eval(lines[0]) and "host" in eval(lines[0])
    assert lines[1] == "<device 0: bytes 'bytes device', uninitialized>"
    assert lines[2] == "[0.0, 0.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0]"
    assert lines[3] == "0"


def test_a_plugin_of_another_api_version_is_refused(site):
    p = run(site, "old")
    assert p.returncode != 0
    assert ("PYGOMP_DEVICES: plugin 'old' cannot be loaded: it implements plugin API "
            "version 0, pygomp needs version 1") in p.stderr


KERNEL = textwrap.dedent("""
    import pygomp as omp

    @omp.target
    def scale(x, a: float):
        for i in omp.parallel_range(x.shape[0]):
            x[i] *= a
""")


def test_compile_finds_a_third_party_dialect(site):
    (site / "kernel_file.py").write_text(KERNEL)
    env = dict(os.environ, PYTHONPATH=str(site))
    p = subprocess.run([sys.executable, "-m", "pygomp", "compile", str(site / "kernel_file.py"),
                        "--target", "bytes"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "/* the bytes dialect */" in p.stdout and "void scale__" in p.stdout
    p = subprocess.run([sys.executable, "-m", "pygomp", "compile", str(site / "kernel_file.py"),
                        "--target", "nowhere"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode != 0 and "no plugin provides the target 'nowhere'" in p.stderr


def test_a_third_party_plugin_runs_kernels(site):
    """The plugin writes memory, copies, compiling, loading and one launch of one entry."""
    (site / "kernel_file.py").write_text(KERNEL)
    p = run(site, "bytes", "import numpy as np, kernel_file\n"
                           "x = np.arange(6.0)\n"
                           "kernel_file.scale.on(0)(x, 3.0)\n"
                           "print(x.tolist())\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["[0.0, 3.0, 6.0, 9.0, 12.0, 15.0]"]


def test_a_plugin_installed_later_is_found_by_the_next_process(site, tmp_path_factory):
    """The entry points are kept in the disk cache: installing or removing a plugin's
    distribution is seen all the same."""
    cache_dir = str(tmp_path_factory.mktemp("cache"))
    info = site / "thirdparty_plugin-0.1.dist-info"
    info.rename(site / "put-aside")

    def devices_of_bytes():
        env = dict(os.environ, PYTHONPATH=str(site), PYGOMP_DEVICES="bytes",
                   PYGOMP_CACHE_DIR=cache_dir)
        p = subprocess.run([sys.executable, "-c", "import pygomp as omp\n"
                            "print(omp.omp_get_num_devices())"], env=env,
                           capture_output=True, text=True, timeout=120)
        return p.stdout.strip() if p.returncode == 0 else p.stderr.strip().splitlines()[-1]

    unknown = "PYGOMP_DEVICES: unknown plugin 'bytes'"
    assert unknown in devices_of_bytes()
    assert unknown in devices_of_bytes()            # from the cache
    (site / "put-aside").rename(info)
    assert devices_of_bytes() == "1"
    assert devices_of_bytes() == "1"
    info.rename(site / "put-aside")
    assert unknown in devices_of_bytes()


def test_no_plugin_overrides_the_bases_run_run_async_or_launcher():
    """The plugin template holds: every registered plugin's class (and its bases below
    Plugin) leaves `run`, `run_async` and `launcher` to the base."""
    from importlib.metadata import entry_points

    from pygomp.runtime.plugin import Plugin
    classes = [ep.load() for ep in entry_points(group="pygomp.plugins")]
    assert {c.name for c in classes} >= {"host", "opencl", "cuda"}
    for cls in classes:
        below = cls.__mro__[:cls.__mro__.index(Plugin)]
        assert [(c.__name__, op) for c in below for op in ("run", "run_async", "launcher")
                if op in vars(c)] == []
