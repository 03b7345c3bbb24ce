"""Generated source kept on disk (pygomp.kernel_cache): a new process runs a cached
kernel without importing the compiler, and never runs stale code when what the kernel
reads from outside it (another module's constant, a helper) changes."""
import os
import subprocess
import sys
import textwrap

CONSTS = "K = {k}\n"

HELPERS = textwrap.dedent("""
    import pygomp as omp

    @omp.declare_target
    def twice(v):
        return {body}
""")

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import pygomp as omp
    import consts
    from helpers import twice

    class Opaque:                       # no fingerprint: a kernel that reads it is not kept
        K = 5
    opaque = Opaque()

    @omp.target
    def scale(x):
        for i in range(x.shape[0]):
            x[i] = twice(x[i]) + consts.K

    @omp.target
    def shift(x):
        for i in range(x.shape[0]):
            x[i] = x[i] + opaque.K

    x = np.ones(3)
    if sys.argv[1] == "read-only":      # the cached unit says which arrays it writes
        x.flags.writeable = False
        try:
            scale.on(0)(x)
        except ValueError as e:
            x = ["refused" if "argument 'x' is read-only" in str(e) else str(e)]
    else:
        {{"scale": scale, "shift": shift}}[sys.argv[1]].on(0)(x)
    print(x[0], "pygomp.compiler.frontend" in sys.modules)
""")


def run(tmp_path, kernel, k=1, body="2.0 * v"):
    (tmp_path / "consts.py").write_text(CONSTS.format(k=k))
    (tmp_path / "helpers.py").write_text(HELPERS.format(body=body))
    (tmp_path / "prog.py").write_text(PROGRAM.format())
    env = {n: v for n, v in os.environ.items() if not n.startswith(("OMP_", "PYGOMP_"))}
    env.update(PYGOMP_DEVICES="host", PYGOMP_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(tmp_path))
    r = subprocess.run([sys.executable, str(tmp_path / "prog.py"), kernel], env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    value, compiled = r.stdout.split()
    return (value if value == "refused" else float(value)), compiled == "True"


def test_a_cached_kernel_runs_without_the_compiler(tmp_path):
    assert run(tmp_path, "scale") == (3.0, True)
    assert run(tmp_path, "scale") == (3.0, False)


def test_a_cached_kernel_refuses_a_read_only_array_it_writes(tmp_path):
    assert run(tmp_path, "scale") == (3.0, True)
    assert run(tmp_path, "read-only") == ("refused", False)


def test_what_a_kernel_reads_from_outside_is_checked(tmp_path):
    assert run(tmp_path, "scale") == (3.0, True)
    assert run(tmp_path, "scale", k=10) == (12.0, True)         # another module's constant
    assert run(tmp_path, "scale", k=10) == (12.0, False)
    assert run(tmp_path, "scale", k=10, body="3.0 * v") == (13.0, True)    # a helper
    assert run(tmp_path, "scale", k=10, body="3.0 * v") == (13.0, False)
    assert run(tmp_path, "scale") == (3.0, True)        # back as it was: built anew


def test_a_kernel_reading_an_object_is_not_kept(tmp_path):
    assert run(tmp_path, "shift") == (6.0, True)
    assert run(tmp_path, "shift") == (6.0, True)


FIRST_CALL = textwrap.dedent("""
    import sys
    import numpy as np
    before = set(sys.modules)
    import pygomp as omp

    @omp.target
    def scale(x, a: float):
        for i in range(x.shape[0]):
            x[i] = x[i] * a + 1.0

    x = np.ones(4)
    scale(x, 2.0)
    assert (x == 3.0).all()
    print(" ".join(sorted(set(sys.modules) - before)))
""")

# what a cached kernel's first call needs none of: the compiler's front end and
# emitter, the decorator's check (its source passed it before), the task pool (and
# logging), the C compiler's runner and temporary files, dataclasses (records are
# Frozen), OpenSSL's hashes (the cache uses BLAKE2b), threading (the locks are
# _thread's), bisect.py (_bisect's), OpenACC profiling and PYGOMP_PROFILE's trace (off),
# libpygomp.so's contract (not loaded), the omp_* routines and the data constructs
COMPILE_ONLY = ("pygomp.compiler.frontend", "pygomp.compiler.emit", "pygomp.compiler.dialect",
                "pygomp.compiler.argwords", "pygomp.compiler.ir",
                "pygomp.compiler.precheck", "pygomp.runtime.tasks", "concurrent.futures",
                "logging", "subprocess", "tempfile", "shutil", "json", "dataclasses",
                "_hashlib", "hashlib", "hmac", "threading", "bisect",
                "pygomp.runtime.accprof", "pygomp.runtime.trace", "pygomp.csrc.contract",
                "pygomp.api", "pygomp.constructs")


def _twice(tmp_path, name, script):
    """Run ``script`` in two new processes sharing one cache, host device only."""
    (tmp_path / name).write_text(script)
    env = {n: v for n, v in os.environ.items() if not n.startswith(("OMP_", "PYGOMP_"))}
    env.update(PYGOMP_DEVICES="host", PYGOMP_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(tmp_path / name)], env=env,
                           capture_output=True, text=True, timeout=180) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    return runs


def test_a_cached_first_call_imports_only_what_it_runs(tmp_path):
    compiled, cached = (set(r.stdout.split()) for r in _twice(tmp_path, "first.py", FIRST_CALL))
    assert "pygomp.compiler.frontend" in compiled and "subprocess" in compiled
    assert "dataclasses" in compiled            # the compiler's IR is dataclasses
    assert sorted(cached & set(COMPILE_ONLY)) == []


DECORATED = textwrap.dedent("""
    import pygomp as omp

    def ok(x):
        x[0] = 1.0

    def bad(x):
        for i in omp.parallel_range(x.shape[0]):
            if x[i] > 0:
                break

    for fn in (ok, bad):
        try:
            omp.target(fn)
            print(fn.__name__, "defined")
        except omp.CompileError as e:
            print(fn.__name__, str(e).splitlines()[0].split(": ", 1)[1])
""")


def test_the_decorator_checks_again_what_did_not_pass(tmp_path):
    for r in _twice(tmp_path, "decorated.py", DECORATED):
        assert r.stdout.splitlines() == [
            "ok defined", "bad break directly in a parallel loop is not allowed: it has no "
                          "order to stop"]
    assert len([n for n in os.listdir(tmp_path / "cache") if n.endswith(".checked.bin")]) == 1


def test_the_names_pygomp_imports_on_use_are_those_of_their_modules():
    import pygomp
    import pygomp.api
    import pygomp.constructs
    assert set(pygomp._API_NAMES) == set(pygomp.api.__all__)
    for name in pygomp._CONSTRUCT_NAMES:
        assert getattr(pygomp, name) is getattr(pygomp.constructs, name)
    assert pygomp.omp_get_num_devices is pygomp.api.omp_get_num_devices
    assert set(pygomp._LAZY) <= set(pygomp.__all__) and set(pygomp._LAZY) <= set(dir(pygomp))
