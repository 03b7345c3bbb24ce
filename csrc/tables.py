"""Offload tables: GOMP_offload_register_ver and GOMP_offload_unregister_ver of the
target types shim.c hands to Python: pygomp's own (the tables `python -m pygomp build`
writes, docs/c-tables.md: the images' code and a JSON description of their kernels)
and GCC's nvptx images (runtime/gcc_images.py).  Each becomes an `images.OffloadImage`
in the runtime's process-wide list; the launch sizes of a table's functions are kept
(`launch`) for the regions that run them.
"""
from __future__ import annotations

import json

from ..runtime import gcc_images, images
from ..runtime.plugin import Image, KernelInfo
from . import abi

_tables = {}                    # a C table's address -> its registered OffloadImage
launch = {}                     # a table function's host address -> its launch sizes

MAGIC = b"pygomp1\0"          # pygomp/build.py's tables (docs/c-tables.md)
META, N_CODES, CODES, SIZES = 1, 2, 3, 4    # the words of its struct pygomp_table


def pg_py_table(registering, target_type, version, host_table, data):
    """GOMP_offload_register_ver (``registering``) or unregister of a table of one of the
    target types shim.c hands over (pygomp's, or GCC's nvptx images: `gcc_images`)."""
    ffi = abi.ffi
    if registering and target_type == gcc_images.NVIDIA_PTX:
        _tables[host_table] = images.register(gcc_images.table(version, host_table, data))
        return 1
    if not registering:
        table = _tables.pop(host_table, None)
        if table is not None:
            images.unregister(table)
            for f in table.functions:
                launch.pop(f, None)
        return 1
    if ffi.buffer(ffi.cast("char *", data), 8)[:] != MAGIC:
        raise ValueError(f"the offload table at {data:#x} is not pygomp's (no {MAGIC!r})")
    words = ffi.cast("uint64_t *", data)
    meta = json.loads(ffi.string(ffi.cast("char *", words[META])).decode())
    if len(meta["images"]) != words[N_CODES]:
        raise ValueError(f"the offload table at {data:#x} has the code of {words[N_CODES]} "
                         f"images for {len(meta['images'])} images")
    codes = ffi.cast("uint64_t *", words[CODES])
    sizes = ffi.cast("uint64_t *", words[SIZES])
    ends = ffi.cast("uint64_t *", host_table)        # GCC's: functions, then variables
    functions, pairs = (ffi.unpack(ffi.cast("uint64_t *", lo), (hi - lo) // 8) if hi > lo
                        else [] for lo, hi in ((ends[0], ends[1]), (ends[2], ends[3])))
    imgs = tuple(
        Image(m["target"], ffi.buffer(ffi.cast("char *", codes[i]), sizes[i])[:],
              tuple(KernelInfo(**{k: tuple(v) if isinstance(v, list) else v
                                  for k, v in info.items()}) for info in m["kernels"]),
              tuple(tuple(v) for v in m["variables"]), m["identity"], m["name"])
        for i, m in enumerate(meta["images"]))
    table = images.OffloadImage(functions=functions, variables=list(zip(pairs[::2], pairs[1::2])),
                                images=imgs, name=meta["name"])
    for f in functions:
        launch[f] = tuple(meta["launch"])
    _tables[host_table] = images.register(table)
    return 1
