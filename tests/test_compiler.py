"""The kernel compiler: error messages, the IR, the emitted C, the cache and the CLI.

Host-only: these check the compiler itself, not a device."""
import ast
import inspect
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygomp.kernels as omp
from pygomp.compiler import argwords, dialect, emit, frontend, ir, reductions
from pygomp.compiler import types as T
from pygomp.compiler.frontend import CompileError
from pygomp.runtime import cache

HERE = os.path.abspath(__file__)
F64 = T.Array(T.FLOAT64, 1)
F64_2 = T.Array(T.FLOAT64, 2)
ROOT = os.path.dirname(os.path.dirname(HERE))


def host_dialect():
    from pygomp.plugins.host.target import HOOKS
    return HOOKS


def line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if marker in text:
            return start + k, text.strip()
    raise AssertionError(marker)


def compile_error(fn, *types):
    with pytest.raises(CompileError) as info:
        frontend.compile_function(fn, list(types))
    return info.value


# -- kernels that must not compile ----------------------------------------------

def k_try(x):
    try:  # MARK
        x[0] = 1.0
    except Exception:
        pass


def k_listcomp(x):
    y = [v for v in range(3)]  # MARK
    x[0] = y


def k_race(x):
    t = 0.0
    for i in omp.parallel_range(x.shape[0]):
        t += x[i]  # MARK


def k_private_read_after(x):
    t = 0.0
    for i in omp.parallel_range(x.shape[0]):  # MARK
        t = x[i] * 2
        x[i] = t
    x[0] = t


def k_float_to_int(x, n: int):
    n = x[0]  # MARK


def k_undefined(x):
    x[0] = nothere  # MARK  # noqa: F821


def k_rank(x):
    x[0] = x[0, 1]  # MARK


def k_break(x):
    for i in omp.parallel_range(x.shape[0]):
        if x[i] > 0:
            break  # MARK


def k_nesting(x):
    for i in omp.vector(x.shape[0]):
        for j in omp.gang(2):  # MARK
            x[i] = j


def k_private_after(x):
    for i in omp.gang(x.shape[0]):
        t = x[i]
    x[0] = t  # MARK


def k_bad_reduction(x):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="&:s"):  # MARK
        s += x[i]


def k_barrier_in_worker(x):
    for g in omp.gang(2):
        for w in omp.worker(4):
            omp.barrier()  # MARK


def k_slice(x):
    x[0] = x[1:3]  # MARK


def k_return_in_loop(x):
    for i in omp.parallel_range(x.shape[0]):
        return x[i]  # MARK


def k_global_array(x):
    x[0] = GLOBAL_ARRAY[0]  # MARK


GLOBAL_ARRAY = np.zeros(3)


def k_array_arith(x):
    x[0] = x * 2  # MARK


def k_loop_var_assign(x):
    for i in range(3):
        i = 2  # MARK


@omp.declare_target
def h_recursive(n):
    return h_recursive(n - 1) if n > 0 else 0  # MARK


def k_recursive(x):
    x[0] = h_recursive(3)


def k_for_list(x):
    for v in [1, 2]:  # MARK
        x[0] = v


def k_with(x):
    with open("f"):  # MARK
        x[0] = 1.0


def k_lambda(x):
    x[0] = (lambda v: v)(1.0)  # MARK


def k_walrus(x):
    if (n := x.shape[0]) > 1:  # MARK
        x[0] = n


BAD = [
    (k_try, [F64], "try is not supported in kernels"),
    (k_listcomp, [F64], "list comprehension"),
    (k_race, [F64], "'t' is read before this iteration of the parallel loop at line"),
    (k_private_read_after, [F64], "it is read after the loop"),
    (k_float_to_int, [F64, T.INT64], "cannot assign a float64 value to 'n' of type int64"),
    (k_undefined, [F64], "name 'nothere' is not defined"),
    (k_rank, [F64], "x has 1 dimension and the kernel indexes it with 2"),
    (k_break, [F64], "break directly in a parallel loop"),
    (k_nesting, [F64], "a gang loop cannot nest inside a vector loop"),
    (k_private_after, [F64], "private to the parallel loop"),
    (k_bad_reduction, [F64], "operator & does not apply to float64"),
    (k_barrier_in_worker, [F64], "omp.barrier() inside a worker"),
    (k_slice, [F64], "kernels take slices in array assignments"),
    (k_return_in_loop, [F64], "return inside a parallel loop"),
    (k_global_array, [F64], "global array 'GLOBAL_ARRAY'"),
    (k_array_arith, [F64], "a kernel computes array arithmetic only into a sub-array"),
    (k_loop_var_assign, [F64], "assignment to the loop variable 'i'"),
    (k_recursive, [F64], "recursive call of h_recursive"),
    (k_for_list, [F64], "cannot loop over [1, 2]"),
    (k_with, [F64], "with is not supported in kernels"),
    (k_lambda, [F64], "a lambda must be bound to a name (f = lambda v: ...)"),
    (k_walrus, [F64], ":= is not supported in kernels"),
]


@pytest.mark.parametrize("fn,types,text", BAD, ids=[b[0].__name__ for b in BAD])
def test_compile_errors_name_file_line_and_source(fn, types, text):
    err = compile_error(fn, *types)
    where = h_recursive.py_func if fn is k_recursive else fn
    line, src = line_of(where, "# MARK")
    assert text in err.message
    assert err.file == HERE and err.line == line
    assert f"{HERE}:{line}: " in str(err) and src in str(err)


def k_every_kind(x, n: int):
    """Each node kind of frontend.SUPPORTED once or more."""
    t: float = 0.5
    s = 0.0
    for i in range(n):
        if i > 2 and not i == 5:
            continue
        s += x[i] if x.shape[0] > i else -1.0
        while s > 4.0:
            s = s / 2
            break
    pass

    def half(v):
        return v / 2
    x[0] = math.sqrt(abs(s)) + half(t)
    return s


def test_supported_kinds_compile_and_compute_as_python():
    """The table is the list: a kernel with every kind it names, and no other,
    compiles and computes what Python computes."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(k_every_kind))).body[0]
    kinds = {type(n) for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr))}
    assert kinds == set(frontend.SUPPORTED)
    from pygomp.runtime import devices
    x, y = np.arange(1.0, 7.0), np.arange(1.0, 7.0)
    got = omp.target(k_every_kind).on(devices.all_devices()[-1].number)(x, 4)
    assert got == k_every_kind(y, 4) and (x == y).all()


def test_compile_error_is_public():
    import pygomp
    assert getattr(pygomp, "CompileError", CompileError) is CompileError


def test_compile_error_through_the_decorator():
    from pygomp.runtime import devices
    k = omp.target(k_race)
    with pytest.raises(CompileError, match="another iteration"):
        k.on(devices.all_devices()[-1].number)(np.zeros(3))


# -- gcc errors point at the Python line ----------------------------------------

def k_huge_local(x):
    t = np.zeros(2**62, np.float64)  # MARK
    x[0] = t[0]


def test_c_compiler_error_points_at_python_line():
    from pygomp.plugins.host.plugin import compile_c
    fn = reductions.lower(frontend.compile_function(k_huge_local, [F64]))
    unit = emit.emit(fn, host_dialect())
    line, _ = line_of(k_huge_local, "# MARK")
    with pytest.raises(CompileError) as info:
        compile_c(unit.source, fn.file)
    assert f"{os.path.basename(HERE)}:{line}" in str(info.value)
    assert info.value.file == HERE and info.value.line == line
    assert "np.zeros(2**62" in info.value.source


# -- types, IR, emitted code ------------------------------------------------------

def k_types(x, n: int, f: np.float32):
    s = 0
    for i in range(n):
        s += x[i]              # a Python int + float32: float32 (NEP 50)
    a = x[0] * 2.0             # float32 stays float32 (weak literal)
    b = n / 2                  # int / int -> float64
    c = f * 3                  # float32
    d = n // 2 + (-7) % 3      # int64
    x[1] = s + a + b + c + d


def test_type_inference():
    fn = frontend.compile_function(k_types, [T.Array(T.FLOAT32, 1), T.INT64, T.FLOAT64])
    decls = dict(fn.decls)
    assert decls["s"] == T.FLOAT32 and decls["a"] == T.FLOAT32
    assert decls["b"] == T.FLOAT64 and decls["c"] == T.FLOAT32 and decls["d"] == T.INT64
    assert dict(fn.params)["f"] == T.FLOAT32          # the annotation wins


def test_reduction_lowering_four_phases_per_level():
    fn = reductions.lower(frontend.compile_function(_dot_kernel, [F64, F64]))
    loop = next(n for n in ir.walk(fn.body) if isinstance(n, ir.ParLoop))
    assert [(c.phase, c.level) for c in loop.setup + loop.init] == [
        ("SETUP", "gang"), ("SETUP", "worker"), ("SETUP", "vector"),
        ("INIT", "gang"), ("INIT", "worker"), ("INIT", "vector")]
    assert [(c.phase, c.level) for c in loop.fini + loop.teardown] == [
        ("FINI", "vector"), ("FINI", "worker"), ("FINI", "gang"),
        ("TEARDOWN", "vector"), ("TEARDOWN", "worker"), ("TEARDOWN", "gang")]
    chain = [(c.outer, c.local) for c in loop.init]
    assert chain[0][0] == "s" and chain[1][0] == chain[0][1] and chain[2][0] == chain[1][1]
    assert "RedCall" in ir.dump(loop.init)


def _dot_kernel(x, y):
    s = 0.0
    for i in omp.parallel_range(x.shape[0], reduction="+:s"):
        s += x[i] * y[i]
    return s


def test_host_source_has_line_directives_and_openmp():
    fn = reductions.lower(frontend.compile_function(_dot_kernel, [F64, F64]))
    src = emit.emit(fn, host_dialect()).source
    line, _ = line_of(_dot_kernel, "s += x[i]")
    assert f'#line {line} "{HERE}"' in src
    assert "#pragma omp parallel" in src and "#pragma omp simd reduction(+:" in src
    assert "#pragma omp critical" in src


def test_words_layout():
    fn = frontend.compile_function(_dot_kernel, [F64, F64])
    assert [r for _, _, r in argwords.arg_words(fn)] == ["array", "shape", "array", "shape", "ret"]


def test_constants():
    assert dialect.c_const(-1.5, T.FLOAT32, "float") == "(-1.5f)"
    assert dialect.c_const(math.inf, T.FLOAT64, "double") == "INFINITY"
    assert dialect.c_const(-2**63, T.INT64, "int64_t") == "(-9223372036854775807L - 1)"
    assert dialect.c_const(3, T.UINT8, "uint8_t") == "((uint8_t)3)"


# -- the disk cache -----------------------------------------------------------

def test_cache_roundtrip_and_corruption(tmp_path, monkeypatch):
    monkeypatch.setenv("PYGOMP_CACHE_DIR", str(tmp_path))
    built = []
    k = cache.key("source", "host")
    assert cache.get_or_build(k, lambda: built.append(1) or b"DATA") == b"DATA"
    assert cache.get_or_build(k, lambda: built.append(1) or b"NEW") == b"DATA"
    assert len(built) == 1
    path = tmp_path / (k + ".bin")
    path.write_bytes(path.read_bytes()[:-5])            # truncated: not trusted
    assert cache.get(k) is None
    assert cache.get_or_build(k, lambda: built.append(1) or b"AGAIN") == b"AGAIN"
    assert len(built) == 2
    assert cache.key("a", "b") != cache.key("ab", "")


def test_unwritable_cache_dir_falls_back(monkeypatch):
    monkeypatch.setenv("PYGOMP_CACHE_DIR", "/proc/pygomp-cannot-be-here")
    d = cache.directory()
    assert d != "/proc/pygomp-cannot-be-here" and os.access(d, os.W_OK)
    k = cache.key("fallback", os.getpid())
    assert cache.get_or_build(k, lambda: b"ok") == b"ok" and cache.get(k) == b"ok"


SCRIPT = textwrap.dedent("""
    import os, subprocess, sys, numpy as np
    if os.environ.get("FORBID_SUBPROCESS"):
        def forbidden(*a, **k):
            raise AssertionError(f"a compiler ran: {{a}}")
        subprocess.run = subprocess.Popen = forbidden
    sys.path.insert(0, {root!r})
    import pygomp.kernels as omp
    from pygomp.runtime import cache
    from examples_kernel import scale
    x = np.arange(100.0)
    scale.on({dev})(x, 3.0)
    assert (x == np.arange(100.0) * 3).all(), x
    print("builds", cache.stats["builds"])
""")

KERNEL = textwrap.dedent("""
    import pygomp.kernels as omp

    @omp.target
    def scale(x, a: float):
        for i in omp.parallel_range(x.shape[0]):
            x[i] *= a
""")


def _host_device():
    from pygomp.runtime import devices
    return next(d.number for d in devices.all_devices() if d.plugin.name == "host")


def _run(tmp_path, env_extra, dev):
    (tmp_path / "examples_kernel.py").write_text(KERNEL)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), **env_extra)
    return subprocess.run([sys.executable, "-c", SCRIPT.format(root=ROOT, dev=dev)],
                          env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_second_process_runs_cached_kernel_without_gcc(tmp_path):
    dev = _host_device()
    cdir = tmp_path / "cache"
    p = _run(tmp_path, {"PYGOMP_CACHE_DIR": str(cdir)}, dev)
    assert p.returncode == 0 and "builds 1" in p.stdout, p.stderr
    p = _run(tmp_path, {"PYGOMP_CACHE_DIR": str(cdir), "FORBID_SUBPROCESS": "1"}, dev)
    assert p.returncode == 0, p.stderr
    assert "builds 0" in p.stdout


def test_corrupt_entry_is_rebuilt_in_a_new_process(tmp_path):
    dev = _host_device()
    cdir = tmp_path / "cache"
    assert _run(tmp_path, {"PYGOMP_CACHE_DIR": str(cdir)}, dev).returncode == 0
    for f in cdir.glob("*.bin"):
        f.write_bytes(b"garbage")
    p = _run(tmp_path, {"PYGOMP_CACHE_DIR": str(cdir)}, dev)
    assert p.returncode == 0 and "builds 1" in p.stdout, p.stderr


def test_processes_compiling_at_once(tmp_path):
    dev = _host_device()
    (tmp_path / "examples_kernel.py").write_text(KERNEL)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PYGOMP_CACHE_DIR=str(tmp_path / "c"))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT.format(root=ROOT, dev=dev)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert not list((tmp_path / "c").glob(".tmp-*"))


# -- the command line ---------------------------------------------------------

def test_cli_on_a_file(tmp_path, capsys):
    from pygomp import cli
    f = tmp_path / "k.py"
    f.write_text(KERNEL)
    assert cli.main([str(f), "--target", "host"]) == 0
    out = capsys.readouterr().out
    assert "kernel scale(x: array(float64, 1d), a: float64) target host" in out
    assert "#pragma omp simd" in out and f'#line 7 "{f}"' in out


def test_cli_prints_every_kernel_of_an_example(capsys):
    from pygomp import cli
    assert cli.main([os.path.join(ROOT, "examples", "transpose.py"), "--target", "host"]) == 0
    out = capsys.readouterr().out
    assert "kernel transpose(a: array(float64, 2d), b: array(float64, 2d))" in out
    assert "#pragma omp parallel" in out
    assert cli.main([os.path.join(ROOT, "examples", "saxpy.py"),
                     "--signature", "saxpy=float32,float32[:],float32[:]"]) == 0
    out = capsys.readouterr().out
    # the annotation `a: float` wins over the signature's float32 scalar
    assert "kernel saxpy(a: float64, x: array(float32, 1d), y: array(float32, 1d))" in out
    assert "float *x = (float *)args[1];" in out and "double a = pyg_word_double(args[0]);" in out


def test_cli_signature_parsing():
    from pygomp import cli
    sig = cli.parse_signatures(["k=float32[:,:], int64 ,bool[:]"])
    assert sig["k"] == [T.Array(T.FLOAT32, 2), T.INT64, T.Array(T.BOOL, 1)]
