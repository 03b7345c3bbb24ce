"""pygomp: an OpenMP/OpenACC-style offload runtime for Python and C, written in Python.

The kernel names (``target``, ``parallel_range``, ...) are imported from
`pygomp.kernels` on first use, so that importing the runtime alone (as the C face
does) does not import the kernel compiler; the omp_* routines (`pygomp.api`) and the
data constructs (`pygomp.constructs`) too, so that a program that only calls kernels
does without them.
"""
from ._version import VERSION as __version__  # noqa: F401
from .errors import CompileError, PygompError  # noqa: F401
from .runtime.devices import OffloadError, OffloadWarning  # noqa: F401
from .runtime.env import EnvError  # noqa: F401
from .runtime.mapping import MappingError  # noqa: F401
from .runtime.plugin import PluginError  # noqa: F401


_KERNEL_NAMES = ("target", "declare_target", "Kernel", "gang", "worker", "vector",
                 "parallel_range", "shared_array", "barrier", "atomic_add",
                 "atomic_max", "atomic_min", "atomic_exchange", "atomic_cas", "inclusive",
                 "exclusive", "gang_id",
                 "worker_id", "vector_id", "num_gangs", "num_workers", "vector_length")


_TASK_NAMES = ("DependencyFailed", "taskwait")    # its thread pool is imported on use

_API_NAMES = ("omp_get_default_device", "omp_get_device_num", "omp_get_initial_device",
              "omp_get_mapped_ptr", "omp_get_num_devices", "omp_initial_device",
              "omp_invalid_device", "omp_is_initial_device", "omp_set_default_device",
              "omp_target_alloc", "omp_target_associate_ptr",
              "omp_target_disassociate_ptr", "omp_target_free", "omp_target_is_accessible",
              "omp_target_is_present", "omp_target_memcpy", "omp_target_memcpy_rect")

_CONSTRUCT_NAMES = ("always", "present", "target_data", "target_enter_data",
                    "target_exit_data", "target_update")

_LAZY = {**dict.fromkeys(_KERNEL_NAMES, "pygomp.kernels"),
         **dict.fromkeys(_TASK_NAMES, "pygomp.runtime.tasks"),
         **dict.fromkeys(_API_NAMES, "pygomp.api"),
         **dict.fromkeys(_CONSTRUCT_NAMES, "pygomp.constructs")}


_MODULES = ("api", "constructs")    # pygomp.api and pygomp.constructs, as before


def __getattr__(name):
    import importlib
    if name in _MODULES:
        return importlib.import_module(f"pygomp.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pygomp' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_MODULES))


__all__ = [n for n in globals() if not n.startswith("_")] + list(_LAZY) + list(_MODULES)


from .runtime import env as _env  # noqa: E402

_env.display()
