"""The numbers that csrc/shim.c and pygomp/abi.py share, written once.

build.py writes them into the library's C source ahead of shim.c (`c_text`: an enum per
`ENUMS` entry, a ``#define`` per `DEFINES` entry); abi.py reads them from here.  A name
shim.c uses and this table lacks fails the build; the ones whose Python home is
elsewhere (pygomp/build.py, pygomp/openacc/, runtime/gcc_images.py, runtime/faults.py) are
compared with it
in tests/test_shim_contract.py.
"""
from __future__ import annotations

from types import SimpleNamespace


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

# Target types of the offload tables that go to Python (GOMP_offload_register_ver).
TARGET_TYPE = 0x7067            # pygomp's own (pygomp/build.py's tables)
NVIDIA_PTX = 5                  # GOMP_DEVICE_NVIDIA_PTX: GCC's nvptx images
# OpenACC's (openacc.h).
ASYNC_SYNC = -2                 # acc_async_sync
ACC_DEVICE_NONE = 0             # acc_device_t, as pg_call_acc's type
ACC_DEVICE_HOST = 2
ACC_DEVICE_HOST_NONSHM = 3
ACC_DEVICE_NOT_HOST = 4

# The plans of regions that C runs itself (shim.c, runtime/calls.py): items at most, and
# the flags of an item made at each region.
PLAN_ITEMS = 8
PLAN_MADE = 1
PLAN_TO = 2
PLAN_FROM = 4

# The host plugin's guarded allocations (runtime/faults.py), as shim.c makes its made
# items: a header (address ^ magic, size, header size) before, a pattern after.
GUARD_HEAD = 64
GUARD_TAIL = 64
GUARD_MAGIC = 0x7079676F6D70
GUARD_PATTERN = 0xFD

DEFINES = ("PLAN_ITEMS", "PLAN_MADE", "PLAN_TO", "PLAN_FROM", "TARGET_TYPE", "NVIDIA_PTX",
           "ASYNC_SYNC", "ACC_DEVICE_NONE", "ACC_DEVICE_HOST", "ACC_DEVICE_HOST_NONSHM",
           "ACC_DEVICE_NOT_HOST", "GUARD_HEAD", "GUARD_TAIL", "GUARD_MAGIC", "GUARD_PATTERN")


def c_text() -> str:
    """The table in C, for the top of the library's source."""
    out = ["/* csrc/contract.py, written by build.py */"]
    for prefix, numbers in ENUMS.items():
        out.append("enum { " + ", ".join(f"{prefix}{name} = {value}"
                                         for name, value in vars(numbers).items()) + " };")
    out += [f"#define {name} ({globals()[name]})" for name in DEFINES]
    return "\n".join(out) + "\n"
