"""pygomp: an OpenMP/OpenACC-style offload runtime for Python and C, written in Python."""
from .api import *  # noqa: F401,F403  (the omp_* routines)
from .api import omp_initial_device, omp_invalid_device  # noqa: F401
from .constructs import (always, present, target_data, target_enter_data,  # noqa: F401
                         target_exit_data, target_update)
from .kernels import *  # noqa: F401,F403  (@target, @declare_target, loops, CompileError)
from .runtime.tasks import taskwait  # noqa: F401
from .runtime.devices import OffloadError  # noqa: F401
from .runtime.env import EnvError  # noqa: F401
from .runtime.mapping import MappingError  # noqa: F401
from .runtime.plugin import PluginError  # noqa: F401

__version__ = "0.1.0"

from .runtime import env as _env  # noqa: E402

_env.display()
