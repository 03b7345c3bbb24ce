"""The command line: ``python -m pygomp compile`` and ``info``, run as a user runs them."""
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = '''\
import sys
import numpy as np
import pygomp as omp

print("the script's own output")
n = int(sys.argv[1])            # a script that needs its arguments


@omp.target
def fill(y, value=2.5, count=3):
    for i in omp.parallel_range(count):
        y[i] = value


if __name__ == "__main__":
    raise SystemExit("the main block must not run")
'''


def pygomp(*args, **environ):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    env["PYGOMP_CACHE_DIR"] = os.environ["PYGOMP_CACHE_DIR"]
    env.update(environ)
    return subprocess.run([sys.executable, "-m", "pygomp", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_compile_survives_the_scripts_own_code(tmp_path):
    f = tmp_path / "script.py"
    f.write_text(SCRIPT)
    r = pygomp("compile", str(f))
    assert r.returncode == 0, r.stderr
    # the kernel after the failing line is compiled, with its defaults' types
    assert r.stdout.startswith("// ---- kernel fill(y: array(float64, 1d), value: float64, "
                               "count: int64) target host\n")
    assert "the script's own output" not in r.stdout
    assert r.stderr.splitlines() == [
        "the script's own output",
        f"{f}:6: the file's own code failed (IndexError: list index out of range); that "
        f"statement is skipped"]


def test_compile_types_from_annotations_defaults_and_signatures(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(textwrap.dedent('''\
        import numpy as np
        import pygomp as omp

        @omp.target
        def k(x, a: np.float32, n=4, flag=True):
            for i in omp.parallel_range(n):
                if flag:
                    x[i] = a
    '''))
    r = pygomp("compile", str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == [
        "// ---- kernel k(x: array(float64, 1d), a: float32, n: int64, flag: bool) target host",
        "// (taken as float64 arrays: x; see --signature)"]
    r = pygomp("compile", str(f), "--signature", "k=int32[:],float32,int32,bool")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == ("// ---- kernel k(x: array(int32, 1d), a: float32, "
                                        "n: int32, flag: bool) target host")


@pytest.mark.parametrize("signature, message", [
    ("k=float65[:]", "--signature 'k=float65[:]': unknown type 'float65[:]'; a type is bool, "
                     "int8..int64, uint8..uint64, float32, float64, complex64, complex128, or "
                     "an array of one such as float64[:] or float32[:,:]"),
    ("k=float64[2]", "--signature 'k=float64[2]': unknown type 'float64[2]'; a type is bool, "
                     "int8..int64, uint8..uint64, float32, float64, complex64, complex128, or "
                     "an array of one such as float64[:] or float32[:,:]"),
    ("float64", "--signature 'float64': write NAME=T1,T2,... (a type is bool, int8..int64, "
                "uint8..uint64, float32, float64, complex64, complex128, or an array of one "
                "such as float64[:] or float32[:,:])"),
    ("nosuch=float64", "--signature names 'nosuch', which is no kernel of {f} (kernels: k)"),
])
def test_compile_with_a_bad_signature_says_one_line(tmp_path, signature, message):
    f = tmp_path / "k.py"
    f.write_text("import pygomp as omp\n\n@omp.target\ndef k(x):\n    x[0] = 1.0\n")
    r = pygomp("compile", str(f), "--signature", signature)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "python -m pygomp compile: error: " + message.format(f=f)]


def test_compile_help_says_how_the_file_runs_and_where_types_come_from():
    r = pygomp("compile", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for words in ("sys.argv = [FILE]", "is reported with its line and skipped",
                  "if __name__ == \"__main__\":' block does not run",
                  "the type of its default value", "the parameter's annotation",
                  "--signature saxpy=float32,float32[:],float32[:]"):
        assert words in text, words


@pytest.mark.parametrize("environ, message", [
    ({"PYGOMP_DEVICES": "nosuch"}, "PYGOMP_DEVICES: unknown plugin 'nosuch'; installed "
                                   "plugins: "),
    ({"PYGOMP_DEVICES": "host:7"}, "PYGOMP_DEVICES: 'host:7' matches no device; host has "
                                   "0: host (gcc)"),
    ({"PYGOMP_DEVICES": ""}, "PYGOMP_DEVICES is empty: name devices as plugin[:selector]"),
    ({"OMP_TARGET_OFFLOAD": "sometimes"}, "invalid value for environment variable "
                                          "OMP_TARGET_OFFLOAD: 'sometimes' (expected "
                                          "DEFAULT, MANDATORY or DISABLED)"),
])
def test_info_with_a_bad_setting_says_one_line(environ, message):
    r = pygomp("info", **environ)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m pygomp info: error: " + message)


def test_compile_error_on_a_guessed_type_says_how_to_give_one(tmp_path):
    f = tmp_path / "csr.py"
    f.write_text(textwrap.dedent('''\
        import pygomp as omp

        @omp.target
        def spmv(indptr, y):
            for i in omp.parallel_range(y.shape[0]):
                for k in range(indptr[i], indptr[i + 1]):
                    y[i] += 1.0
        '''))
    r = pygomp("compile", str(f))
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"error: {f}:6: indptr[i] must be an integer, not float64",
        "    for k in range(indptr[i], indptr[i + 1]):",
        "note: indptr, y had no type and were taken as float64 arrays; give the types with "
        "--signature, e.g. --signature spmv=float64[:],float64[:]"]
    r = pygomp("compile", str(f), "--signature", "spmv=int64[:],float64[:]")
    assert r.returncode == 0, r.stderr


def test_language_prints_both_tables_with_a_line_each():
    from pygomp.compiler.callables import ENTRIES, GROUPS
    from pygomp.compiler.frontend import SUPPORTED
    r = pygomp("language")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for kind, k in SUPPORTED.items():
        assert f"    {kind.__name__:<20} {k.doc}" in lines
    assert f"Functions a kernel may call ({len(ENTRIES)}):" in lines
    at = {line.strip(): i for i, line in enumerate(lines)}
    for e in ENTRIES:                   # each under its group's title
        line = f"{e.name:<20} {e.doc}"
        assert line in at, line
        title = max((at[f"{t}:"], g) for g, t in GROUPS.items() if at[f"{t}:"] < at[line])
        assert title[1] == e.group, e.name
