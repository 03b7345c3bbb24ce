"""The work-group lowering's strategies live in the compiler and the dialects only spell
them: no compiler module names a target's ids, sizes, barriers or address spaces."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent

# each a spelling of OpenCL C or CUDA C that only a dialect (plugins/*/target.py) may write
SPELLINGS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__syncwarp",
             "__shfl_xor_sync", "__shared__", "atomicAdd", "atomicCAS", "get_local_id",
             "get_local_size", "get_group_id", "get_num_groups", "get_global_id",
             "get_global_size", "CLK_LOCAL_MEM_FENCE", "__global", "__local", "atom_add",
             "atomic_cmpxchg", "vload", "vstore", "PYGOMP_DEVICE_CPU",
             "PYGOMP_SINGLE_ITEM_GROUPS", "PYGOMP_VECTOR_LOOPS")


def _found(path, word):
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", path.read_text())


def test_every_spelling_is_a_dialects():
    """The list names what the dialects write (so the next test looks for real words)."""
    dialects = sorted(ROOT.glob("plugins/*/target.py"))
    missing = [w for w in SPELLINGS if not any(_found(p, w) for p in dialects)]
    assert not missing, f"no dialect writes {missing}"


def test_no_compiler_module_names_a_targets_ids():
    modules = sorted((ROOT / "pygomp" / "compiler").glob("*.py"))
    assert len(modules) > 20
    named = [f"{p.name}: {w}" for p in modules for w in SPELLINGS if _found(p, w)]
    assert not named, "target spellings in the compiler: " + ", ".join(named)
