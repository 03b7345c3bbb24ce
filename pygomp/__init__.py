"""pygomp: an OpenMP/OpenACC-style offload runtime for Python and C, written in Python.

The kernel names (``target``, ``parallel_range``, ...) are imported from
`pygomp.kernels` on first use, so that importing the runtime alone (as the C face
does) does not import the kernel compiler.
"""
from ._version import VERSION as __version__  # noqa: F401
from .api import *  # noqa: F401,F403  (the omp_* routines)
from .api import omp_initial_device, omp_invalid_device  # noqa: F401
from .constructs import (always, present, target_data, target_enter_data,  # noqa: F401
                         target_exit_data, target_update)
from .errors import CompileError  # noqa: F401
from .runtime.devices import OffloadError, OffloadWarning  # noqa: F401
from .runtime.env import EnvError  # noqa: F401
from .runtime.mapping import MappingError  # noqa: F401
from .runtime.plugin import PluginError  # noqa: F401


_KERNEL_NAMES = ("target", "declare_target", "Kernel", "gang", "worker", "vector",
                 "parallel_range", "shared_array", "barrier", "atomic_add",
                 "atomic_max", "atomic_min", "atomic_exchange", "atomic_cas", "gang_id",
                 "worker_id", "vector_id", "num_gangs", "num_workers", "vector_length")


_TASK_NAMES = ("DependencyFailed", "taskwait")    # its thread pool is imported on use


def __getattr__(name):
    if name in _KERNEL_NAMES:
        from . import kernels
        return getattr(kernels, name)
    if name in _TASK_NAMES:
        from .runtime import tasks
        return getattr(tasks, name)
    raise AttributeError(f"module 'pygomp' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_KERNEL_NAMES) | set(_TASK_NAMES))


__all__ = [n for n in globals() if not n.startswith("_")] + list(_KERNEL_NAMES + _TASK_NAMES)


from .runtime import env as _env  # noqa: E402

_env.display()
