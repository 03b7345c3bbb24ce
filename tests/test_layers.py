"""The layers import only downwards (docs/architecture.md): every part of pygomp (the
runtime, the compiler, the plugins, the C face, the Python faces, upc) imports only the
parts below it; the runtime imports neither the compiler nor a plugin (plugins are found
through entry points) nor a face, and running compiled images does not import the
compiler."""
import ast
import os
import pathlib
import re
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The parts of pygomp, each with its folder and import name (docs/architecture.md,
# "Layers").  Every other module in pygomp/ is one of the Python faces (kernels,
# constructs, api, acc, cli, build, ...), but for the modules every part may use (BASE)
# and the command line (`python -m pygomp`, which may use every part).
PARTS = {"runtime": ("pygomp/runtime", "pygomp.runtime"),
         "compiler": ("pygomp/compiler", "pygomp.compiler"),
         "plugins": ("plugins", "pygomp.plugins"),
         "C face": ("csrc", "pygomp.csrc"),
         "upc": ("pygomp/upc", "pygomp.upc")}
BASE = {"pygomp.errors", "pygomp.frozen", "pygomp._version"}
COMMANDS = {"pygomp.__main__"}
# What each part may import of pygomp besides itself and BASE: only what lies below it.
# The C face calls the omp_* and acc_* routines, written once for both faces (ROUTINES);
# only a plugin's dialect (target.py) imports the compiler (a test below).
MAY_IMPORT = {"runtime": set(),
              "compiler": {"runtime"},
              "plugins": {"runtime", "compiler"},
              "C face": {"runtime"},
              "Python faces": {"runtime", "compiler", "Python faces"},
              "upc": {"runtime", "Python faces"}}
ROUTINES = {"pygomp.api", "pygomp.openacc"}
HEAVY = {"pyopencl", "cupy", "mpi4py"}      # only in the plugin or module that needs them
NO_HEAVY = {"runtime", "compiler", "C face", "Python faces"}


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


def part_of(module):
    """The part a module of pygomp belongs to ("base", "command", a key of MAY_IMPORT);
    None for a module that is not pygomp's."""
    if _below(module, BASE):
        return "base"
    if _below(module, COMMANDS):
        return "command"
    for part, (_, package) in PARTS.items():
        if _below(module, [package]):
            return part
    return "Python faces" if _below(module, ["pygomp"]) else None


def modules(root=ROOT):
    """(path, package it is in) of every module of pygomp, in every part's folder."""
    out = [(p, "pygomp") for p in sorted((root / "pygomp").glob("*.py"))]
    for folder, package in PARTS.values():
        for p in sorted((root / folder).rglob("*.py")):
            inner = p.parent.relative_to(root / folder).parts
            out.append((p, ".".join((package, *inner))))
    return out


def _module_name(path, package):
    return package if path.name == "__init__.py" else f"{package}.{path.stem}"


def upward_imports(root=ROOT):
    """{file: its imports that go up, or sideways into another part}."""
    found = {}
    for path, package in modules(root):
        part = part_of(_module_name(path, package))
        if part == "command":
            continue
        bad = []
        names = imports(path, package)
        for m in names:
            if any(n.startswith(m + ".") for n in names):
                continue        # `from m import n`: n says what is imported
            to = part_of(m)
            if to is None:
                if part in NO_HEAVY and _below(m, HEAVY):
                    bad.append(m)
            elif not (to in (part, "base") or to in MAY_IMPORT[part]
                      or part == "C face" and _below(m, ROUTINES)):
                bad.append(m)
        if bad:
            found[str(path.relative_to(root))] = sorted(bad)
    return found


def test_every_part_is_listed_and_has_modules():
    """Each part's folder is there with its modules, and each module is in one part."""
    parts = [part_of(_module_name(p, pkg)) for p, pkg in modules()]
    assert set(parts) == set(MAY_IMPORT) | {"base", "command"}
    for folder, _ in PARTS.values():
        assert (ROOT / folder / "__init__.py").is_file(), folder


def test_imports_only_go_down():
    """No module imports a part above its own: the runtime imports neither the compiler,
    nor a plugin (plugins are found through entry points), nor a face (the C face
    included); the compiler imports no face and no plugin; the C face imports neither
    the compiler nor a plugin (it runs cached images) nor a Python face but the
    routines; no face imports upc.  pyopencl, cupy and mpi4py are imported only in the
    plugin or module that needs them."""
    assert upward_imports() == {}


def test_an_upward_import_is_caught(tmp_path):
    """The check above sees an import of the C face in the runtime, written either way,
    and one of a Python face in the C face."""
    for folder, text in (("pygomp/runtime", "from ..csrc import contract\n"
                                            "import pygomp.csrc.plans\n"),
                         ("csrc", "from ..kernels import Kernel\nfrom .. import api\n")):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "up.py").write_text(text)
    assert upward_imports(tmp_path) == {
        "pygomp/runtime/up.py": ["pygomp.csrc.contract", "pygomp.csrc.plans"],
        "csrc/up.py": ["pygomp.kernels.Kernel"]}


def test_the_parts_are_imported_by_their_names_in_pygomp():
    """The C face and the plugins are imported as pygomp.csrc and pygomp.plugins, never
    by their folders' names, anywhere in the project."""
    found = {}
    for folder in ("pygomp", "csrc", "plugins", "tests", "bench", "examples"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            bad = [m for m in imports(p, "pygomp") if m.split(".")[0] in
                   ("csrc", "plugins", "pygomp_csrc", "pygomp_plugins")]
            if bad:
                found[str(p.relative_to(ROOT))] = sorted(bad)
    assert found == {}


MAP_MODULES = ("entries", "mapping", "attach", "accmap", "calls", "intervals")


def test_only_the_map_modules_touch_the_map():
    """Entries and reference counts are read and changed in the map's modules only
    (runtime/entries.py, mapping.py, attach.py, accmap.py, calls.py, intervals.py), and
    entries are born and die, and counts change, in runtime/entries.py only."""
    touching = re.compile(r"\.map\.(find|lookup|insert|remove)\b|refcount|\bEntry\(")
    owners = {f"pygomp/runtime/{m}.py" for m in MAP_MODULES}
    found = [str(p.relative_to(ROOT)) for folder in ("pygomp", "plugins", "csrc")
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
        if p.name == "target.py":       # dialects build on the compiler
            continue
        mods = imports(p, f"pygomp.plugins.{p.parent.name}")
        assert not [m for m in mods if part_of(m) == "compiler"], p


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
    from pygomp.plugins.opencl.build import OpenCLBuildError
    kinds = {pygomp.CompileError: Exception, UsageError: Exception,
             plugin.PluginError: RuntimeError, faults.OverrunError: RuntimeError,
             OpenCLBuildError: RuntimeError, devices.OffloadError: RuntimeError,
             entries.MappingError: RuntimeError, env.EnvError: ValueError,
             tasks.DependencyFailed: RuntimeError, UPCError: RuntimeError}
    for cls, builtin in kinds.items():
        assert issubclass(cls, pygomp.PygompError) and issubclass(cls, builtin), cls
