"""The kernel contract between dialects, plugins and the runtime, with hand-written
images: multi-entry kernels with global and private scratch, events, compiling per
device identity."""
import numpy as np
import pytest

import pygomp.kernels as omp
from pygomp import CompileError, PluginError
from pygomp.runtime import devices, images, kinds, mapping
from pygomp.runtime.images import HostSymbol, OffloadImage
from pygomp.runtime.mapping import Item
from pygomp.runtime.plugin import DONE, Kernel, KernelInfo, Source, program

from runtime_helpers import (CountingHostPlugin, addr, dev, fresh_device,  # noqa: F401
                             installed_devices, plugin, registered, settings)

# One kernel in three launches: the mean of x (one work-item), x - mean into y (every
# work-item, through a private array of n doubles each), the number of runs so far.
# Words: x, n, y, out; then the global scratch (double sum, long runs, long width) and
# the private scratch.
HOST_SOURCE = r"""
#include <stdint.h>
void mean(uint64_t *args, const int64_t *launch)
{
    double *x = (double *) args[0], *s = (double *) args[4];
    int64_t n = (int64_t) args[1];
    s[0] = 0;
    for (int64_t i = 0; i < n; i++) s[0] += x[i];
    ((int64_t *) s)[1] += 1;
    ((int64_t *) s)[2] = 1;
}
void center(uint64_t *args, const int64_t *launch)
{
    double *x = (double *) args[0], *y = (double *) args[2], *s = (double *) args[4];
    double *mine = (double *) args[5];
    int64_t n = (int64_t) args[1];
    for (int64_t i = 0; i < n; i++) mine[i] = x[i] - s[0] / n;
    for (int64_t i = 0; i < n; i++) y[i] = mine[i];
}
void report(uint64_t *args, const int64_t *launch)
{
    int64_t *out = (int64_t *) args[3], *s = (int64_t *) args[4];
    out[0] = s[1];
    out[1] = s[2];
}
"""

OPENCL_SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define PARAMS __global double *x, ulong xo, long n, __global double *y, ulong yo, \
               __global long *out, ulong oo, __global ulong *scratch, __global ulong *priv
#define ARGS x = (__global double *)((__global char *)x + xo); \
             y = (__global double *)((__global char *)y + yo); \
             out = (__global long *)((__global char *)out + oo); \
             __global double *s = (__global double *) scratch
#define ID (get_global_id(0) + get_global_id(1) * get_global_size(0))
#define WIDTH (get_global_size(0) * get_global_size(1))
__kernel void mean(PARAMS)
{
    ARGS;
    s[0] = 0;
    for (long i = 0; i < n; i++) s[0] += x[i];
    scratch[1] += 1;
    scratch[2] = WIDTH;
}
__kernel void center(PARAMS)
{
    ARGS;
    __global double *mine = (__global double *) priv + ID * n;
    for (long i = ID; i < n; i += WIDTH) mine[i] = x[i] - s[0] / n;
    for (long i = ID; i < n; i += WIDTH) y[i] = mine[i];
}
__kernel void report(PARAMS)
{
    ARGS;
    out[0] = scratch[1];
    out[1] = scratch[2];
}
"""

CUDA_SOURCE = r"""
#define PARAMS unsigned long long xw, long long n, unsigned long long yw, \
               unsigned long long ow, unsigned long long *scratch, double *priv
#define ARGS double *x = (double *)xw, *y = (double *)yw, *s = (double *)scratch; \
             long long *out = (long long *)ow
#define ID ((blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x)
#define WIDTH (gridDim.x * blockDim.y * blockDim.x)
extern "C" __global__ void mean(PARAMS)
{
    ARGS;
    s[0] = 0;
    for (long long i = 0; i < n; i++) s[0] += x[i];
    scratch[1] += 1;
    scratch[2] = WIDTH;
}
extern "C" __global__ void center(PARAMS)
{
    ARGS;
    double *mine = priv + ID * n;
    for (long long i = ID; i < n; i += WIDTH) mine[i] = x[i] - s[0] / n;
    for (long long i = ID; i < n; i += WIDTH) y[i] = mine[i];
}
extern "C" __global__ void report(PARAMS)
{
    ARGS;
    out[0] = scratch[1];
    out[1] = scratch[2];
}
"""
SOURCES = {"host": HOST_SOURCE, "opencl": OPENCL_SOURCE, "cuda": CUDA_SOURCE}

CENTER = KernelInfo("center3", ("mean", "center", "report"), ("p", "i64", "p", "p"),
                    levels=("", "gwv", ""), scratch_bytes=16, gang_bytes=8,
                    private=((8, (1,)),))


def _devices_of(name):
    return [d for d in devices.all_devices() if not d.is_initial and d.plugin.name == name]


@pytest.fixture(params=sorted(SOURCES))
def center_table(request):
    """The three-entry kernel on a device of each plugin, registered."""
    found = _devices_of(request.param)
    if not found:
        pytest.skip(f"no {request.param} device")
    d = found[0]
    image = d.plugin.compile(d.local, Source(SOURCES[request.param], (CENTER,)))
    sym = HostSymbol("center3")
    with registered(OffloadImage([sym.address], [], (image,), "center3", [sym])):
        yield d, sym.address


def test_entries_run_in_order_with_persistent_scratch(center_table):
    d, fn = center_table
    x = np.random.default_rng(5).random(1000)
    for run in (1, 2, 3):
        y, out = np.zeros(1000), np.zeros(2, np.int64)
        mapping.target(d, fn, [Item(addr(x), x.nbytes, kinds.TO, x),
                               Item(x.shape[0], 0, kinds.FIRSTPRIVATE_INT),
                               Item(addr(y), y.nbytes, kinds.FROM, y),
                               Item(addr(out), out.nbytes, kinds.FROM, out)],
                       launch=(4, 2, 8) if run == 3 else (0, 0, 0))
        np.testing.assert_allclose(y, x - x.mean(), atol=1e-12)
        assert out.tolist() == [run, 1]     # runs counted in the scratch; "" is one item


# Three one-item entries that log their number into out (out[0]: how many so far); e0
# sets scratch word 0 (a repeat count) to 2 and word 1 (a while counter) to 3, e2 counts
# word 1 down, e1 sets word 0 back to 0.  Words: out, then the global scratch.
LOG_HOST = r"""
#include <stdint.h>
#define LOG(k) int64_t *out = (int64_t *) args[0], *s = (int64_t *) args[1]; \
               out[1 + out[0]++] = k
void e0(uint64_t *args, const int64_t *launch) { LOG(0); s[0] = 2; s[1] = 3; }
void e1(uint64_t *args, const int64_t *launch) { LOG(1); s[0] = 0; }
void e2(uint64_t *args, const int64_t *launch) { LOG(2); s[1] -= 1; }
"""
LOG_OPENCL = r"""
#define LOG(k) out = (__global long *)((__global char *)out + oo); out[1 + out[0]++] = k
__kernel void e0(__global long *out, ulong oo, __global long *s) { LOG(0); s[0] = 2; s[1] = 3; }
__kernel void e1(__global long *out, ulong oo, __global long *s) { LOG(1); s[0] = 0; }
__kernel void e2(__global long *out, ulong oo, __global long *s) { LOG(2); s[1] -= 1; }
"""
LOG_CUDA = r"""
#define LOG(k) long long *out = (long long *)ow; out[1 + out[0]++] = k
extern "C" __global__ void e0(unsigned long long ow, long long *s) { LOG(0); s[0] = 2; s[1] = 3; }
extern "C" __global__ void e1(unsigned long long ow, long long *s) { LOG(1); s[0] = 0; }
extern "C" __global__ void e2(unsigned long long ow, long long *s) { LOG(2); s[1] -= 1; }
"""
LOG_SOURCES = {"host": LOG_HOST, "opencl": LOG_OPENCL, "cuda": LOG_CUDA}


@pytest.mark.parametrize("plugin_name", sorted(LOG_SOURCES))
@pytest.mark.parametrize("program, order", [
    ((), [0, 1, 2]),
    ((1, 0, 1), [1, 0, 1]),
    ((2, 0, ("repeat", 0, (1, 2)), ("while", 1, (2,)), 1), [2, 0, 1, 2, 1, 2, 2, 1]),
])
def test_a_kernels_program_orders_its_launches(plugin_name, program, order):
    found = _devices_of(plugin_name)
    if not found:
        pytest.skip(f"no {plugin_name} device")
    d = found[0]
    info = KernelInfo("log3", ("e0", "e1", "e2"), ("p",), levels=("", "", ""),
                      scratch_bytes=16, program=program)
    image = d.plugin.compile(d.local, Source(LOG_SOURCES[plugin_name], (info,)))
    sym = HostSymbol("log3")
    with registered(OffloadImage([sym.address], [], (image,), "log3", [sym])):
        for _ in range(2):                  # the scratch persists between runs
            out = np.zeros(16, np.int64)
            mapping.target(d, sym.address, [Item(addr(out), out.nbytes, kinds.TOFROM, out)])
            assert out[1:1 + out[0]].tolist() == order


def test_a_program_reads_its_words_when_it_reaches_them():
    words = {3: [2], 4: [1, 1, 0]}          # what the scratch words read, in turn
    order = program((0, ("repeat", 3, (1, 2)), ("while", 4, (3,)), 4),
                    lambda w: words[w].pop(0))
    assert list(order) == [0, 1, 2, 1, 2, 3, 3, 4]


class Whole(Kernel):
    """A kind of kernel that enqueues a run's whole program at once where it can."""

    def __init__(self, info, at_once):
        super().__init__(info, 0x20)
        self.at_once, self.log = at_once, []

    def _start_impl(self, args, plan, scratch, wait_for):
        return list(args)

    def _program_impl(self, run):
        if self.at_once:
            self.log.append(("program", run))
        return self.at_once

    def _launch_impl(self, run, entry):
        self.log.append(entry)

    def _end_impl(self, run):
        self.log.append("end")
        return DONE


@pytest.mark.parametrize("at_once, log", [
    (True, [("program", [7, 8]), "end"]),
    (False, [1, 0, 1, "end"]),
])
def test_a_kernel_may_enqueue_its_whole_program_at_once(at_once, log):
    """`Kernel._program_impl` takes the whole run, or leaves the entries to the base."""
    k = Whole(KernelInfo("k", ("a", "b"), ("i64", "i64"), program=(1, 0, 1)), at_once)
    assert k.run([7, 8], [0, 0, 0], ()) is DONE
    assert k.log == log


class Grouped(Kernel):
    """Launch sizes as a work-group plugin gives them: 32 lanes and 8 workers by
    default, 10 gangs, at most 64 work-items per group."""
    max_group = 64

    def _group_impl(self, levels, vector, workers):
        return (vector or (32 if "v" in levels else 1),
                workers or (8 if "w" in levels else 1))

    def _gangs_impl(self, entry, group):
        return 10


@pytest.mark.parametrize("launch, gangs, sizes", [
    ((0, 0, 0), 10, [(10, (1, 1)), (10, (32, 2)), (1, (1, 1))]),
    ((3, 4, 0), 3, [(3, (1, 4)), (3, (32, 2)), (1, (1, 1))]),
    ((0, 1, 100), 10, [(10, (50, 1)), (10, (50, 1)), (1, (1, 1))]),
])
def test_launch_sizes_default_and_fit_the_kernel(launch, gangs, sizes):
    """Per entry (levels "g", "gwv", ""): its gangs and (vector, workers); a group too
    large is halved, workers first."""
    k = Grouped(KernelInfo("k", ("a", "b", "c"), levels=("g", "gwv", "")), 0x10)
    assert k.geometry(launch) == (gangs, sizes)


def test_unloading_an_image_forgets_its_kernels():
    p = CountingHostPlugin()
    info = KernelInfo("log3", ("e0", "e1", "e2"), ("p",), levels=("", "", ""),
                      scratch_bytes=16)
    image = p.compile(0, Source(LOG_HOST, (info,)))
    out = np.zeros(8, np.int64)
    fn = p.load_image(0, image, 1, 0).functions[0]
    p.load_image(0, image, 1, 0)            # loaded twice (the initial device shares it)
    p.unload_image(0, image)
    assert p.kernel_info(fn) is info
    p.run(0, fn, [addr(out)])
    assert out[:4].tolist() == [3, 0, 1, 2]
    p.unload_image(0, image)
    assert p.kernel_info(fn) is None
    with pytest.raises(PluginError, match=f"^host device 0: run: no kernel is loaded at "
                                          f"{fn:#x}$"):
        p.run(0, fn, [addr(out)])


def test_run_checks_the_device_number():
    p = CountingHostPlugin()
    info = KernelInfo("log3", ("e0", "e1", "e2"), ("p",), levels=("", "", ""),
                      scratch_bytes=16)
    image = p.compile(0, Source(LOG_HOST, (info,)))
    fn = p.load_image(0, image, 1, 0).functions[0]
    out = np.zeros(8, np.int64)
    for _ in range(2):
        with pytest.raises(PluginError, match=r"^host: run: no device 1 \(the plugin has 1\)$"):
            p.run(1, fn, [addr(out)])
        with pytest.raises(PluginError, match=r"^host: run: no device -1 "):
            p.run_async(-1, fn, [addr(out)])
    assert not out.any()                    # nothing ran
    p.unload_image(0, image)


def test_word_count_is_checked(center_table):
    d, fn = center_table
    dev_fn = mapping.function_address(d, fn)
    with pytest.raises(PluginError, match="kernel center3 takes 4 argument words, got 3"):
        d.plugin.run(d.local, dev_fn, [0, 0, 0])


def test_run_async_events_and_synchronize(center_table):
    d, fn = center_table
    x = np.arange(64.0)
    y, out = np.zeros(64), np.zeros(2, np.int64)
    event, region = mapping.start(d, fn, [Item(addr(x), x.nbytes, kinds.TO, x),
                                          Item(64, 0, kinds.FIRSTPRIVATE_INT),
                                          Item(addr(y), y.nbytes, kinds.FROM, y),
                                          Item(addr(out), out.nbytes, kinds.FROM, out)])
    if not d.plugin.asynchronous:
        assert event is DONE                # no queue: finished on return
    d.plugin.synchronize(d.local)
    event.wait()
    mapping.end(region)
    np.testing.assert_allclose(y, x - x.mean())


def test_missing_capability_is_a_compile_error(dev):
    unit = Source("void k(void) {}", (KernelInfo("k", requires=("subgroups",)),))
    with pytest.raises(CompileError, match=r"^kernel k uses subgroups; host device 0 "
                                           r"\(host\) cannot run it$"):
        dev.plugin.compile(dev.local, unit)


class ElsewherePlugin(CountingHostPlugin):
    """The host plugin, claiming another device identity; it counts its builds."""
    builds = 0

    def _identity_impl(self, dev):
        return "host:elsewhere"

    def _compile_impl(self, dev, unit):
        self.builds += 1
        return super()._compile_impl(dev, unit)


@omp.target
def add_one(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] += 1.0


def test_images_are_compiled_per_device_identity():
    other = fresh_device(0, ElsewherePlugin())
    initial = fresh_device(1, is_initial=True)
    with installed_devices([other, initial], settings()):
        x = np.zeros(10)
        add_one.on(0)(x)
        add_one.on(1)(x)
        assert (x == 2).all()
        spec = add_one.spec((x,))
        assert set(spec.tables) == {"host:elsewhere", initial.identity}
        assert initial.identity.startswith("host:") and initial.identity != "host:elsewhere"
        for d in (other, initial):
            table = spec.tables[d.identity]
            assert id(table) in d.loaded and d.loaded[id(table)][1].identity == d.identity
            assert id(spec.tables[({other.identity, initial.identity} - {d.identity}).pop()]) \
                not in d.loaded
        assert other.plugin.builds == 1     # the other identity was compiled anew, once
        for d in (other, initial):
            d.finalize()
        for table in spec.tables.values():
            images.unregister(table)
        spec.tables.clear()
