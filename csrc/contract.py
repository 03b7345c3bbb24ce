"""The numbers that shim.c and the Python half of libpygomp.so share, written once.

build.py writes them into the library's C source ahead of shim.c (`c_text`: an enum per
`ENUMS` entry, a ``#define`` per `DEFINES` entry); the Python half reads them from here.
A name shim.c uses and this table lacks fails the build.  The numbers whose home is in
the runtime (its plans, guarded allocations, GCC's image type, OpenACC's synchronous
queue) are taken from there; the copies kept in the faces (pygomp/build.py,
pygomp/openacc/) are compared with these in tests/test_shim_contract.py.
"""
from __future__ import annotations

from types import SimpleNamespace

from ..runtime.accprof import ASYNC_SYNC  # noqa: F401  (acc_async_sync, openacc.h)
from ..runtime.calls import PLAN_FROM, PLAN_ITEMS, PLAN_MADE, PLAN_TO  # noqa: F401
from ..runtime.faults import HEAD as GUARD_HEAD, MAGIC as GUARD_MAGIC  # noqa: F401
from ..runtime.faults import PATTERN as GUARD_PATTERN, TAIL as GUARD_TAIL  # noqa: F401
from ..runtime.gcc_images import NVIDIA_PTX  # noqa: F401  (GOMP_DEVICE_NVIDIA_PTX)


def _numbered(names: str) -> SimpleNamespace:
    """``names`` numbered 0, 1, ... in order (plain ints: as quick to read as globals)."""
    return SimpleNamespace(**{name: i for i, name in enumerate(names.split())})


# What pg_run does with a construct (pg_py_data's op).
Op = _numbered("TARGET DATA UPDATE ENTER EXIT")

# What pg_py_acc_data does.
AccOp = _numbered("DATA ENTER EXIT ENTER_EXIT UPDATE DECLARE WAIT")

# The acc_* routines that shim.c hands to pg_py_acc, by number.
Routine = _numbered("""
    GET_NUM_DEVICES SET_DEVICE_TYPE GET_DEVICE_TYPE SET_DEVICE_NUM GET_DEVICE_NUM INIT
    SHUTDOWN MALLOC FREE COPYIN CREATE COPYOUT COPYOUT_FINALIZE DELETE DELETE_FINALIZE
    UPDATE_DEVICE UPDATE_SELF IS_PRESENT DEVICEPTR HOSTPTR MAP_DATA UNMAP_DATA
    MEMCPY_TO_DEVICE MEMCPY_FROM_DEVICE ATTACH DETACH DETACH_FINALIZE ASYNC_TEST
    ASYNC_TEST_ALL WAIT WAIT_ALL WAIT_ASYNC WAIT_ALL_ASYNC GET_PROPERTY GET_PROPERTY_STRING
    CUDA_DEVICE CUDA_CONTEXT CUDA_STREAM SET_CUDA_STREAM
""")

ENUMS = {"OP_": Op, "ACC_": AccOp, "R_": Routine}      # C prefix -> its numbers

# Target types of the offload tables that go to Python (GOMP_offload_register_ver):
# pygomp's own (pygomp/build.py's tables), and NVIDIA_PTX, GCC's nvptx images.
TARGET_TYPE = 0x7067
# OpenACC's (openacc.h): acc_device_t, as pg_call_acc's type.
ACC_DEVICE_NONE = 0
ACC_DEVICE_HOST = 2
ACC_DEVICE_HOST_NONSHM = 3
ACC_DEVICE_NOT_HOST = 4

# C's #defines: the numbers above, and the runtime's imported at the top: the plans of
# regions that C runs itself (PLAN_*: at most so many items, the flags of an item made at
# each region; runtime/calls.py) and the host plugin's guarded allocations, as shim.c
# makes a plan's made items (GUARD_*: a header, address ^ magic, size, header size,
# before, a pattern after; runtime/faults.py).
DEFINES = ("PLAN_ITEMS", "PLAN_MADE", "PLAN_TO", "PLAN_FROM", "TARGET_TYPE", "NVIDIA_PTX",
           "ASYNC_SYNC", "ACC_DEVICE_NONE", "ACC_DEVICE_HOST", "ACC_DEVICE_HOST_NONSHM",
           "ACC_DEVICE_NOT_HOST", "GUARD_HEAD", "GUARD_TAIL", "GUARD_MAGIC", "GUARD_PATTERN")


def c_text() -> str:
    """The table in C, for the top of the library's source."""
    out = ["/* contract.py, written by build.py */"]
    for prefix, numbers in ENUMS.items():
        out.append("enum { " + ", ".join(f"{prefix}{name} = {value}"
                                         for name, value in vars(numbers).items()) + " };")
    out += [f"#define {name} ({globals()[name]})" for name in DEFINES]
    return "\n".join(out) + "\n"
