"""The layers import only downwards (docs/architecture.md): the runtime imports neither
the compiler nor a plugin (plugins are found through entry points), the compiler imports
no face, and running compiled images does not import the compiler."""
import ast
import os
import pathlib
import re
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
FACES = {"pygomp.kernels", "pygomp.api", "pygomp.constructs", "pygomp.cli", "pygomp.openacc",
         "pygomp.upc", "pygomp.abi", "pygomp.shim", "pygomp.demo", "pygomp.__main__"}


def imports(path: pathlib.Path, package: str):
    """Every module a file imports, anywhere in it, with relative imports resolved."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def layer(folder, package):
    return {p.name: imports(p, package) for p in sorted((ROOT / folder).glob("*.py"))}


def _below(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_runtime_imports_no_compiler_plugin_or_face():
    bad = {"pygomp.compiler", "pygomp_plugins", "pyopencl", "cupy", "mpi4py"} | FACES
    found = {f: sorted(m for m in mods if _below(m, bad))
             for f, mods in layer("pygomp/runtime", "pygomp.runtime").items()}
    assert {f: m for f, m in found.items() if m} == {}


def test_compiler_imports_no_face_and_no_plugin():
    bad = FACES | {"pygomp_plugins", "pyopencl", "cupy"}
    found = {f: sorted(m for m in mods if _below(m, bad))
             for f, mods in layer("pygomp/compiler", "pygomp.compiler").items()}
    assert {f: m for f, m in found.items() if m} == {}


MAP_MODULES = ("entries", "mapping", "attach", "accmap", "calls", "intervals")


def test_only_the_map_modules_touch_the_map():
    """Entries and reference counts are read and changed in the map's modules only
    (runtime/entries.py, mapping.py, attach.py, accmap.py, calls.py, intervals.py), and
    entries are born and die, and counts change, in runtime/entries.py only."""
    touching = re.compile(r"\.map\.(find|lookup|insert|remove)\b|refcount|\bEntry\(")
    owners = {f"pygomp/runtime/{m}.py" for m in MAP_MODULES}
    found = [str(p.relative_to(ROOT)) for folder in ("pygomp", "plugins")
             for p in sorted((ROOT / folder).rglob("*.py"))
             if str(p.relative_to(ROOT)) not in owners and touching.search(p.read_text())]
    assert found == []
    changing = re.compile(r"\.map\.(insert|remove)\b|\.refcount\s*[-+]?=[^=]|\bEntry\(")
    found = [m for m in MAP_MODULES if m not in ("entries", "intervals")
             and changing.search((ROOT / "pygomp" / "runtime" / f"{m}.py").read_text())]
    assert found == []


def test_the_runtime_has_no_import_loop():
    """No runtime module imports, at its top or in a function, one that imports it back
    (directly or through others)."""
    graph = {f[:-3]: {m.split(".")[2] for m in mods if m.startswith("pygomp.runtime.")}
             for f, mods in layer("pygomp/runtime", "pygomp.runtime").items()}

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for m in graph.get(todo.pop(), ()):
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen
    assert sorted(m for m in graph if m in reach(m)) == []


def test_errors_import_nothing_of_pygomp():
    assert not [m for m in imports(ROOT / "pygomp" / "errors.py", "pygomp")
                if m.startswith("pygomp")]


def test_plugins_runtime_halves_do_not_import_the_compiler():
    for p in sorted((ROOT / "plugins").glob("*/*.py")):
        if p.name in ("target.py", "loops.py"):     # dialects build on the compiler
            continue
        mods = imports(p, f"pygomp_plugins.{p.parent.name}")
        assert not [m for m in mods if _below(m, {"pygomp.compiler"} | FACES)], p


RUN_IMAGE = textwrap.dedent("""
    import sys
    import numpy as np
    from pygomp.runtime import devices, images, kinds, mapping
    from pygomp.runtime.images import HostSymbol, OffloadImage
    from pygomp.runtime.plugin import KernelInfo, Source
    src = '''#include <stdint.h>
    void twice(uint64_t *args, const int64_t *launch)
    { double *a = (double *) args[0]; for (int i = 0; i < 8; i++) a[i] *= 2; }'''
    dev = devices.resolve(0)
    image = dev.plugin.compile(dev.local, Source(src, (KernelInfo("twice", args=("p",)),)))
    sym = HostSymbol("twice")
    images.register(OffloadImage([sym.address], [], (image,), "twice", [sym]))
    a = np.arange(8.0)
    mapping.target(dev, sym.address, [mapping.Item(a.ctypes.data, a.nbytes, kinds.TOFROM, a)])
    assert (a == 2 * np.arange(8.0)).all()
    print(sorted(m for m in sys.modules if m.startswith(("pygomp.compiler", "pygomp.kernels"))))
""")


def test_running_images_does_not_import_the_compiler(tmp_path):
    env = dict(os.environ, PYGOMP_DEVICES="host", PYGOMP_CACHE_DIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", RUN_IMAGE], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "[]"


FACE_ONLY = textwrap.dedent("""
    import sys
    import pygomp
    import pygomp.kernels
    assert pygomp.target and pygomp.Kernel
    print(sorted(m for m in sys.modules if m.startswith("pygomp.compiler")))
""")


def test_the_kernels_face_imports_no_compiler():
    """`import pygomp.kernels` imports no part of the compiler: the types and the kernel
    language's names come when a kernel is defined or a name is first used."""
    p = subprocess.run([sys.executable, "-c", FACE_ONLY], env=dict(os.environ,
                       PYGOMP_DEVICES="host"), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "[]"


def test_the_compiler_names_each_of_its_modules():
    """compiler/__init__.py's table says what every module of the compiler does."""
    folder = ROOT / "pygomp" / "compiler"
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
    named = set(re.findall(r"\b(\w+)\.py\b", doc))
    have = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    assert have - named == set(), "add them to pygomp/compiler/__init__.py"
    assert named - have == set()


def test_every_error_pygomp_raises_has_one_root():
    """Each keeps the builtin base that says its kind, under `pygomp.PygompError`."""
    import pygomp
    from pygomp.cli import UsageError
    from pygomp.runtime import devices, entries, env, faults, plugin, tasks
    from pygomp.upc.world import UPCError
    from pygomp_plugins.opencl.build import OpenCLBuildError
    kinds = {pygomp.CompileError: Exception, UsageError: Exception,
             plugin.PluginError: RuntimeError, faults.OverrunError: RuntimeError,
             OpenCLBuildError: RuntimeError, devices.OffloadError: RuntimeError,
             entries.MappingError: RuntimeError, env.EnvError: ValueError,
             tasks.DependencyFailed: RuntimeError, UPCError: RuntimeError}
    for cls, builtin in kinds.items():
        assert issubclass(cls, pygomp.PygompError) and issubclass(cls, builtin), cls
