"""What the CUDA driver says about this machine's GPUs, through libcuda and ctypes.

Discovery must cost nothing where there is no GPU, so it asks the driver directly
(``libcuda.so.1``) and never imports cupy: `find` returns the GPUs' descriptions, or
raises `Unavailable` with the reason there are none.
"""
from __future__ import annotations

import ctypes

ATTRIBUTES = {"max_threads_per_block": 1, "max_grid_dim_x": 5, "shared_memory_per_block": 8,
              "warp_size": 10, "multiprocessors": 16, "pci_bus_id": 33,
              "l2_cache": 38, "max_threads_per_multiprocessor": 39,
              "cc_major": 75, "cc_minor": 76, "shared_memory_per_block_optin": 97,
              "max_blocks_per_multiprocessor": 106}


class Unavailable(RuntimeError):
    """No GPU can be used; the message says why."""


def _error(lib, result, what):
    text = ctypes.c_char_p()
    name = ""
    if lib.cuGetErrorName(result, ctypes.byref(text)) == 0 and text.value:
        name = text.value.decode()
    return Unavailable(f"{what} failed: {name or 'error'} ({result})")


def find() -> list[dict]:
    """One dict a GPU: name, memory (bytes), compute capability ("9.0"), driver version
    ("12.4") and the `ATTRIBUTES`."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise Unavailable(f"no CUDA driver ({e})") from None

    def call(what, result):
        if result:
            raise _error(lib, result, what)

    call("cuInit", lib.cuInit(0))
    version, count = ctypes.c_int(), ctypes.c_int()
    call("cuDriverGetVersion", lib.cuDriverGetVersion(ctypes.byref(version)))
    call("cuDeviceGetCount", lib.cuDeviceGetCount(ctypes.byref(count)))
    if count.value == 0:
        raise Unavailable(f"the CUDA driver {version.value // 1000}.{version.value % 1000 // 10}"
                          f" finds no GPU")
    out = []
    for i in range(count.value):
        dev = ctypes.c_int()
        call("cuDeviceGet", lib.cuDeviceGet(ctypes.byref(dev), i))
        name = ctypes.create_string_buffer(256)
        call("cuDeviceGetName", lib.cuDeviceGetName(name, 256, dev))
        mem = ctypes.c_size_t()
        call("cuDeviceTotalMem", lib.cuDeviceTotalMem_v2(ctypes.byref(mem), dev))
        info = {"name": name.value.decode(), "memory": mem.value,
                "driver": f"{version.value // 1000}.{version.value % 1000 // 10}"}
        for key, attr in ATTRIBUTES.items():
            v = ctypes.c_int()
            call("cuDeviceGetAttribute", lib.cuDeviceGetAttribute(ctypes.byref(v), attr, dev))
            info[key] = v.value
        info["compute_capability"] = f"{info.pop('cc_major')}.{info.pop('cc_minor')}"
        out.append(info)
    return out
