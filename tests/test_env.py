"""Environment variables, each in a fresh Python process (settings are read once)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest


def python(*code, timeout=120, **environ):
    """Run the ``code`` parts in a fresh interpreter with exactly these OMP_*/PYGOMP_*
    variables."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    e.setdefault("PYGOMP_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                 "pygomp-test-env-cache"))
    e.update({k: str(v) for k, v in environ.items()})
    code = "\n".join(textwrap.dedent(c) for c in code)
    return subprocess.run([sys.executable, "-c", code], env=e,
                          capture_output=True, text=True, timeout=timeout)


def ok(r):
    assert r.returncode == 0, f"exit status {r.returncode}\n{r.stderr[-3000:]}"
    return r.stdout


def failed_with(r, exc, message):
    """The process died of ``exc`` whose message is exactly ``message``."""
    assert r.returncode != 0, f"it did not fail:\n{r.stdout}"
    last = r.stderr.strip().splitlines()[-1]
    assert last == f"{exc}: {message}", r.stderr[-3000:]


DEVICES = """
    import pygomp
    from pygomp.runtime import devices
    print([(d.number, 'initial' if d.is_initial else d.plugin.name)
           for d in devices.all_devices()])
    print(pygomp.omp_get_num_devices(), pygomp.omp_get_initial_device(),
          pygomp.omp_get_default_device())
"""

MAP = """
    import numpy as np, pygomp
    a = np.arange(5.0)
    pygomp.target_enter_data(to=a)
    print("present on", [n for n in range(pygomp.omp_get_num_devices() + 1)
                         if n == pygomp.omp_get_initial_device()
                         or pygomp.omp_target_is_present(a, n)])
    print("accessible", pygomp.omp_target_is_accessible(a, 40, pygomp.omp_get_default_device()))
"""


# -- OMP_TARGET_OFFLOAD --------------------------------------------------------------

@pytest.mark.parametrize("value", [None, "default", "DEFAULT", "Mandatory"])
def test_offload_default_and_mandatory_with_a_device(value):
    environ = {"PYGOMP_DEVICES": "host"}
    if value is not None:
        environ["OMP_TARGET_OFFLOAD"] = value
    out = ok(python(DEVICES, MAP, **environ)).splitlines()
    assert out == ["[(0, 'host'), (1, 'initial')]", "1 1 0",
                   "present on [0, 1]", "accessible 0"]


@pytest.mark.parametrize("value", ["mandatory", "MANDATORY", "MaNdAtOrY"])
def test_mandatory_without_an_offload_device(value):
    r = python("""
        import numpy as np, pygomp
        a = np.zeros(2)
        print(pygomp.omp_get_num_devices(), pygomp.omp_get_default_device())
        # asking for the host explicitly is fine
        pygomp.target_enter_data(pygomp.omp_initial_device, to=a)
        with pygomp.target_data(pygomp.omp_get_initial_device(), tofrom=a):
            pass
        print("explicit host ok", flush=True)
        pygomp.target_enter_data(to=a)
    """, OMP_TARGET_OFFLOAD=value, PYGOMP_DEVICES="none")
    assert r.stdout.splitlines() == ["0 -4", "explicit host ok"]
    failed_with(r, "pygomp.runtime.devices.OffloadError",
                "OMP_TARGET_OFFLOAD is set to MANDATORY, but only the host device is available")


def test_mandatory_device_not_found():
    r = python("""
        import numpy as np, pygomp
        pygomp.target_enter_data(3, to=np.zeros(2))
    """, OMP_TARGET_OFFLOAD="mandatory", PYGOMP_DEVICES="host")
    failed_with(r, "pygomp.runtime.devices.OffloadError",
                "OMP_TARGET_OFFLOAD is set to MANDATORY, but device 3 not found "
                "(devices 0..0 exist)")
    # not mandatory: the same construct falls back to the host
    ok(python("""
        import numpy as np, pygomp
        a = np.zeros(2)
        with pygomp.target_data(3, tofrom=a):
            assert pygomp.omp_target_is_present(a, 0) == 0
    """, PYGOMP_DEVICES="host"))


@pytest.mark.parametrize("value", ["disabled", "DISABLED", "Disabled"])
def test_disabled_runs_on_the_initial_device(value):
    out = ok(python(DEVICES, MAP, """
        from pygomp.runtime import devices
        print(devices.resolve(0).is_initial, devices.resolve(None).is_initial)
    """, OMP_TARGET_OFFLOAD=value, PYGOMP_DEVICES="host,opencl"))
    assert out.splitlines() == ["[(0, 'initial')]", "0 0 0", "present on [0]",
                                "accessible 1", "True True"]


def test_invalid_offload_value():
    r = python("import pygomp; pygomp.omp_get_num_devices()", OMP_TARGET_OFFLOAD="sometimes")
    failed_with(r, "pygomp.runtime.env.EnvError",
                "invalid value for environment variable OMP_TARGET_OFFLOAD: 'sometimes' "
                "(expected DEFAULT, MANDATORY or DISABLED)")


# -- OMP_DEFAULT_DEVICE, OMP_DISPLAY_ENV ------------------------------------------------

def test_default_device():
    out = ok(python(DEVICES, MAP, OMP_DEFAULT_DEVICE="1", PYGOMP_DEVICES="opencl:pocl,host"))
    assert out.splitlines() == ["[(0, 'opencl'), (1, 'host'), (2, 'initial')]", "2 2 1",
                                "present on [1, 2]", "accessible 0"]
    # the initial device's number: data stays where it is
    out = ok(python(DEVICES, MAP, OMP_DEFAULT_DEVICE="1", PYGOMP_DEVICES="host"))
    assert out.splitlines()[1:] == ["1 1 1", "present on [1]", "accessible 1"]


@pytest.mark.parametrize("value, expected", [
    ("-1", "invalid value for environment variable OMP_DEFAULT_DEVICE: -1 "
           "(expected a device number >= 0)"),
    ("first", "invalid value for environment variable OMP_DEFAULT_DEVICE: 'first' "
              "(expected an integer)")])
def test_invalid_default_device(value, expected):
    r = python("import pygomp; pygomp.omp_get_default_device()", OMP_DEFAULT_DEVICE=value)
    failed_with(r, "pygomp.runtime.env.EnvError", expected)


def test_display_env():
    r = python("import pygomp; print('imported')", OMP_DISPLAY_ENV="true",
               OMP_TARGET_OFFLOAD="mandatory", OMP_DEFAULT_DEVICE="1", PYGOMP_DEVICES="host")
    assert ok(r) == "imported\n"
    assert r.stderr.splitlines() == [
        "OPENMP DISPLAY ENVIRONMENT BEGIN",
        "  _OPENMP = '202111'",           # OpenMP 5.2, whose map rules the runtime follows
        "  OMP_DEFAULT_DEVICE = '1'",
        "  OMP_TARGET_OFFLOAD = 'MANDATORY'",
        "OPENMP DISPLAY ENVIRONMENT END"]
    r = python("import pygomp", OMP_DISPLAY_ENV="VERBOSE", PYGOMP_DEVICES="host",
               PYGOMP_INFO="3", PYGOMP_CACHE_DIR="/tmp/somewhere")
    ok(r)
    lines = r.stderr.splitlines()
    assert lines[0] == "OPENMP DISPLAY ENVIRONMENT BEGIN"
    assert lines[-1] == "OPENMP DISPLAY ENVIRONMENT END"
    for line in ("  OMP_TARGET_OFFLOAD = 'DEFAULT'", "  PYGOMP_DEVICES = 'host'",
                 "  PYGOMP_INFO = '0x3'", "  PYGOMP_CACHE_DIR = '/tmp/somewhere'"):
        assert line in lines
    for value in ("false", "FALSE"):
        r = python("import pygomp", OMP_DISPLAY_ENV=value)
        assert ok(r) == "" and r.stderr == ""
    failed_with(python("import pygomp", OMP_DISPLAY_ENV="loud"), "pygomp.runtime.env.EnvError",
                "invalid value for environment variable OMP_DISPLAY_ENV: 'loud' "
                "(expected TRUE, FALSE or VERBOSE)")


# -- PYGOMP_DEVICES ---------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("host", "[(0, 'host'), (1, 'initial')]"),
    ("opencl:pocl,host", "[(0, 'opencl'), (1, 'host'), (2, 'initial')]"),
    ("host,opencl", "[(0, 'host'), (1, 'opencl'), (2, 'initial')]"),
    (" host , host ", "[(0, 'host'), (1, 'initial')]"),            # once each
    ("none", "[(0, 'initial')]"),
    (None, "[(0, 'opencl'), (1, 'host'), (2, 'initial')]"),          # unset: host last
])
def test_devices_order_and_numbering(value, expected):
    environ = {} if value is None else {"PYGOMP_DEVICES": value}
    out = ok(python(DEVICES, **environ)).splitlines()
    n = expected.count("(") - 1
    assert out == [expected, f"{n} {n} 0"]


def test_unknown_plugin_lists_the_installed_ones():
    r = python(DEVICES, PYGOMP_DEVICES="host,nosuchplugin:0")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    m = re.fullmatch(r"pygomp\.runtime\.devices\.OffloadError: PYGOMP_DEVICES: unknown plugin "
                     r"'nosuchplugin'; installed plugins: (.*)", last)
    assert m, r.stderr[-2000:]
    assert {"host", "opencl"} <= set(m.group(1).split(", "))


def test_selector_matching_nothing_lists_the_devices():
    r = python(DEVICES, PYGOMP_DEVICES="opencl:nvidia")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("pygomp.runtime.devices.OffloadError: PYGOMP_DEVICES: "
                           "'opencl:nvidia' matches no device; opencl has 0: "), last
    assert "Portable Computing Language" in last or "no devices" in last
    failed_with(python(DEVICES, PYGOMP_DEVICES="host:3"), "pygomp.runtime.devices.OffloadError",
                "PYGOMP_DEVICES: 'host:3' matches no device; host has 0: host (gcc)")


@pytest.mark.parametrize("value", ["", " , "])
def test_empty_devices_is_an_error(value):
    r = python(DEVICES, PYGOMP_DEVICES=value)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("pygomp.runtime.devices.OffloadError: PYGOMP_DEVICES is empty: "
                           "name devices as plugin[:selector], e.g. 'opencl:pocl,host', or "
                           "'none' for the initial device alone; installed plugins: "), last
    assert "host" in last.split("installed plugins: ")[1].split(", ")
    assert ok(python(DEVICES, PYGOMP_DEVICES="none")).splitlines() == ["[(0, 'initial')]",
                                                                      "0 0 0"]


FALLBACK = """
    import warnings, numpy as np, pygomp, pygomp.kernels as omp
    from pygomp.runtime import devices
    @omp.target
    def inc(a):
        for i in range(a.shape[0]):
            a[i] += 1.0
    a = np.zeros(3)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        inc.on(99)(a)
        inc.on(99)(a)                                   # said once a device number
        with pygomp.target_data(99, tofrom=[a]):         # the same number: said already
            pass
        inc(a)                                           # the default device
    print(a[0], devices.resolve(99).is_initial)
    for w in seen:
        print(w.category.__name__, w.filename == __file__, w.message)
"""


def test_a_missing_device_falls_back_once_with_a_warning(tmp_path):
    (tmp_path / "fallback.py").write_text(textwrap.dedent(FALLBACK))
    run = f"import runpy; runpy.run_path({str(tmp_path / 'fallback.py')!r})"
    out = ok(python(run, PYGOMP_DEVICES="host", OMP_DEFAULT_DEVICE="7")).splitlines()
    assert out == [
        "3.0 True",
        "OffloadWarning True device 99 does not exist (1 offload device, number 0, and the "
        "initial device 1): running on the initial device instead",
        "OffloadWarning True device 7 does not exist (1 offload device, number 0, and the "
        "initial device 1): running on the initial device instead"]
    r = python(run, PYGOMP_DEVICES="host", OMP_TARGET_OFFLOAD="mandatory")
    failed_with(r, "pygomp.runtime.devices.OffloadError",
                "OMP_TARGET_OFFLOAD is set to MANDATORY, but device 99 not found "
                "(devices 0..0 exist)")


# -- PYGOMP_INFO ------------------------------------------------------------------------

INFO = """
    import numpy as np, pygomp
    a = np.arange(4.0)
    kept = np.zeros(6)
    print(hex(a.ctypes.data), hex(kept.ctypes.data))
    pygomp.target_enter_data(0, to=(a, kept))
    with pygomp.target_data(0, tofrom=a):
        pass
    pygomp.target_exit_data(0, from_=a)
    print("end of program", flush=True)
"""


def test_info_bits():
    r = python(INFO, PYGOMP_DEVICES="host", PYGOMP_INFO="0x1f")
    a, kept = ok(r).split("\n")[0].split()
    ra = f"[{a}..{int(a, 16) + 32:#x})"
    rk = f"[{kept}..{int(kept, 16) + 48:#x})"
    err = r.stderr
    assert re.search(rf"^pygomp: device 0: mapped {re.escape(ra)} \(TO\) at 0x[0-9a-f]+$", err, re.M)
    assert f"pygomp: device 0: copy to device {ra}\n" in err
    assert f"pygomp: device 0: {ra} present in {ra} -> 0x" in err
    assert f"pygomp: device 0: copy from device {ra}\n" in err
    assert f"pygomp: device 0: removed {ra} -> 0x" in err
    # at exit, what is still mapped
    assert re.search(rf"pygomp: device 0 still has 1 mapping\(s\) at exit:\n  "
                     rf"{re.escape(rk)} -> 0x[0-9a-f]+ refcount 1 dynamic 0\n", err), err
    assert err.index("still has") > err.index("removed")


def test_info_bits_select_messages():
    r = python(INFO, PYGOMP_DEVICES="host", PYGOMP_INFO="8")     # copies only
    ok(r)
    assert "copy to device" in r.stderr and "copy from device" in r.stderr
    assert "mapped" not in r.stderr and "still has" not in r.stderr
    r = python(INFO, PYGOMP_DEVICES="host", PYGOMP_INFO="4")     # the table at exit only
    ok(r)
    assert r.stderr.startswith("pygomp: device 0 still has 1 mapping(s) at exit:")
    assert "copy" not in r.stderr
    r = python(INFO, PYGOMP_DEVICES="host")
    assert ok(r) and r.stderr == ""


def test_info_at_exit_lists_what_the_program_mapped_not_the_kernels_image(tmp_path):
    f = tmp_path / "prog.py"
    f.write_text(textwrap.dedent("""
        import numpy as np, pygomp as omp
        @omp.target
        def add(x):
            for i in omp.parallel_range(x.shape[0]):
                x[i] += 1.0
        x = np.zeros(4)
        omp.target_enter_data(0, to=x)
        add.on(0)(x)
        print(hex(x.ctypes.data))
    """))
    r = python(f"import runpy; runpy.run_path({str(f)!r})", PYGOMP_DEVICES="host",
               PYGOMP_INFO="4")
    x = ok(r).split()[0]
    assert re.fullmatch(rf"pygomp: device 0 still has 1 mapping\(s\) at exit:\n  "
                        rf"{re.escape(f'[{x}..{int(x, 16) + 32:#x})')} -> 0x[0-9a-f]+ "
                        rf"refcount 1 dynamic 0\n", r.stderr), r.stderr


# -- python -m pygomp info --------------------------------------------------------------

def test_python_m_pygomp_info():
    import pygomp
    if not os.path.exists(os.path.join(os.path.dirname(pygomp.__file__), "__main__.py")):
        pytest.skip("pygomp/__main__.py does not exist yet")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    e.update(PYGOMP_DEVICES="opencl:pocl,host", OMP_TARGET_OFFLOAD="mandatory",
             PYGOMP_INFO="0x3", PYGOMP_CACHE_DIR="/tmp/pygomp-info-cache")
    r = subprocess.run([sys.executable, "-m", "pygomp", "info"], env=e, capture_output=True,
                       text=True, timeout=120)
    out = ok(r)
    lines = out.splitlines()
    assert lines[0] == "plugins:"
    assert re.search(r"^  host: target host, API v1, ", out, re.M)
    assert re.search(r"^  opencl: target opencl, API v1", out, re.M)
    assert re.search(r"^  0: opencl:0 \w+: .*Portable Computing Language", out, re.M)
    assert re.search(r"^  1: host:0 cpu: host \[gcc\]$", out, re.M)
    assert re.search(r"^  2: initial device \(host, shared memory\): host$", out, re.M)
    for line in ("settings:", "  OMP_TARGET_OFFLOAD = MANDATORY", "  OMP_DEFAULT_DEVICE = 0",
                 "  PYGOMP_DEVICES = opencl:pocl,host", "  PYGOMP_INFO = 0x3",
                 "  PYGOMP_CACHE_DIR = /tmp/pygomp-info-cache"):
        assert line in lines
    assert lines.index("devices:") < lines.index("settings:")
