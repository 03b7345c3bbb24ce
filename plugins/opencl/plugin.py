"""OpenCL devices through pyopencl (imported lazily, on first discovery).

Memory: each cl.Buffer owns a range of a private virtual address space (memory.py), so
the runtime's int device addresses work as everywhere else and an address inside a buffer
resolves to (buffer, offset).  One in-order queue a device; copies are blocking.

Images are `OpenCLImage` payloads; the kernel ABI is described there.
"""
from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass

from pygomp.runtime.plugin import DeviceInfo, LoadedImage, Plugin, PluginError

from . import build as _build
from .memory import AddressSpace

cl = None            # pyopencl, once imported


def _pyopencl():
    global cl
    if cl is None:
        import pyopencl
        cl = pyopencl
    return cl


@dataclass(frozen=True)
class OpenCLImage:
    """An OpenCL C program and the kernels of its descriptor table.

    functions: ``((kernel_name, arg_types[, levels]), ...)`` in table order.  arg_types
    is a tuple of codes, one a 64-bit word of `run`'s args (except "L" and "G"):

    - ``"p"``: a device address; the kernel takes two parameters for it,
      ``__global T *base, ulong offset`` (bytes); address 0 passes NULL and 0.
    - ``"i8" "u8" "i16" "u16" "i32" "u32" "i64" "u64" "f32" "f64"``: a scalar; the word
      holds its bits (floats as their bit pattern, ints in two's complement).
    - ``"L<n>"``: no word; a ``__local`` buffer of n bytes a work-item (size n times the
      work-group size), for reduction trees sized at launch.
    - ``"G<n>"``: no word; a ``__global ulong *`` scratch buffer of this kernel on this
      device: 64 bytes (a counter, zero before the first launch; kernels leave it zero)
      then n bytes a work-group (partial results).
    levels: the loop levels the kernel partitions ("gwv" for all); a level it does not
    use gets size 1 unless the launch asks otherwise.  requires: capabilities the
    device must have ("fp64", "int64_atomics"); load_image fails clearly otherwise.
    single_item_on_cpu: the kernels work with any work-group size; on a CPU device
    they get work-groups of one work-item and the macro PYGOMP_SINGLE_ITEM_GROUPS
    (unless PYGOMP_OPENCL_CPU_WORKGROUPS=1).  CPU devices always get
    PYGOMP_DEVICE_CPU.
    generic_ok: on a device with the generic address space, build with its -cl-std and
    define PYGOMP_GENERIC_ADDRESS_SPACE (helpers then take plain generic pointers).

    variables: ``((name, size), ...)``: device buffers the plugin allocates (zeroed) for
    the table's variables; kernels receive them as ordinary "p" arguments.

    Launch: ``(gangs, workers, vector)`` becomes a 2-D NDRange, local size
    ``(vector, workers)`` and global size ``(vector, workers * gangs)``: a gang is a
    work-group (``get_group_id(1)``), a worker is ``get_local_id(1)``, a vector lane
    ``get_local_id(0)``.  Levels left 0 get device defaults; a local size above the
    kernel's limit is shrunk (workers first), so kernels read the geometry back with
    ``get_local_size``/``get_num_groups`` and guard their tails.
    """
    source: str
    options: str = ""
    functions: tuple = ()
    variables: tuple = ()
    name: str = ""
    requires: tuple = ()
    single_item_on_cpu: bool = False
    generic_ok: bool = False


_SCALAR_BYTES = {"i8": 1, "u8": 1, "bool": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4,
                 "f32": 4, "i64": 8, "u64": 8, "f64": 8}

_memview = ctypes.pythonapi.PyMemoryView_FromMemory
_memview.restype = ctypes.py_object
_memview.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
_READ, _WRITE = 0x100, 0x200


class _Kernel:
    """A cl.Kernel with its argument decoding, ready to launch."""
    __slots__ = ("kernel", "codes", "masks", "locals_", "max_local", "lock", "name",
                 "levels", "scratch", "scratch_size", "single", "last_args")

    def __init__(self, kernel, codes, max_local, name, levels="gwv"):
        np = _numpy()
        self.kernel, self.codes, self.max_local, self.name = kernel, codes, max_local, name
        self.levels = levels
        self.lock = threading.Lock()
        self.scratch, self.scratch_size = None, 0
        self.single = False
        self.last_args = None
        dtypes, self.masks, self.locals_ = [], [], []
        for c in codes:
            if c == "p":
                dtypes += [None, np.uint64]
                self.masks.append(None)
            elif c[0] in "LG" and c[1:].isdigit():
                self.locals_.append(int(c[1:]))
                dtypes.append(None)
            elif c in _SCALAR_BYTES:
                n = _SCALAR_BYTES[c]
                dtypes.append({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[n])
                self.masks.append((1 << 8 * n) - 1)
            else:
                raise PluginError(f"kernel {name}: unknown argument code {c!r}")
        kernel.set_scalar_arg_dtypes(dtypes)


def _numpy():
    import numpy
    return numpy


class _Device:
    """The OpenCL objects of one initialized device."""

    def __init__(self, cldev):
        self.dev = cldev
        self.ctx = cl.Context([cldev])
        self.queue = cl.CommandQueue(self.ctx, cldev)
        self.last = None                 # the last event enqueued (for nowait/depend)
        self.images = {}                 # id(image) -> (program, [fn addrs], [var addrs])
        self.programs = {}               # (source, options) -> built cl.Program


class OpenCLPlugin(Plugin):
    name = "opencl"
    target = "opencl"

    def __init__(self):
        self._cldevs = []                # cl.Device, by plugin-local number
        self._state = {}                 # number -> _Device
        self._space = AddressSpace()
        self._kernels = {}               # function address -> _Kernel
        self._lock = threading.RLock()

    # -- discovery ---------------------------------------------------------
    def _devices_impl(self):
        try:
            _pyopencl()
            platforms = cl.get_platforms()
        except Exception:                # no pyopencl, no ICD loader, no platform
            return []
        found = []
        for p in platforms:
            try:
                devs = p.get_devices()
            except Exception:
                continue
            found += [(d, _describe(d)) for d in devs]
        order = {"gpu": 0, "accelerator": 1, "cpu": 2}
        found.sort(key=lambda f: order.get(f[1].kind, 3))
        self._cldevs = [d for d, _ in found]
        return [info for _, info in found]

    @property
    def capabilities(self):
        """What every device of this plugin has (see `device_capabilities`)."""
        caps = [self.device_capabilities(i) for i in range(self.num_devices())]
        return frozenset.intersection(*caps) if caps else frozenset()

    def device_capabilities(self, dev: int) -> frozenset:
        return frozenset(self.devices()[dev].properties["capabilities"].split())

    def cl_device(self, dev: int):
        """The pyopencl Device, Context and CommandQueue of a device (initialized)."""
        d = self._device(dev)
        return d.dev, d.ctx, d.queue

    def _device(self, dev):
        d = self._state.get(dev)
        if d is None:
            with self._lock:
                d = self._state.get(dev)
                if d is None:
                    self.devices()
                    d = self._state[dev] = _Device(self._cldevs[dev])
        return d

    # -- lifetime ------------------------------------------------------------
    def _init_impl(self, dev):
        self._device(dev)

    def _fini_impl(self, dev):
        with self._lock:
            d = self._state.pop(dev, None)
        if d is None:
            return
        d.queue.finish()
        for start, size, buf in self._space.buffers():
            if getattr(buf, "_pygomp_dev", None) == dev:
                self._space.remove(start)
        for fns in d.images.values():
            for f in fns[1]:
                self._kernels.pop(f, None)

    # -- images --------------------------------------------------------------
    def _load_image_impl(self, dev, image):
        if not isinstance(image, OpenCLImage):
            raise PluginError(f"opencl: load_image wants an OpenCLImage, got {type(image).__name__}")
        d = self._device(dev)
        missing = set(image.requires) - self.device_capabilities(dev)
        if missing:
            raise PluginError(f"opencl device {dev} ({self.devices()[dev].name}): image "
                              f"{image.name or '?'} needs {', '.join(sorted(missing))}, "
                              f"which the device does not have")
        prg = self.prebuild(dev, image)
        fns = []
        for entry in image.functions:
            kname, codes = entry[0], entry[1]
            levels = entry[2] if len(entry) > 2 else "gwv"
            k = cl.Kernel(prg, kname)
            wg = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, d.dev)
            addr = self._space.reserve(1)
            kern = self._kernels[addr] = _Kernel(k, tuple(codes), wg, kname, levels)
            kern.single = (image.single_item_on_cpu and _single_items()
                           and self.devices()[dev].kind == "cpu")
            fns.append(addr)
        vars_ = []
        for vname, size in image.variables:
            addr = self._alloc_impl(dev, size)
            cl.enqueue_fill_buffer(d.queue, self._space.resolve(addr)[0],
                                   _numpy().uint8(0), 0, max(size, 1)).wait()
            vars_.append(addr)
        d.images[id(image)] = (prg, fns, vars_)
        return LoadedImage(fns, vars_)

    def prebuild(self, dev, image):
        """The built program of an image for a device (memory, then disk cache, then
        the OpenCL compiler); raises OpenCLBuildError with the build log."""
        d = self._device(dev)
        options = self.build_options(dev, image)
        key = (image.source, options)
        prg = d.programs.get(key)
        if prg is None:
            prg = _build.build(cl, d.ctx, d.dev, image.source, options, image.name)
            with self._lock:
                prg = d.programs.setdefault(key, prg)
        return prg

    def build_options(self, dev, image) -> str:
        """The image's options plus what this device needs (see OpenCLImage)."""
        info = self.devices()[dev]
        opts = [image.options] if image.options else []
        if info.kind == "cpu":
            opts.append("-D PYGOMP_DEVICE_CPU=1")
            if image.single_item_on_cpu and _single_items():
                opts.append("-D PYGOMP_SINGLE_ITEM_GROUPS=1")
        if image.generic_ok and "generic_address_space" in self.device_capabilities(dev):
            opts += [f"-cl-std={info.properties['cl_std']}", "-D PYGOMP_GENERIC_ADDRESS_SPACE=1"]
        return " ".join(opts)

    def _unload_image_impl(self, dev, image):
        d = self._device(dev)
        entry = d.images.pop(id(image), None)
        if entry:
            d.queue.finish()
            for f in entry[1]:
                self._kernels.pop(f, None)
            for v in entry[2]:
                self._space.remove(v)

    # -- memory --------------------------------------------------------------
    def _alloc_impl(self, dev, size):
        d = self._device(dev)
        try:
            buf = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE, max(size, 1))
        except cl.MemoryError:
            return 0
        buf._pygomp_dev = dev
        return self._space.add(buf, size)

    def _free_impl(self, dev, addr):
        buf = self._space.remove(addr)
        if getattr(buf, "_pygomp_dev", None) != dev:
            raise PluginError(f"opencl device {dev}: free: {addr:#x} belongs to device "
                              f"{getattr(buf, '_pygomp_dev', '?')}")

    def _resolve(self, dev, addr, size):
        buf, off, left = self._space.resolve(addr)
        if size > left:
            raise PluginError(f"[{addr:#x}..{addr + size:#x}) runs {size - left} bytes past "
                              f"the end of its OpenCL buffer")
        if buf._pygomp_dev != dev:
            raise PluginError(f"{addr:#x} is memory of OpenCL device {buf._pygomp_dev}")
        return buf, off

    def _host2dev_impl(self, dev, dst, src, size):
        d = self._device(dev)
        buf, off = self._resolve(dev, dst, size)
        d.last = cl.enqueue_copy(d.queue, buf, _memview(src, size, _READ), dst_offset=off,
                                 is_blocking=True)

    def _dev2host_impl(self, dev, dst, src, size):
        d = self._device(dev)
        buf, off = self._resolve(dev, src, size)
        d.last = cl.enqueue_copy(d.queue, _memview(dst, size, _WRITE), buf, src_offset=off,
                                 is_blocking=True)

    def _dev2dev_impl(self, dev, dst, src, size):
        d = self._device(dev)
        dbuf, doff = self._resolve(dev, dst, size)
        sbuf, soff = self._resolve(dev, src, size)
        if dbuf is sbuf and abs(doff - soff) < size:       # OpenCL forbids overlap
            tmp = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE, size)
            cl.enqueue_copy(d.queue, tmp, sbuf, src_offset=soff, byte_count=size)
            sbuf, soff = tmp, 0
        d.last = cl.enqueue_copy(d.queue, dbuf, sbuf, src_offset=soff, dst_offset=doff,
                                 byte_count=size)
        d.last.wait()

    # -- launches ------------------------------------------------------------
    def _run_impl(self, dev, fn, args, launch):
        self._enqueue(dev, fn, args, launch, None).wait()

    def run_async(self, dev, fn, args, launch=(0, 0, 0), wait_for=None):
        """Enqueue a launch and return its cl.Event (``.wait()``); for nowait/depend."""
        return self._call("run_async", dev, f"function {fn:#x}", self._enqueue,
                          dev, fn, args, launch, wait_for)

    def synchronize(self, dev: int) -> None:
        """Wait for everything enqueued on a device."""
        self._call("synchronize", dev, "", lambda: self._device(dev).queue.finish())

    def _enqueue(self, dev, fn, args, launch, wait_for):
        k = self._kernels.get(fn)
        if k is None:
            raise PluginError(f"no OpenCL kernel at {fn:#x}")
        if len(args) != len(k.masks):
            raise PluginError(f"kernel {k.name} takes {len(k.masks)} argument words, "
                              f"got {len(args)}")
        d = self._device(dev)
        local = self.local_size(dev, k, launch)
        lsize = local[0] * local[1]
        gangs = launch[0] or (self.default_gangs(dev) if "g" in k.levels else 1)
        with k.lock:
            vals = []
            words = iter(args)
            masks = iter(k.masks)
            extra = iter(k.locals_)
            for c in k.codes:
                if c[0] == "L":
                    vals.append(cl.LocalMemory(max(next(extra) * lsize, 8)))
                    continue
                if c[0] == "G":
                    vals.append(self._scratch(d, k, 64 + next(extra) * gangs))
                    continue
                w, m = next(words), next(masks)
                if m is not None:
                    vals.append(w & m)
                elif w:
                    buf, off, _ = self._space.resolve(w)
                    if buf._pygomp_dev != dev:
                        raise PluginError(f"{w:#x} is memory of OpenCL device {buf._pygomp_dev}")
                    vals += (buf, off)
                else:
                    vals += (None, 0)
            if vals != k.last_args:             # same words as last time: keep them set
                k.kernel.set_args(*vals)
                k.last_args = vals
            d.last = cl.enqueue_nd_range_kernel(d.queue, k.kernel, (local[0], local[1] * gangs),
                                                local, wait_for=wait_for)
        return d.last

    def _scratch(self, d, k, size):
        """The kernel's global scratch buffer, zero-filled when (re)made."""
        if k.scratch_size < size:
            size = max(size, 2 * k.scratch_size)
            buf = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE, size)
            cl.enqueue_fill_buffer(d.queue, buf, _numpy().uint8(0), 0, size)
            k.scratch, k.scratch_size = buf, size
        return k.scratch

    def local_size(self, dev, k, launch):
        """(vector, workers) after defaults and the kernel's work-group limit."""
        if k.single:
            return 1, 1
        _, workers, vector = launch
        info = self.devices()[dev]
        vector = vector or (info.properties["default_vector"] if "v" in k.levels else 1)
        workers = workers or (info.properties["default_workers"] if "w" in k.levels else 1)
        limit = min(k.max_local, info.properties["max_work_group_size"])
        while workers * vector > limit and workers > 1:
            workers = (workers + 1) // 2
        while workers * vector > limit:
            vector = (vector + 1) // 2
        return vector, workers

    def default_gangs(self, dev):
        return self.devices()[dev].properties["default_gangs"]

    def target_hooks(self):
        from . import target
        return target.HOOKS


def _single_items() -> bool:
    return os.environ.get("PYGOMP_OPENCL_CPU_WORKGROUPS", "0") in ("", "0")


def _describe(d) -> DeviceInfo:
    t = d.type
    kind = ("gpu" if t & cl.device_type.GPU else
            "accelerator" if t & cl.device_type.ACCELERATOR else "cpu")
    ext = set(d.extensions.split())
    c_version = d.opencl_c_version            # "OpenCL C 1.2 PoCL"
    major_minor = tuple(int(x) for x in c_version.split()[2].split(".")[:2])
    features = set()
    try:
        features = {f.name for f in d.opencl_c_features}
    except Exception:
        pass
    generic = (major_minor >= (3, 0) and "__opencl_c_generic_address_space" in features
               or (2, 0) <= major_minor < (3, 0))
    caps = set()
    if "cl_khr_fp64" in ext or "__opencl_c_fp64" in features:
        caps.add("fp64")
    if {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= ext:
        caps.add("int64_atomics")
    if generic:
        caps.add("generic_address_space")
    if "cl_khr_subgroups" in ext or "__opencl_c_subgroups" in features:
        caps.add("subgroups")
    cus = d.max_compute_units
    props = {
        "version": d.version, "opencl_c_version": c_version,
        "driver_version": d.driver_version, "compute_units": cus,
        "max_work_group_size": d.max_work_group_size,
        "local_memory": d.local_mem_size,
        "capabilities": " ".join(sorted(caps)),
        "cl_std": "CL2.0" if generic and major_minor < (3, 0) else
                  "CL3.0" if generic else "CL1.2",
        "default_vector": 32 if kind == "gpu" else 16,
        "default_workers": 4,
        "default_gangs": cus * (8 if kind == "gpu" else 64),   # CPUs: many small groups balance
    }
    return DeviceInfo(name=d.name, kind=kind, platform=f"{d.platform.name} ({d.platform.vendor})",
                      memory=d.global_mem_size, properties=props)
