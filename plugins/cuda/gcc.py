"""GCC's nvptx images (`pygomp.runtime.gcc_images.NvptxImage`) on a CUDA device, with
the launch convention of libgomp's nvptx plugin (GCC 12).

Loading: the driver's JIT links the image's PTX objects (the program's, and the
libgomp, libgcc and newlib pieces mkoffload adds) into one cubin for the GPU, cached on
disk by the PTX's hash, the compute capability and the driver version.  Functions are
the module's ``.entry`` kernels; a `declare target` variable is the module's global of
that name (its PTX initializer is its first value, as under libgomp).

Running: a region's argument words (device addresses and firstprivate values) go into
one device block, whose address is the kernel's first parameter.
- OpenMP ("omp" kernels, three parameters: the block, the soft stacks, a stack's size):
  a grid of ``teams`` blocks of 32 x ``warps`` threads; each warp gets a stack of
  `STACK` bytes (GCC's -msoft-stack), one buffer for the device, grown when needed.
  ``warps`` defaults to 8 (at most what the kernel allows, and 32); ``teams`` to what
  the registers of the GPU hold at once.  Device-side malloc uses CUDA's own heap.
- OpenACC ("acc" kernels, one parameter): ``gangs`` blocks of ``vector`` x ``workers``
  threads; the compiler's dims win over the construct's, and a dim left 0 gets the
  GPU's default (32 lanes, a block's worth of workers, gangs filling the GPU).
Everything goes on the device's stream, so nowait and async work stays in order.
"""
from __future__ import annotations

import collections
import ctypes

from pygomp.runtime import cache
from pygomp.runtime.plugin import PluginError

from . import driver

STACK = 128 << 10           # bytes of one warp's soft stack (libgomp's nvptx plugin)
WARP = 32
MAX_THREADS, NUM_REGS = 0, 4    # CU_FUNC_ATTRIBUTE_*


# mode: "omp" or "acc"; dims: the compiler's (gang, worker, vector), 0 where not fixed
Kernel = collections.namedtuple("Kernel", "name function mode dims max_threads regs")


def load(cupy, d, props, image, capability):
    """Link and load an image on the current GPU: ([Kernel], [variable addresses])."""
    bad = [n for (n, _), link in zip(image.variables, image.links) if link]
    if bad:
        raise PluginError(f"{image.name}: `declare target link` variables ({', '.join(bad)}) "
                          f"are not supported by the CUDA plugin yet")
    import hashlib              # here: a C program's start-up does not need it
    digest = hashlib.sha256(image.code).hexdigest()
    drv = cupy.cuda.driver
    module = d.modules.get(digest)
    if module is None:
        k = cache.key("cuda-nvptx-link", digest, capability, props.get("driver", ""))
        cubin = cache.get_or_build(k, lambda: driver.link(image.ptx, image.name), ".cubin")
        module = d.modules[digest] = drv.moduleLoadData(cubin)
    kernels = []
    for info, mode, dims in zip(image.kernels, image.modes, image.dims):
        f = drv.moduleGetFunction(module, info.name)
        kernels.append(Kernel(info.name, f, mode, tuple(dims),
                              drv.funcGetAttribute(MAX_THREADS, f),
                              drv.funcGetAttribute(NUM_REGS, f)))
    addresses = []
    for name, size in image.variables:
        addr, have = driver.global_address(module, name)
        if have < size:
            raise PluginError(f"{image.name}: variable {name} has {have} bytes on the "
                              f"device, {size} on the host")
        addresses.append(addr)
    return kernels, addresses


def omp_geometry(k: Kernel, props, launch):
    """(teams, warps) of an OpenMP region; launch is (teams, warps, -) with 0: default."""
    warps = launch[1] or 8
    warps = max(min(warps, k.max_threads // WARP, 32), 1)
    fit = props["registers_per_multiprocessor"] // max(k.regs * WARP * warps, 1)
    most = max(fit, 1) * props["multiprocessors"]
    teams = launch[0]
    if teams <= 0 or teams > most:
        teams = most
    return min(teams, props["max_grid_dim_x"]), warps


def acc_geometry(k: Kernel, props, launch):
    """(gangs, workers, vector) of an OpenACC region, as libgomp's nvptx plugin picks
    them without the occupancy calculator."""
    dims = [c or r for c, r in zip(k.dims, launch)]
    block = props["max_threads_per_block"]
    gangs = props["max_threads_per_multiprocessor"] // block * props["multiprocessors"]
    if not dims[2]:
        dims[2] = min(WARP, max(k.max_threads // WARP, 1) * WARP)
    if not dims[1]:
        dims[1] = max(min(block // WARP, k.max_threads // dims[2]), 1)
    if not dims[0]:
        dims[0] = gangs or 1024
    if dims[1] * dims[2] > k.max_threads:
        raise PluginError(f"kernel {k.name}: num_workers {dims[1]} x vector_length {dims[2]} "
                          f"threads per gang, and it can run at most {k.max_threads}; "
                          f"recompile with smaller ones (or -fopenacc-dim=:W:V with "
                          f"W x V <= {k.max_threads})")
    return tuple(dims)


def _stacks(cupy, d, size):
    """The device's soft-stack buffer, at least ``size`` bytes (the stream orders the
    launches that share it; an outgrown buffer goes back to the pool in stream order)."""
    if d.stacks is None or d.stacks.mem.size < size:
        with d.stream:
            d.stacks = d.pool.malloc(size)
    return d.stacks.ptr


def launch(cupy, d, props, k: Kernel, args, geometry):
    """Queue one launch of ``k`` on the device's stream with the argument words."""
    words = (ctypes.c_uint64 * max(len(args), 1))(*args)
    block = None
    if args:
        with d.stream:
            block = d.pool.malloc(8 * len(args))
        rt = cupy.cuda.runtime
        rt.memcpyAsync(block.ptr, ctypes.addressof(words), 8 * len(args),
                       rt.memcpyHostToDevice, d.stream.ptr)
    address = block.ptr if block is not None else 0
    if k.mode == "omp":
        teams, warps = geometry
        values = [address, _stacks(cupy, d, STACK * teams * warps), STACK]
        grid, threads = (teams, 1, 1), (WARP, warps, 1)
    else:
        gangs, workers, vector = geometry
        values = [address]
        grid, threads = (gangs, 1, 1), (vector, workers, 1)
    cells = (ctypes.c_uint64 * len(values))(*values)
    params = (ctypes.c_void_p * len(values))(
        *[ctypes.addressof(cells) + 8 * i for i in range(len(values))])
    cupy.cuda.driver.launchKernel(k.function, *grid, *threads, 0, d.stream.ptr,
                                  ctypes.addressof(params), 0)
    return block                # the caller keeps it until the launch is queued
