"""PYGOMP_PROFILE: a Chrome trace of a real run, on every device."""
import json
import os
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import numpy as np, pygomp as omp

    @omp.target
    def saxpy(a: float, x, y):
        for i in omp.parallel_range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    x, y = np.ones(1000), np.zeros(1000)
    for d in range(omp.omp_get_num_devices() + 1):
        with omp.target_data(d, to=[x], tofrom=[y]):
            saxpy.on(d)(2.0, x, y)
            saxpy.on(d)(2.0, x, y)
        saxpy.on(d)(1.0, x, y, nowait=True).wait()
    from pygomp.runtime import devices
    print([d.plugin.label(d.local) for d in devices.all_devices()])
""")


def run(tmp_path, **environ):
    (tmp_path / "prog.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    env.update(PYGOMP_CACHE_DIR=os.environ["PYGOMP_CACHE_DIR"], **environ)
    r = subprocess.run([sys.executable, str(tmp_path / "prog.py")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return eval(r.stdout.splitlines()[-1])


def test_a_run_writes_a_chrome_trace(tmp_path):
    path = tmp_path / "trace.json"
    labels = run(tmp_path, PYGOMP_PROFILE=str(path))
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == dict(enumerate(labels))             # a track per device, named by it
    spans = [e for e in events if e["ph"] == "X"]
    for e in spans:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["cat"]
        assert e["ts"] >= 0 and e["dur"] >= 0
    threads = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in spans} <= threads
    initial = len(labels) - 1
    for dev in range(len(labels)):
        mine = [e for e in spans if e["pid"] == dev]
        by = {}
        for e in mine:
            by.setdefault(e["name"], []).append(e)
        runs = by["run saxpy"]
        launches = runs + by.get("start saxpy", [])     # nowait on a queue: started
        assert len(launches) == 3 and all(r["args"]["kernel"] == "saxpy" and
                                          r["args"]["launch"] == [0, 0, 0] for r in launches)
        assert "load image" in by and len(by["map"]) >= 3 and len(by["unmap"]) >= 3
        for r in launches:          # each launch lies in its construct, on its thread
            assert any(t["tid"] == r["tid"] and t["ts"] <= r["ts"] and
                       r["ts"] + r["dur"] <= t["ts"] + t["dur"]
                       for t in by["target"] + by.get("target nowait", []))
        if dev == initial:          # shared memory: nothing allocated or copied
            assert not {"alloc", "free", "copy host to device"} & set(by)
            continue
        assert [e["args"]["kernels"] for e in by["compile"]] == [["saxpy"]]
        assert {e["args"]["bytes"] for e in by["alloc"]} == {8000}
        assert len(by["alloc"]) == len(by["free"]) == 4
        to = by["copy host to device"]
        assert {(e["args"]["bytes"], e["args"]["direction"]) for e in to} == {
            (8000, "host to device")}
        back = by["copy device to host"]
        assert {(e["args"]["bytes"], e["args"]["direction"]) for e in back} == {
            (8000, "device to host")}
        assert len(to) == 4 and len(back) == 3          # y, then x and y of the nowait call


def test_no_trace_no_wrapping():
    code = textwrap.dedent("""
        import numpy as np, pygomp
        from pygomp.runtime import devices, mapping, trace
        a = np.zeros(4)
        with pygomp.target_data(0, tofrom=[a]):
            pass
        p = devices.all_devices()[0].plugin
        print(trace.on, mapping.observer is not None, p.tracer is not None,
              "run" in vars(p))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    env.update(PYGOMP_CACHE_DIR=os.environ["PYGOMP_CACHE_DIR"], PYGOMP_DEVICES="host")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "False", "False"]


def test_tracing_is_the_plugins_tracer_hook_on_every_device(tmp_path):
    """Under PYGOMP_PROFILE each plugin has the tracer and no operation of its own
    replaced, and no fast path that the tracer would not see."""
    code = textwrap.dedent("""
        import numpy as np, pygomp
        from pygomp.runtime import devices
        a = np.zeros(4)
        ops = {"run", "run_async", "launcher", "wait", "alloc", "free", "host2dev",
               "dev2host", "load_image", "compile", "synchronize"}
        for d in devices.all_devices():
            with pygomp.target_data(d.number, tofrom=[a]):
                pass
            p = d.plugin
            print(p.name, p.tracer is not None, sorted(ops & set(vars(p))), p.fast_path())
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    env.update(PYGOMP_CACHE_DIR=os.environ["PYGOMP_CACHE_DIR"],
               PYGOMP_PROFILE=str(tmp_path / "t.json"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(line.split()[1:] == ["True", "[]", "False"] for line in lines)


def test_a_tracer_sees_each_checked_operation_of_every_plugin(tmp_path):
    """A new instance of each device's plugin class, traced: every operation, runs too,
    goes through the tracer with its arguments, and the kernel's results are right."""
    import numpy as np
    from pygomp.runtime import devices
    (tmp_path / "bumpmod.py").write_text(textwrap.dedent("""
        import pygomp as omp

        @omp.target
        def bump(x, v: float):
            for i in omp.parallel_range(x.shape[0]):
                x[i] += v
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import bumpmod
    finally:
        sys.path.remove(str(tmp_path))
    x = np.zeros(100)
    for d in devices.all_devices():
        if d.plugin.name not in ("host", "opencl"):
            continue
        bumpmod.bump.on(d.number)(x, 1.0)       # compiled, the image on the device
        host_fn = bumpmod.bump.spec((x, 1.0)).symbol.address
        (_, image, _), = [v for v in d.loaded.values() if host_fn in v[0].functions]
        seen = []

        def tracer(plugin, op, args, call):
            seen.append((op, args[0]))
            return call(*args)
        p = type(d.plugin)()
        p.trace_with(tracer)
        dev = d.local
        p.init_device(dev)
        fn, = p.load_image(dev, image, 1, 0).functions
        y = np.arange(100.0)
        a = p.alloc(dev, y.nbytes)
        p.host2dev(dev, a, y.ctypes.data, y.nbytes)
        words = [a, 100, int(np.float64(2.0).view(np.int64))]
        p.run(dev, fn, words)
        p.wait(dev, p.run_async(dev, fn, words))
        prepare, start = p.launcher(dev, fn, (0, 0, 0), 3)
        start(prepare(words))                   # traced: through run
        p.dev2host(dev, y.ctypes.data, a, y.nbytes)
        p.free(dev, a)
        p.synchronize(dev)
        p.unload_image(dev, image)
        np.testing.assert_array_equal(y, np.arange(100.0) + 6.0)
        assert [op for op, _ in seen if op != "identity"] == [
            "init", "load_image", "alloc", "host2dev", "run", "run_async", "wait", "run",
            "dev2host", "free", "synchronize", "unload_image"], d
        assert {where for _, where in seen} == {dev}
