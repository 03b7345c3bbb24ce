"""OpenACC's profiling interface: C programs under libpygomp.so (tests/c/acc_prof.c,
a library loaded by ACC_PROFLIB) and Python's `acc.prof_register`."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pygomp import openacc as acc
from pygomp.csrc import shim
from pygomp.runtime import accprof, devices

from test_shim import _env, _opencl_devices, _passed

HERE = Path(__file__).parent / "c"

PROGRAM = r"""
#include <openacc.h>
int main(void)
{
    double a[8] = {0};
    #pragma acc parallel copy(a)
    a[0] = 1;
    #pragma acc parallel copy(a)
    a[1] = 2;
    return !(a[0] == 1 && a[1] == 2);
}
"""


def _build(out: Path, src: Path, *flags) -> str:
    exe = out / src.stem
    cmd = ["gcc", "-fopenacc", "-foffload=disable", "-O1", "-Wall", str(src), "-o", str(exe),
           *flags]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"$ {' '.join(cmd)}\n{done.stderr}"
    return str(exe)


def _run(argv, **env):
    return subprocess.run(argv, env=_env(LD_PRELOAD=shim.path(), **env), capture_output=True,
                          text=True, timeout=180)


@pytest.mark.parametrize("devices", ["host", "opencl"])
def test_events_of_a_c_program_in_order_with_their_fields(tmp_path, devices):
    """tests/c/acc_prof.c checks the events of each construct and routine, their fields,
    and registration's rules, on the host device and on OpenCL (memory of their own)."""
    if devices == "opencl" and not _opencl_devices():
        pytest.skip("no OpenCL device")
    _passed(_run([_build(tmp_path, HERE / "acc_prof.c")], PYGOMP_DEVICES=devices))


def test_gomp_debug_traces_registration(tmp_path):
    """GOMP_DEBUG=1: libgomp's lines for each acc_prof_register/unregister request (what
    it did: counted, toggled, ...) and acc_prof_lookup."""
    done = _run([_build(tmp_path, HERE / "acc_prof.c")], PYGOMP_DEVICES="host", GOMP_DEBUG="1")
    _passed(done)
    call = r"acc_prof_{}: ev={}, cb={}, reg={}\n"
    a = re.search(call.format("register", 16, "(0x[0-9a-f]+)", 0) + "  prepending\n" +
                  call.format("register", 16, r"\1", 0) +
                  "  already registered; incrementing reference count to: 2\n" +
                  call.format("unregister", 16, r"\1", 0) +
                  "  decrementing reference count to: 1\n", done.stderr)
    assert a, done.stderr
    a = re.escape(a.group(1))
    for lines in ([("unregister", 16, a, 1, "  disabling")],
                  [("register", 16, a, 1, "  enabling"),
                   ("unregister", 16, r"\(nil\)", 1, "  globally disabling callbacks")],
                  [("register", 16, r"\(nil\)", 1, "  globally enabling callbacks"),
                   ("unregister", 0, r"\(nil\)", 2, "  thread: disabling callbacks")],
                  [("register", 0, r"\(nil\)", 2, "  thread: enabling callbacks")]):
        assert re.search("".join(call.format(*c[:4]) + c[4] + "\n" for c in lines),
                         done.stderr), lines
    assert re.search(call.format("register", 16, "0x[0-9a-f]+", 0) + "  appending\n",
                     done.stderr)
    assert "\nacc_prof_lookup (anything)\n" in done.stderr
    assert "acc_prof_register" not in _run([_build(tmp_path, HERE / "acc_prof.c")],
                                           PYGOMP_DEVICES="host").stderr


@pytest.fixture(scope="module")
def proflib(tmp_path_factory):
    out = tmp_path_factory.mktemp("proflib")
    lib = out / "libproflib.so"
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-Wall", str(HERE / "acc_prof_lib.c"), "-o",
           str(lib)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    src = out / "program.c"
    src.write_text(PROGRAM)
    return str(lib), _build(out, src)


def test_acc_proflib_loads_a_library_and_calls_its_acc_register_library(proflib):
    lib, exe = proflib
    done = _run([exe], ACC_PROFLIB=lib)
    _passed(done)
    lines = [re.sub(r" device type \d+", "", x) for x in done.stderr.splitlines()
             if x.startswith("proflib:")]
    assert lines == ["proflib: registered (lookup NULL)", "proflib: event 1",   # device init
                     "proflib: event 16", "proflib: event 17",      # compute construct
                     "proflib: event 16", "proflib: event 17", "proflib: 2 compute constructs"]
    assert "proflib: event 1 device type 1" in done.stderr        # acc_device_default


def test_gomp_debug_traces_loading_a_library(proflib):
    lib, exe = proflib
    done = _run([exe], ACC_PROFLIB=lib, GOMP_DEBUG="1")
    _passed(done)
    assert (f'goacc_profiling_initialize: dlopen ("{lib}")\n'
            f"  goacc_profiling_initialize: calling {lib}:acc_register_library\n"
            ) in done.stderr


def test_acc_proflib_lists_libraries_and_reports_one_it_cannot_load(proflib, tmp_path):
    lib, exe = proflib
    done = _run([exe], ACC_PROFLIB=f"{tmp_path}/missing.so;{lib}")
    _passed(done)
    assert f'while loading ACC_PROFLIB "{tmp_path}/missing.so"' in done.stderr
    assert "proflib: 2 compute constructs" in done.stderr


def test_without_a_library_nothing_is_registered(proflib):
    _, exe = proflib
    done = _run([exe])
    _passed(done)
    assert "proflib" not in done.stderr


# -- Python's acc.prof_register --------------------------------------------------------

@pytest.fixture
def events():
    """Every event of this thread, as (name, parent construct, async, bytes) tuples."""
    log = []

    def record(prof, event, api):
        assert prof.version == accprof.VERSION and api.device_type == prof.device_type
        log.append((acc.EVENTS[prof.event_type], event.parent_construct,
                    getattr(prof, "async"), getattr(event, "bytes", None)))
    acc.current()
    for ev in range(1, len(acc.EVENTS)):
        acc.prof_register(ev, record)
    yield log
    for ev in range(1, len(acc.EVENTS)):
        acc.prof_unregister(ev, record)
    assert accprof.mask == 0


def _names(log):
    names = [e[0] for e in log]
    log.clear()
    return names


def _host_device():
    devs = devices.all_devices()
    return next((d for d in devs[:-1] if d.plugin.name == "host"), None)


@pytest.fixture
def on_host_device():
    dev = _host_device()
    if dev is None:
        pytest.skip("no host device")
    acc.set_device_num(acc.devices_of(acc.device_host_nonshm).index(dev),
                       acc.device_host_nonshm)
    yield dev


def test_python_routines_and_data_regions_give_their_events(on_host_device, events):
    x, y = np.ones(8), np.zeros(4)
    acc.copyin(x)
    assert _names(events) == ["alloc", "create", "enqueue_upload_start", "enqueue_upload_end"]
    acc.update_self(x)
    assert _names(events) == ["enqueue_download_start", "enqueue_download_end"]
    with acc.data(copy=[y]):
        assert _names(events) == ["enter_data_start", "alloc", "create",
                                  "enqueue_upload_start", "enqueue_upload_end",
                                  "enter_data_end"]
    assert events[0][1] == accprof.construct_data
    assert _names(events) == ["exit_data_start", "enqueue_download_start",
                              "enqueue_download_end", "delete", "free", "exit_data_end"]
    acc.copyout(x, async_=2)      # the events come when the work is queued
    assert [(e[0], e[2], e[3]) for e in events] == [
        ("enqueue_download_start", 2, 64), ("enqueue_download_end", 2, 64),
        ("delete", 2, 64), ("free", 2, 64)]
    assert events[0][1] == accprof.construct_runtime_api
    events.clear()
    acc.wait(2)
    assert _names(events) == ["wait_start", "wait_end"]


def test_python_registration_counts_toggles_and_orders():
    calls = []

    def first(p, e, a):
        calls.append("first")

    def second(p, e, a):
        calls.append("second")
    start, end = acc.ev_wait_start, acc.ev_wait_end
    acc.current()
    for fn in (first, second):
        acc.prof_register(start, fn)
        acc.prof_register(end, fn)
    acc.prof_register(start, first)                 # counted: one unregister keeps it
    acc.prof_unregister(start, first)
    acc.wait()
    assert calls == ["first", "second", "second", "first"]    # end events: reversed
    calls.clear()
    acc.prof_unregister(start, second, accprof.toggle)         # this callback off
    acc.prof_unregister(end, None, accprof.toggle)             # the whole event off
    acc.wait()
    assert calls == ["first"]
    calls.clear()
    acc.prof_unregister(acc.ev_none, None, accprof.toggle_per_thread)
    acc.wait()
    assert calls == []
    acc.prof_register(acc.ev_none, None, accprof.toggle_per_thread)
    acc.prof_register(start, second, accprof.toggle)
    acc.prof_register(end, None, accprof.toggle)
    for fn in (first, second):
        acc.prof_unregister(start, fn)
        acc.prof_unregister(end, fn)
    assert accprof.mask == 0
    acc.wait()
    assert calls == []


def test_no_callback_leaves_the_paths_alone():
    """Without a callback no record is made, and the plugins' alloc is their own (in a
    fresh process: a callback that met a device leaves a watch on its plugin)."""
    code = ("import numpy as np; from pygomp import openacc as acc; from pygomp.runtime import accprof\n"
            "x = np.ones(4); dev = acc.current(); acc.copyin(x)\n"
            "assert accprof.mask == 0 and accprof.current() is None\n"
            "acc.delete(x)\n"
            "assert dev.plugin.alloc.__func__ is type(dev.plugin).alloc\n")
    done = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
