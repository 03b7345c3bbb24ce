"""The runtime core: devices, offload images, the per-device interval map, map semantics.

What the faces (Python constructs, kernels, the C shim) call:

    from pygomp.runtime import devices, mapping, kinds
    dev = devices.resolve(device)         # None: the default device; see its table of numbers
    dev = devices.resolve(n, compiled=True)   # numbers compiled C passes (-1 ICV, -2 host)
    mapping.target(dev, fn, items, launch=(0, 0, 0))   # GOMP_target_ext
    event, region = mapping.start(dev, fn, items, launch, wait_for); ...; mapping.end(region)
    mapping.enter_data(dev, items) / mapping.exit_data(dev, items) / mapping.update(dev, items)
    region = mapping.begin(dev, items); ...; mapping.end(region)   # target data
    mapping.is_present / device_address / associate / disassociate   # omp_* routines
    call = calls.Call(dev, fn, items, slots); call.run(values)   # a repeated call, while
                                                                  # call.fresh()

An item is ``Item(addr, size, kind, obj, name, align)``: host address, byte count, a
libgomp map kind (`kinds`), the Python object that owns the memory (kept alive while
mapped) or None, a name for error messages, and (OpenACC constructs of C programs) the
alignment libgomp's kind gives, else None.  For FIRSTPRIVATE_INT the address field holds the value
itself (a 64-bit word).  Plugins and images: `plugin` (the interface, `KernelInfo`,
`Image`), `images` (descriptor tables); compiled images are cached by `cache`.
"""
