"""The disk cache as a deployment meets it: no compiler on PATH, a read-only cache, no
linker for PoCL.  Each case runs in fresh processes, as a user's program would."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import sys, numpy as np, pygomp as omp
    from pygomp.runtime import cache

    @omp.target
    def scale(x, a: float):
        for i in omp.parallel_range(x.shape[0]):
            x[i] *= a

    @omp.target
    def shift(x, a: float):
        for i in omp.parallel_range(x.shape[0]):
            x[i] += a

    x = np.arange(10.0)
    for name in sys.argv[1:]:
        {"scale": scale, "shift": shift}[name].on(0)(x, 3.0)
    print("builds", cache.stats["builds"], x[1], flush=True)
""")


def run(tmp_path, *kernels, path=None, wrap=(), **environ):
    """Run PROGRAM on device 0 with the kernels named, the cache in tmp_path/cache."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    env.update({"PYGOMP_DEVICES": "host", "PYGOMP_CACHE_DIR": str(tmp_path / "cache"),
                "TMPDIR": str(tmp_path / "tmp"), **environ})
    os.makedirs(tmp_path / "tmp", exist_ok=True)
    if path is not None:
        env["PATH"] = path
    return subprocess.run([*wrap, sys.executable, str(tmp_path / "prog.py"), *kernels],
                          env=env, capture_output=True, text=True, timeout=180)


def ok(r):
    assert r.returncode == 0, f"exit status {r.returncode}\n{r.stderr[-3000:]}"
    return r.stdout.strip()


def test_cached_host_kernels_load_with_no_compiler_on_path(tmp_path):
    assert ok(run(tmp_path, "scale")) == "builds 1 3.0"
    empty = tmp_path / "empty"
    empty.mkdir()
    # no gcc (nor anything else) on PATH: the entry built for this CPU and source loads
    assert ok(run(tmp_path, "scale", path=str(empty))) == "builds 0 3.0"
    # ... and a kernel never built says that the compiler is missing
    r = run(tmp_path, "shift", path=str(empty))
    assert r.returncode != 0
    assert "cannot run the C compiler 'gcc'" in r.stderr.strip().splitlines()[-1]
    # a compiler that is present keys the entry: another gcc builds anew
    other = tmp_path / "other"
    other.mkdir()
    (other / "gcc").write_text(f"#!/bin/sh\nexec {shutil.which('gcc')} \"$@\"\n")
    (other / "gcc").chmod(0o755)
    assert ok(run(tmp_path, "scale", path=f"{other}:{os.environ['PATH']}")) == "builds 1 3.0"
    assert ok(run(tmp_path, "scale")) == "builds 0 3.0"


def read_only(directory):
    """A command prefix that runs a program with ``directory`` read-only for it, or None."""
    if os.geteuid() != 0:
        for root, dirs, files in os.walk(directory):
            for name in dirs + files:
                os.chmod(os.path.join(root, name), 0o555)
        os.chmod(directory, 0o555)
        return []
    if shutil.which("unshare") is None:
        return None
    wrap = ["unshare", "-rm", "sh", "-c",
            f'mount --bind "{directory}" "{directory}" && '
            f'mount -o remount,bind,ro "{directory}" && exec "$0" "$@"']
    probe = subprocess.run([*wrap, "true"], capture_output=True)
    return wrap if probe.returncode == 0 else None


def test_a_read_only_cache_is_read_and_new_entries_go_elsewhere(tmp_path):
    assert ok(run(tmp_path, "scale")) == "builds 1 3.0"
    entries = sorted(os.listdir(tmp_path / "cache"))
    wrap = read_only(tmp_path / "cache")
    if wrap is None:
        pytest.skip("cannot make a directory read-only here (root without unshare)")
    r = run(tmp_path, "scale", "shift", wrap=wrap)
    # the cached kernel is a hit, the new one is built once and written elsewhere
    assert ok(r) == "builds 1 6.0"
    fallback = tmp_path / "tmp" / f"pygomp-cache-{os.getuid()}"
    warning = (f"pygomp: the kernel cache {tmp_path / 'cache'} cannot be written: its "
               f"entries are read, new ones are written to {fallback}")
    assert r.stderr.count(warning) == 1, r.stderr
    assert sorted(os.listdir(tmp_path / "cache")) == entries
    assert any(n.endswith(".bin") for n in os.listdir(fallback))
    # the next run finds both: nothing is built
    assert ok(run(tmp_path, "scale", "shift", wrap=wrap)) == "builds 0 6.0"


def test_pocl_without_a_linker_is_a_clear_error(tmp_path):
    pytest.importorskip("pyopencl")
    from pygomp.runtime import devices
    if not any(d.plugin.name == "opencl" and "Portable" in d.info.platform
               for d in devices.all_devices()):
        pytest.skip("no PoCL device")
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run(tmp_path, "scale", path=str(empty), PYGOMP_DEVICES="opencl:pocl",
            POCL_CACHE_DIR=str(tmp_path / "pocl"))
    assert r.returncode == 1, r.stderr[-3000:]       # an exception, not an abort
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("pygomp.runtime.devices.OffloadError: device 0 (opencl 0: ") and \
        ") does not work: PoCL links kernels for " in last, last
    assert r.stderr.strip().endswith("with the system linker 'ld', which is not on PATH: "
                                     "install binutils, or put the directory that holds ld "
                                     "on PATH")
