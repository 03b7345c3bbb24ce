"""The runtime core: devices, offload images, the per-device interval map, map semantics.

What the faces (Python constructs, kernels, the C shim) call:

    from pygomp.runtime import devices, mapping, kinds
    dev = devices.resolve(device)         # None: the default device; honours OMP_TARGET_OFFLOAD
    mapping.target(dev, fn, items, launch=(0, 0, 0))   # GOMP_target_ext
    mapping.enter_data(dev, items) / mapping.exit_data(dev, items) / mapping.update(dev, items)
    region = mapping.begin(dev, items); ...; mapping.end(region)   # target data

An item is ``Item(addr, size, kind, obj)``: host address, byte count, a libgomp map kind
(`kinds`), and the Python object that owns the memory (kept alive while mapped), or None.
For FIRSTPRIVATE_INT the address field holds the value itself (a 64-bit word).
"""
