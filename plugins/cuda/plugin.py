"""NVIDIA GPUs through CuPy: one device per GPU (``PYGOMP_DEVICES=cuda:N``).

Discovery asks the driver through ctypes (`driver.py`), so a machine without a driver or
a GPU pays nothing and `unavailable` says why there are no devices; cupy is imported
when a device is first initialized.

Memory comes from CuPy's memory pool (so it is shared with the user's CuPy arrays), one
block per allocation, allocated on the device's stream.  Each device has one stream
(blocking, so it is ordered with CuPy's legacy default stream): copies and launches are
queued on it in order.  A copy from the host goes through pinned staging buffers and
returns once the host memory has been read; a copy to the host returns when it is done
(large ones through the staging buffers too).  A run records an event after the
kernel's launches; waiting for events of the same device costs nothing (the stream
orders them).

Images: `compile` builds a unit's CUDA C with NVRTC (`nvrtc.py`) for the device's own
compute capability: a cubin for ``sm_XY``, or PTX that the driver finishes when NVRTC
does not know the GPU.  The cache key holds the source, the options, the compute
capability (the identity) and NVRTC's version; a cached image loads with no NVRTC call.

GCC's nvptx images (C programs built with ``-foffload=nvptx-none``) load and run as
`gcc.py` says, with libgomp's launch convention: their regions are a kind of kernel
(`_GccKernel`), whose run is one launch.

Kernel parameters: as `KernelInfo` says; the launches of a kernel go on the stream in
order (a scratch word that a program reads waits for the launches before it).

Launch: ``(gangs, workers, vector)`` is a grid of ``gangs`` blocks (``gridDim.x``) of
``vector`` x ``workers`` threads (``blockDim.x``, ``blockDim.y``).  Vector lanes stay
within one warp: ``vector`` is a power of two up to 32.  Levels left 0 get defaults (see
`Kernel.geometry`): 32 lanes, as many workers as make 256 threads, and as many gangs as
the device keeps resident (multiprocessors times the occupancy of the entry).
"""
from __future__ import annotations

import collections
import ctypes
import hashlib
import importlib.util
import itertools
import sys
import threading

from pygomp.runtime.gcc_images import NvptxImage
from pygomp.runtime.plugin import DeviceArray, DeviceInfo, Kernel, Plugin, PluginError

from . import driver, gcc, nvrtc

cupy = None                 # imported by the first device initialization

# NVRTC's options for every kernel; --fmad=false: ``a * b + c`` rounds as numpy does
OPTIONS = ("--std=c++17", "-default-device", "--disable-warnings", "--fmad=false")
CHUNK = 2 << 20             # bytes of one pinned staging buffer
RING = 16                   # at most this many staging buffers per device
DIRECT = 1 << 20            # smaller copies to the host skip the staging buffers
THREADS = 256               # default threads per block
_tls = threading.local()    # the device this thread last made current
CudaHandles = collections.namedtuple("CudaHandles", "device context stream")
CudaHandles.__doc__ = """OpenACC's CUDA interop of a device: the address of its CUdevice
(a C int), its CUcontext and the CUstream its copies and launches go on."""


def _cupy():
    global cupy
    if cupy is None:
        import cupy as cp
        cupy = cp
    return cupy


class _Staging:
    """Pinned host buffers of one device, each with the event of its last copy."""

    def __init__(self):
        self.lock = threading.Lock()
        self.slots = collections.deque()       # [pinned memory, event or None]

    def take(self, busy=None):
        """A buffer free to fill (not ``busy``): an idle one, a new one, or the oldest
        once its copy is done."""
        for slot in self.slots:
            if slot is not busy and (slot[1] is None or slot[1].done):
                break
        else:
            if len(self.slots) < RING:
                slot = [cupy.cuda.alloc_pinned_memory(CHUNK), None]
                self.slots.append(slot)
                return slot
            slot = next(s for s in self.slots if s is not busy)
            slot[1].synchronize()
        self.slots.remove(slot)
        self.slots.append(slot)
        return slot


class _Device:
    """The CuPy objects of one initialized GPU."""

    def __init__(self, ordinal):
        self.ordinal = ordinal
        cupy.cuda.runtime.free(0)              # makes the primary context
        self.stream = cupy.cuda.Stream(non_blocking=False)
        self.pool = cupy.get_default_memory_pool()
        self.blocks = {}                       # device address -> cupy MemoryPointer
        self.modules = {}                      # digest of an image's code -> module
        self.images = {}                       # id(image) -> ([fn addrs], [var addrs])
        self.staging = _Staging()
        self.stacks = None                     # GCC's OpenMP soft stacks (gcc.py)
        self.cu_device = ctypes.c_int(ordinal)  # acc_get_current_cuda_device's CUdevice


class _OnDevice(Kernel):
    """A kernel on one GPU: it runs with the GPU current, and a run's event is one
    recorded on the device's stream after its launches."""

    def __init__(self, plugin, dev, d, info, address):
        super().__init__(info, address)
        self.plugin, self.dev, self.d = plugin, dev, d

    def run(self, args, launch, wait_for):
        with _On(self.d.ordinal):
            return super().run(args, launch, wait_for)

    def _end_impl(self, run):
        event = cupy.cuda.Event(block=False, disable_timing=True)
        event.record(self.d.stream)
        return _Event(event, self.dev, self.info.name, self.plugin)


class _Kernel(_OnDevice):
    """A kernel's entry functions on one GPU, and the parameter block its launches read."""
    shares_arguments = True           # one parameter block

    def __init__(self, plugin, dev, d, functions, info, address):
        super().__init__(plugin, dev, d, info, address)
        self.functions = functions
        self.props = plugin.devices()[dev].properties
        n = len(info.args) + info.has_scratch + bool(info.private)
        self.values = (ctypes.c_uint64 * max(n, 1))()
        base = ctypes.addressof(self.values)
        self.params = (ctypes.c_void_p * max(n, 1))(*[base + 8 * i for i in range(n)])
        self.max_group = min(self.props["max_threads_per_block"], *(
            cupy.cuda.driver.funcGetAttribute(
                cupy.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f)
            for f in functions))
        self.max_gangs = self.props["max_grid_dim_x"]

    def _group_impl(self, levels, vector, workers):
        vector = vector or (32 if "v" in levels else 1)
        vector = 1 << (min(vector, 32).bit_length() - 1)      # a power of two <= 32
        return vector, workers or (max(THREADS // vector, 1) if "w" in levels else 1)

    def _gangs_impl(self, entry, group):
        threads = group[0] * group[1]
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            self.functions[entry], threads, self.info.tree_bytes * threads)
        return self.props["multiprocessors"] * max(per_sm, 1)

    def _plan_impl(self, launch):
        """The gangs, and per entry its function, grid, block and dynamic shared memory."""
        gangs, sizes = self.geometry(launch)
        return gangs, [(f, grid, block, self.info.tree_bytes * block[0] * block[1])
                       for f, (grid, block) in zip(self.functions, sizes)]

    def _scratch_impl(self, size, old, have):
        d, rt = self.d, cupy.cuda.runtime       # the stream orders it before later launches
        with d.stream:
            block = d.pool.malloc(size)
        rt.memsetAsync(block.ptr, 0, size, d.stream.ptr)
        if have:
            rt.memcpyAsync(block.ptr, old.ptr, have, rt.memcpyDeviceToDevice, d.stream.ptr)
        return block

    def _start_impl(self, args, plan, scratch, wait_for):
        _wait_for(self.d, self.dev, wait_for)
        n = len(args)
        self.values[:n] = args
        if scratch is not None:
            self.values[n] = scratch.ptr
            n += 1
        return plan[1], n, args         # the steps, the private scratch's word, the words

    def _launch_impl(self, run, entry):
        steps, n, args = run
        f, grid, block, shared = steps[entry]
        info = self.info
        if info.private:
            per = info.private_part(args)
            size = per * grid * block[0] * block[1]
            try:
                self.values[n] = self.grow("private", size).ptr
            except cupy.cuda.memory.OutOfMemoryError:
                raise PluginError(
                    f"kernel {info.name} needs {per} bytes of private arrays a "
                    f"thread, {size} bytes for its {size // per} threads: more "
                    f"than {self.plugin.label(self.dev)} can allocate") from None
        cupy.cuda.driver.launchKernel(f, grid, 1, 1, block[0], block[1], 1, shared,
                                      self.d.stream.ptr, ctypes.addressof(self.params), 0)

    def _word_impl(self, run, word):
        out, rt = ctypes.c_int64(), cupy.cuda.runtime
        rt.memcpyAsync(ctypes.addressof(out), self.buffers["scratch"][0].ptr + 8 * word, 8,
                       rt.memcpyDeviceToHost, self.d.stream.ptr)
        self.d.stream.synchronize()
        return out.value


class _GccKernel(_OnDevice):
    """A region of a GCC nvptx image (`gcc.py`): any number of argument words (the
    region's, as GCC lays them out), and a run that is one launch with libgomp's
    convention and geometry."""

    def __init__(self, plugin, dev, d, region, info, address):
        super().__init__(plugin, dev, d, info, address)
        self.region = region            # gcc.Kernel
        self.nwords = None

    def _plan_impl(self, launch):
        props, k = self.plugin.devices()[self.dev].properties, self.region
        try:
            return 1, (gcc.omp_geometry(k, props, launch) if k.mode == "omp"
                       else gcc.acc_geometry(k, props, launch))
        except PluginError as e:
            raise PluginError(f"{self.plugin.label(self.dev)}: {e}") from None

    def _start_impl(self, args, plan, scratch, wait_for):
        _wait_for(self.d, self.dev, wait_for)
        return list(args), plan[1]

    def _program_impl(self, run):
        args, geometry = run
        gcc.launch(cupy, self.d, self.plugin.devices()[self.dev].properties, self.region,
                   args, geometry)
        return True


class _Event:
    """The end of a kernel's launches on a device's stream."""
    __slots__ = ("event", "device", "name", "plugin")

    def __init__(self, event, device, name, plugin):
        self.event, self.device, self.name, self.plugin = event, device, name, plugin

    def wait(self):
        try:
            self.event.synchronize()
        except Exception as e:
            raise PluginError(f"{self.plugin.label(self.device)}: kernel {self.name} "
                              f"failed: {type(e).__name__}: {e}") from None


class _On:
    """``with _On(ordinal):`` GPU ``ordinal`` is current in this thread (its context
    bound), and the thread's own current GPU is back afterwards."""
    __slots__ = ("ordinal", "prev")

    def __init__(self, ordinal):
        self.ordinal = ordinal

    def __enter__(self):
        rt = cupy.cuda.runtime
        self.prev = rt.getDevice()
        bound = _tls.__dict__.setdefault("bound", set())
        if self.prev != self.ordinal or self.ordinal not in bound:
            rt.setDevice(self.ordinal)
            bound.add(self.ordinal)

    def __exit__(self, *exc):
        if self.prev != self.ordinal:
            cupy.cuda.runtime.setDevice(self.prev)


def _torn_down(e):
    """Whether ``e`` says that CUDA is being torn down: the program is exiting (a C
    program's exit handlers may run after CUDA's)."""
    errors = (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError)
    # 4: cudaErrorCudartUnloading and CUDA_ERROR_DEINITIALIZED alike
    return isinstance(e, errors) and getattr(e, "status", None) == 4


class _UnlessExiting:
    """``with _UnlessExiting():`` releasing what CUDA itself is tearing down is no
    error: the device's memory and modules go with it.  The destructors of cupy's
    streams and events, which run after that, then say nothing either."""
    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if not _torn_down(e):
            return False
        if not getattr(sys.unraisablehook, "pygomp_cuda", False):
            sys.unraisablehook = _quiet_after_cuda(sys.unraisablehook)
        return True


def _quiet_after_cuda(hook):
    def quiet(report):
        if not _torn_down(report.exc_value):
            hook(report)
    quiet.pygomp_cuda = True
    return quiet


class CudaPlugin(Plugin):
    name = "cuda"
    target = "cuda"
    title = "CUDA"
    asynchronous = True
    capabilities = frozenset({"fp64", "int64_atomics", "generic_address_space"})

    def __init__(self):
        super().__init__()
        self._addresses = itertools.count(0x1000)   # one per loaded kernel
        self.unavailable = ""                   # why there are no devices

    # -- discovery ---------------------------------------------------------
    def _devices_impl(self):
        try:
            gpus = driver.find()
        except driver.Unavailable as e:
            self.unavailable = str(e)
            return []
        if importlib.util.find_spec("cupy") is None:
            self.unavailable = (f"{len(gpus)} GPU(s), but cupy is not installed "
                                f"(pip install 'pygomp[cuda]')")
            return []
        return [_describe(i, g) for i, g in enumerate(gpus)]

    # -- compiling -----------------------------------------------------------
    def capability(self, dev) -> int:
        """The compute capability of a device as an int (9.0 -> 90)."""
        major, minor = self.devices()[dev].properties["compute_capability"].split(".")
        return 10 * int(major) + int(minor)

    def _identity_impl(self, dev):
        return f"cuda:sm_{self.capability(dev)}"

    def _compiler_key(self, dev, unit):
        return f"NVRTC {nvrtc.version()} {nvrtc.target_for(self.capability(dev))} {OPTIONS}"

    def _compile_impl(self, dev, unit):
        name = ", ".join(k.name for k in unit.kernels) or "a module"
        return nvrtc.compile(unit.source, nvrtc.target_for(self.capability(dev)), OPTIONS,
                             name)

    # -- lifetime ------------------------------------------------------------
    def _start_device_impl(self, dev):
        _cupy()
        with _On(dev):
            return _Device(dev)

    def _fini_impl(self, dev):
        d = self._state.get(dev)
        if d is None:
            return
        with _UnlessExiting(), _On(d.ordinal):
            d.stream.synchronize()
            for m in d.modules.values():
                cupy.cuda.driver.moduleUnload(m)
            d.blocks.clear()

    # -- images --------------------------------------------------------------
    def _load_image_impl(self, dev, image):
        d = self._device(dev)
        if isinstance(image, NvptxImage):
            return self._load_gcc(dev, d, image)
        shared = self.devices()[dev].properties["shared_memory_per_block"]
        for k in image.kernels:
            if k.cooperative:
                raise PluginError(f"kernel {k.name} needs all its gangs resident at once; "
                                  f"the CUDA plugin does not launch cooperative kernels")
            if k.team_bytes > shared:
                raise PluginError(f"kernel {k.name} needs {k.team_bytes} bytes of shared "
                                  f"memory per block; {self.label(dev)} has {shared}")
        key = hashlib.sha256(image.code).hexdigest()
        drv = cupy.cuda.driver
        with _On(d.ordinal), self._lock:
            module = d.modules.get(key)
            if module is None:
                module = d.modules[key] = drv.moduleLoadData(image.code)
            kernels = [_Kernel(self, dev, d, [drv.moduleGetFunction(module, e)
                                              for e in info.entries],
                               info, next(self._addresses))
                       for info in image.kernels]   # (two tables may hold the same code)
            vars_ = []
            for _, size in image.variables:
                addr = self._alloc_impl(dev, size)
                cupy.cuda.runtime.memsetAsync(addr, 0, max(size, 1), d.stream.ptr)
                vars_.append(addr)
        d.images[id(image)] = ([k.address for k in kernels], vars_)
        return kernels, vars_

    def _unload_image_impl(self, dev, image):
        d = self._device(dev)
        entry = d.images.pop(id(image), None)
        if entry:
            with _UnlessExiting(), _On(d.ordinal):
                d.stream.synchronize()
            for v in entry[1]:
                d.blocks.pop(v, None)

    # -- memory --------------------------------------------------------------
    def _alloc_impl(self, dev, size):
        d = self._device(dev)
        try:
            with _On(d.ordinal), d.stream:
                block = d.pool.malloc(max(size, 1))
        except cupy.cuda.memory.OutOfMemoryError:
            return 0
        d.blocks[block.ptr] = block
        return block.ptr

    def _free_impl(self, dev, addr):
        d = self._device(dev)
        if d.blocks.pop(addr, None) is None:
            raise PluginError(f"{self.label(dev)}: free: {addr:#x} is no block of this "
                              f"device")

    def _host2dev_impl(self, dev, dst, src, size):
        d = self._device(dev)
        rt = cupy.cuda.runtime
        with _On(d.ordinal), d.staging.lock:
            for off in range(0, size, CHUNK):
                n = min(CHUNK, size - off)
                slot = d.staging.take()
                ctypes.memmove(slot[0].ptr, src + off, n)
                rt.memcpyAsync(dst + off, slot[0].ptr, n, rt.memcpyHostToDevice, d.stream.ptr)
                slot[1] = d.stream.record(slot[1])

    def _dev2host_impl(self, dev, dst, src, size):
        d = self._device(dev)
        rt = cupy.cuda.runtime
        with _On(d.ordinal):
            if size < DIRECT:
                rt.memcpyAsync(dst, src, size, rt.memcpyDeviceToHost, d.stream.ptr)
                d.stream.synchronize()
                return
            with d.staging.lock:
                pending = None                 # the chunk on its way, drained one later
                for off in range(0, size, CHUNK):
                    n = min(CHUNK, size - off)
                    slot = d.staging.take(pending and pending[0])
                    rt.memcpyAsync(slot[0].ptr, src + off, n, rt.memcpyDeviceToHost,
                                   d.stream.ptr)
                    slot[1] = d.stream.record(slot[1])
                    if pending:
                        _drain(pending, dst)
                    pending = (slot, off, n)
                _drain(pending, dst)

    def _dev2dev_impl(self, dev, dst, src, size):
        d = self._device(dev)
        rt = cupy.cuda.runtime
        with _On(d.ordinal):
            rt.memcpyAsync(dst, src, size, rt.memcpyDefault, d.stream.ptr)

    def device_array(self, dev, obj) -> DeviceArray:
        """A CuPy array, or an object with ``__cuda_array_interface__`` or DLPack, in
        this GPU's memory, used in place; the stream waits for CuPy's current one."""
        d = self._device(dev)
        with _On(d.ordinal):
            arr = (cupy.asarray(obj) if hasattr(obj, "__cuda_array_interface__")
                   else cupy.from_dlpack(obj))
            if arr.device.id != d.ordinal:
                raise ValueError(f"it is in the memory of GPU {arr.device.id}, and this "
                                 f"device is GPU {d.ordinal}: copy it there (cupy.asarray "
                                 f"under cupy.cuda.Device({d.ordinal})) or run the kernel "
                                 f"on the device that holds it")
            if not arr.flags.c_contiguous:
                raise TypeError(f"it is not C-contiguous (strides {arr.strides}); pass "
                                f"cupy.ascontiguousarray of it")
            current = cupy.cuda.get_current_stream()
            if current.ptr not in (0, d.stream.ptr):
                d.stream.wait_event(current.record())
        return DeviceArray(arr.data.ptr, arr.dtype, arr.shape, arr)

    def cuda_handles(self, dev) -> CudaHandles:
        """acc_get_current_cuda_device/_context and acc_get_cuda_stream's answers."""
        d = self._device(dev)
        with _On(d.ordinal):
            context = cupy.cuda.driver.ctxGetCurrent()
        return CudaHandles(ctypes.addressof(d.cu_device), int(context), d.stream.ptr)

    def cupy_stream(self, dev):
        """The CuPy stream a device's copies and kernels go on (``with
        plugin.cupy_stream(d):`` orders CuPy work with them)."""
        return self._device(dev).stream

    def _load_gcc(self, dev, d, image):
        props = self.devices()[dev].properties
        with _On(d.ordinal), self._lock:
            regions, vars_ = gcc.load(cupy, d, props, image, self.capability(dev))
            kernels = [_GccKernel(self, dev, d, region, info, next(self._addresses))
                       for region, info in zip(regions, image.kernels)]
        d.images[id(image)] = ([k.address for k in kernels], vars_)
        return kernels, vars_

    def _synchronize_impl(self, dev):
        d = self._device(dev)
        with _On(d.ordinal):
            d.stream.synchronize()


def _wait_for(d, dev, events):
    """The device's stream waits for ``events`` (its own are ordered already)."""
    for e in events:
        if isinstance(e, _Event):
            if e.device != dev:
                d.stream.wait_event(e.event)
        else:
            e.wait()


def _drain(item, dst):
    """Copy a staged chunk to the host once its copy from the device is done."""
    slot, off, n = item
    slot[1].synchronize()
    ctypes.memmove(dst + off, slot[0].ptr, n)


def _describe(ordinal, g) -> DeviceInfo:
    props = {k: v for k, v in g.items() if k not in ("name", "memory")}
    props["capabilities"] = " ".join(sorted(CudaPlugin.capabilities))
    return DeviceInfo(name=g["name"], kind="gpu", platform=f"CUDA driver {g['driver']}",
                      memory=g["memory"], properties=props)
