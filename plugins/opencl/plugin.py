"""OpenCL devices through pyopencl (imported lazily, when a device first starts).

Memory: each cl.Buffer owns a range of a private virtual address space (memory.py), so
the runtime's int device addresses work as everywhere else and an address inside a buffer
resolves to (buffer, offset).  One in-order queue per device; copies are blocking,
launches are events (`Plugin.run_async`).  On a CPU device whose buffers over host
memory are that memory (probed once), every buffer is over memory of `hostmem`'s, and a
copy while the queue is quiet (`memory.Quiet`: no launch in flight) is a plain memcpy,
without a command and the wait for it.

Images: `compile` builds a unit's OpenCL C for one device and keeps the program binary;
the key's device identity is the platform, device and driver.  Build options: CPU
devices get ``-D PYGOMP_DEVICE_CPU=1``; when every kernel of a unit works with any
work-group size (`KernelInfo.any_group_size`), CPU devices run them with one work-item
per group and ``-D PYGOMP_SINGLE_ITEM_GROUPS=1`` (unless PYGOMP_OPENCL_CPU_WORKGROUPS=1);
a device with the generic address space builds with its ``-cl-std`` and
``-D PYGOMP_GENERIC_ADDRESS_SPACE=1``; PYGOMP_OPENCL_BUILD_OPTIONS comes last.

Discovery: every device builds and runs a probe kernel (`build.probe`, cached on disk);
one that fails keeps the reason in ``DeviceInfo.problem`` and comes after those that
work.  Every CPU device is the host's CPU: the first that works stands for it, the
others are ``same_as`` it (the wheel's PoCL and the system's, say).  What is found is
kept in the disk cache under a key of what decides it (`_discovery_key`), so that a
process counts its devices without pyopencl and without starting OpenCL (half a second
with PoCL); the first device to start finds them again and checks them against it.

Kernel parameters: as `KernelInfo` says.  The global scratch is one buffer per kernel
and device; the private scratch one buffer for every entry, sized for the largest.

Launch: ``(gangs, workers, vector)`` becomes a 2-D NDRange, local size ``(vector,
workers)`` and global size ``(vector, workers * gangs)``: a gang is a work-group
(``get_group_id(1)``), a worker is ``get_local_id(1)``, a vector lane ``get_local_id(0)``.
Levels left 0 get device defaults and a local size above the kernel's limit is shrunk
(`Kernel.geometry`), so kernels read the geometry back with
``get_local_size``/``get_num_groups`` and guard their tails.  The in-order queue runs
each launch of a kernel to its end before the next; a kernel whose program loops is
enqueued by the C launcher (`launch`) in one call, or on a CPU replaced by its one
work-group entry (`choice`): the kernel's `_program_impl`.  The entries keep their
arguments between runs: they are set again when the words, the launch or the buffers (a
free since) change; a single launch with the arguments set is enqueued from C (`fast`,
the plugin's fast path, which the base installs).
"""
from __future__ import annotations

import ctypes
import hashlib
import marshal
import os
import sys
import time

from pygomp.runtime import cache, faults, hostmem
from pygomp.runtime.plugin import DONE, SCALAR_KINDS, DeviceInfo, Kernel, Plugin, PluginError

from . import build as _build
from . import choice as _choice
from . import fast as _fast
from . import launch as _launch
from .memory import AddressSpace, Quiet

cl = None            # pyopencl, once imported


def _pyopencl():
    global cl
    if cl is None:
        import pyopencl
        cl = pyopencl
    return cl


_memview = ctypes.pythonapi.PyMemoryView_FromMemory
_memview.restype = ctypes.py_object
_memview.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
_READ, _WRITE = 0x100, 0x200


class _Kernel(Kernel):
    """A kernel's cl.Kernel objects (one per entry) on one device."""
    shares_arguments = True           # set on the cl.Kernel objects, kept between runs

    def __init__(self, plugin, dev, d, program, info, address, single, one_group):
        super().__init__(info, address)
        np = _numpy()
        self.plugin, self.dev, self.d, self.single = plugin, dev, d, single
        self.props = plugin.devices()[dev].properties
        self.cpu = plugin.devices()[dev].kind == "cpu"
        self.entries = [cl.Kernel(program, e) for e in info.entries]
        self.max_group = min(self.props["max_work_group_size"], *(
            k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, d.dev)
            for k in self.entries))
        self.last_words = self.last_plan = self.last_frees = None    # see _start_impl
        self.choice = _choice.Choice(one_group) if info.one_group and one_group != "0" \
            else None
        self.held = None                 # what the entries are set to (see _set_args)
        # the device's record of its last launched kernel, and this kernel's line
        self.who = d.fault and faults.line(info, plugin.label(dev), queued=True)
        self.mark = (d.fault[0], d.fault[1], self.who) if self.who else None
        dtypes, self.masks = [], []
        for c in info.args:
            if c == "p":
                dtypes += [None, np.uint64]
                self.masks.append(None)
            elif c in SCALAR_KINDS:
                n = SCALAR_KINDS[c]
                dtypes.append({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[n])
                self.masks.append((1 << 8 * n) - 1)
            else:
                raise PluginError(f"kernel {info.name}: unknown argument code {c!r}")
        dtypes += [None] * (info.has_scratch + bool(info.private) + bool(info.tree_bytes))
        for k in self.entries:
            k.set_scalar_arg_dtypes(dtypes)

    def _group_impl(self, levels, vector, workers):
        if self.single:
            return 1, 1
        return (vector or (self.props["default_vector"] if "v" in levels else 1),
                workers or (self.props["default_workers"] if "w" in levels else 1))

    def _gangs_impl(self, entry, group):
        """The device's default; on a CPU, a kernel whose program loops (many launches a
        run, each group of each costing PoCL the same) gets 8 groups a core, not 64."""
        if self.cpu and any(not isinstance(op, int) for op in self.info.program):
            return self.props["compute_units"] * 8
        return self.props["default_gangs"]

    def _plan_impl(self, launch):
        """The gangs, per entry of the program its cl.Kernel, sizes and team-local tree
        memory, for a program the C launcher's copy of them (None without a launcher),
        for a kernel of one launch that launch's enqueue arguments (else None), the
        one-group entry's step where `choice` may take it (else None), and the launch
        sizes."""
        gangs, sizes = self.geometry(launch)
        steps = [self._step(entry, n, local) for entry, (n, local) in zip(self.entries, sizes)]
        prepared = single = alone = None
        if self.info.program and self.info.has_scratch and _launch.launcher():
            prepared = _launch.Prepared(steps, self.info.program)
        if not self.info.program and len(steps) == 1:
            single = steps[0][:3]
        if self.choice is not None and not launch[0]:     # not when gangs are asked for
            alone = self._step(self.entries[self.info.one_group], 1, self.group(launch))
        return gangs, steps, prepared, single, alone, launch

    def _step(self, entry, gangs, local):
        tree = self.info.tree_bytes
        return (entry, (local[0], local[1] * gangs), local,
                cl.LocalMemory(max(tree * local[0] * local[1], 8)) if tree else None)

    def _start_impl(self, args, plan, scratch, wait_for):
        """Set the entries' arguments if the words, the plan or the buffers changed;
        the run is ``[plan, cl.Events to wait for, last event, choice's timing]``."""
        run = [plan, None, DONE, None]
        if self.d.quiet:                # not quiet from here to `_end_impl`
            self.d.quiet.begin(run)
        if plan is not self.last_plan or self.plugin._frees != self.last_frees \
                or args is not self.last_words and args != self.last_words:
            self._set_args(args, plan, scratch)
        if self.mark is not None:       # the device's last launched kernel, for a fault
            self.mark[0][self.mark[1]] = self.who
        if wait_for:
            run[1] = self._waits(wait_for)
        return run

    @staticmethod
    def _waits(wait_for):
        """The cl.Events of ``wait_for`` (None if none); events of other plugins are
        waited for here."""
        waits = None
        for e in wait_for:
            if isinstance(e, cl.Event):
                waits = (waits or []) + [e]
            else:
                e.wait()
        return waits

    def _program_impl(self, run):
        """Enqueue a single launch at once (and keep its record for the fast path), or
        the one-group entry where `choice` says so, or the program by the C launcher;
        False: entry by entry (`_launch_impl`).  A run that `choice` times is timed
        until it is waited for (`_Timed`)."""
        plan, waits = run[0], run[1]
        queue = self.d.queue
        single = plan[3]
        if single is not None:
            records = self.plugin._records
            if self.address not in records and self.plugin.fast:
                records[self.address] = self.record(plan[5], single)
            run[2] = cl.enqueue_nd_range_kernel(queue, *single, None, waits)
            return True
        alone = plan[4]
        if alone is not None:
            one, timed = self.choice.next()
            if timed:
                run[3] = (one, time.perf_counter())
            if one:
                run[2] = cl.enqueue_nd_range_kernel(queue, *alone[:3], None, waits)
                return True
        return self._launches(run)

    def _launches(self, run):
        """The program's launches, by the C launcher in one call; False where there is
        none (entry by entry)."""
        prepared = run[0][2]
        if prepared is None:
            return False
        event = _launch.run(self.d.queue, prepared, self.buffers["scratch"][0], run[1])
        run[2] = cl.Event.from_int_ptr(event, retain=False) if event else DONE
        return True

    def _launch_impl(self, run, entry):
        kernel, gsize, local, _ = run[0][1][entry]
        run[2] = cl.enqueue_nd_range_kernel(self.d.queue, kernel, gsize, local, None, run[1])
        run[1] = None

    def _end_impl(self, run):
        if self.d.quiet:
            self.d.quiet.end(run, None if run[2] is DONE else run[2])
        if run[3] is not None:
            return _Timed(run[2], self.choice, *run[3])
        return run[2]

    def _word_impl(self, run, word):
        """The word, after the launches so far (and the run's events, at the first)."""
        out = _numpy().zeros(1, _numpy().int64)
        cl.enqueue_copy(self.d.queue, out, self.buffers["scratch"][0], src_offset=8 * word,
                        wait_for=run[1], is_blocking=True)
        run[1] = None
        return int(out[0])

    def _scratch_impl(self, size, old, have):
        d = self.d
        buf = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE, size)
        cl.enqueue_fill_buffer(d.queue, buf, _numpy().uint8(0), 0, size)
        if have:
            cl.enqueue_copy(d.queue, buf, old, byte_count=have)
        return buf

    def record(self, launch, single):
        """What `fast.Runner` needs to launch ``single`` again with the words now set."""
        kernel, gsize, local = single
        queue = self.d.queue
        slot = line = 0
        if self.mark is not None:
            table, i, who = self.mark
            slot = int(faults.ffi.cast("uintptr_t", table + i))
            line = int(faults.ffi.cast("uintptr_t", who))
        return (self.dev, self.last_words, launch, queue.int_ptr, kernel.int_ptr, *gsize,
                *local, (kernel, queue), slot, line)

    def _set_args(self, args, plan, scratch):
        """Each entry's arguments for these words: buffers and offsets for addresses,
        scalars, then the scratch buffers and the team-local tree (under ``lock``)."""
        info, plugin = self.info, self.plugin
        plugin._records.pop(self.address, None)     # not true while they change
        frees, steps = plugin._frees, plan[1]
        if plan[4]:
            steps = steps + [plan[4]]
        vals = []
        for w, m in zip(args, self.masks):
            if m is not None:
                vals.append(w & m)
            elif w:
                buf, off, _ = plugin._space.resolve(w)
                if buf._pygomp_dev != self.dev:
                    raise PluginError(f"{w:#x} is memory of {plugin.label(buf._pygomp_dev)}")
                vals += (buf, off)
            else:
                vals += (None, 0)
        if scratch is not None:
            vals.append(scratch)
        if info.private:            # one buffer for every entry: the largest needs
            per = info.private_part(args)
            size = per * max(gsize[0] * gsize[1] for _, gsize, _, _ in steps)
            limit = self.d.dev.max_mem_alloc_size
            if size > limit:
                raise PluginError(f"kernel {info.name} needs {per} bytes of private "
                                  f"arrays per work-item, {size} bytes for its "
                                  f"{size // per} work-items; the device allocates at "
                                  f"most {limit} bytes at once")
            vals.append(self.grow("private", size))
        held = []       # OpenCL does not keep the buffers an entry is set to alive: we do
        for entry, gsize, local, tree in steps:
            mine = vals
            if tree is not None:
                mine = mine + [tree]
            entry.set_args(*mine)
            held.append(mine)
        self.held = held
        # the words as given (a list copied, a tuple itself: known again by identity)
        self.last_words, self.last_plan, self.last_frees = args[:], plan, frees


class _Timed:
    """The event of a run that `choice` times: waiting for it tells the choice how long
    the run took."""
    __slots__ = ("event", "choice", "one", "start")

    def __init__(self, event, choice, one, start):
        self.event, self.choice, self.one, self.start = event, choice, one, start

    def wait(self):
        if self.event is not DONE:
            self.event.wait()
        choice, self.choice = self.choice, None
        if choice is not None:
            choice.ran(self.one, time.perf_counter() - self.start)


def _numpy():
    import numpy
    return numpy


class _Device:
    """The OpenCL objects of one initialized device."""

    def __init__(self, cldev):
        self.dev = cldev
        self.ctx = cl.Context([cldev])
        self.queue = cl.CommandQueue(self.ctx, cldev)
        self.images = {}                 # id(image) -> (program, [variable addresses])
        self.fault = None                # (table, index): its slot of `faults` (a CPU's)
        self.programs = {}               # digest of a binary -> the cl.Program built here
        self.quiet = None                # `Quiet` where buffers are host memory, else
                                         # False (None: not probed yet)


class OpenCLPlugin(Plugin):
    name = "opencl"
    target = "opencl"
    title = "OpenCL"
    asynchronous = True
    capability_text = {"fp64": "float64 (the device has no cl_khr_fp64)",
                       "int64_atomics": "64-bit atomics (the device has no "
                                        "cl_khr_int64_base_atomics)"}

    def __init__(self):
        super().__init__()
        self._cldevs = None              # cl.Device, by plugin-local number
        self._space = AddressSpace()
        self._frees = 0                  # buffers freed so far
        self._records = {}               # kernel address -> its `_Kernel.record` (fast.py)
        self._last = {}                  # queue handle -> its last launch's event

    # -- discovery ---------------------------------------------------------
    def _devices_impl(self):
        """The devices, from the disk cache while what they depend on is unchanged
        (`_discovery_key`): counting them then costs no pyopencl import and no OpenCL
        start-up; those happen when a device first starts (`_cl_devices`)."""
        k = _discovery_key()
        got = cache.get(k, ".opencl-devices")
        if got is not None:
            try:
                return [DeviceInfo(*fields) for fields in marshal.loads(got)]
            except (ValueError, TypeError, EOFError):
                pass                    # another layout: find them again
        self._cldevs, infos = _enumerate()
        _remember(k, infos)
        return infos

    def _cl_devices(self):
        """The pyopencl Devices, by plugin-local number (pyopencl imported, OpenCL
        started, on first use).  Devices counted from the cache that are not those found
        now are an error, and the cache is mended for the next run."""
        with self._lock:
            if self._cldevs is None:
                cldevs, infos = _enumerate()
                if infos != self.devices():
                    _remember(_discovery_key(), infos)
                    raise PluginError("the OpenCL devices are not those counted at "
                                      "start-up (from pygomp's cache): run the program "
                                      "again")
                self._cldevs = cldevs
            return self._cldevs

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

    # -- lifetime ------------------------------------------------------------
    def _start_device_impl(self, dev):
        return _Device(self._cl_devices()[dev])

    def _fini_impl(self, dev):
        d = self._state.get(dev)
        if d is None:
            return
        d.queue.finish()
        for start, size, buf in self._space.buffers():
            if getattr(buf, "_pygomp_dev", None) == dev:
                self._space.remove(start)

    # -- compiling -----------------------------------------------------------
    def _identity_impl(self, dev):
        return "opencl:" + _build.device_key(self._cl_devices()[dev])

    def _compiler_key(self, dev, unit):
        return self.build_options(dev, unit)

    def _compile_impl(self, dev, unit):
        d = self._device(dev)
        _build.check_linker(cl, d.dev, self.label(dev))
        options = self.build_options(dev, unit)
        name = ", ".join(k.name for k in unit.kernels) or "a program"
        prg = _build.build_source(cl, d.ctx, d.dev, unit.source, options, name)
        binary = prg.get_info(cl.program_info.BINARIES)[0]
        with self._lock:
            d.programs.setdefault(_digest(binary), prg)
        return binary

    def build_options(self, dev, unit) -> str:
        """What this device needs to build the unit's (or an image's) kernels."""
        return _options(self.devices()[dev], self.device_capabilities(dev), unit.kernels)

    # -- images --------------------------------------------------------------
    def _load_image_impl(self, dev, image):
        d = self._device(dev)
        _build.check_linker(cl, d.dev, self.label(dev))
        if d.fault is None and self.devices()[dev].kind == "cpu" \
                and any(map(faults.where, image.kernels)):   # its faults are the process's
            from ..host.plugin import _compiler_id, compile_c
            d.fault = faults.queue_slot(compile_c, _compiler_id()) or False
        needs = set().union(*(k.requires for k in image.kernels))
        missing = needs - self.device_capabilities(dev)
        if missing:
            raise PluginError(f"{self.label(dev)} ({self.devices()[dev].name}): image "
                              f"{image.name or '?'} needs {', '.join(sorted(missing))}, "
                              f"which the device does not have")
        local = self.devices()[dev].properties["local_memory"]
        mode = _choice.mode() if self.devices()[dev].kind == "cpu" else "0"
        for k in image.kernels:
            if k.cooperative:
                raise PluginError(f"kernel {k.name} needs all its gangs resident at once, "
                                  f"which OpenCL does not promise")
            if k.team_bytes > local:
                raise PluginError(f"kernel {k.name} needs {k.team_bytes} bytes of local "
                                  f"memory a work-group; {self.label(dev)} has {local}")
        key = _digest(image.code)
        prg = d.programs.get(key)
        if prg is None:
            prg = cl.Program(d.ctx, [d.dev], [image.code]).build(
                options=self.build_options(dev, image))
            with self._lock:
                prg = d.programs.setdefault(key, prg)
        single = "PYGOMP_SINGLE_ITEM_GROUPS" in self.build_options(dev, image)
        kernels = [_Kernel(self, dev, d, prg, info, self._space.reserve(1), single, mode)
                   for info in image.kernels]
        vars_ = []
        for _, size in image.variables:
            addr = self._alloc_impl(dev, size)
            cl.enqueue_fill_buffer(d.queue, self._space.resolve(addr)[0],
                                   _numpy().uint8(0), 0, max(size, 1)).wait()
            vars_.append(addr)
        d.images[id(image)] = (prg, vars_)
        return kernels, vars_

    def _unload_image_impl(self, dev, image):
        d = self._device(dev)
        entry = d.images.pop(id(image), None)
        self._records.clear()
        if entry:
            d.queue.finish()
            for v in entry[1]:
                self._space.remove(v)

    # -- memory --------------------------------------------------------------
    def _alloc_impl(self, dev, size):
        d = self._device(dev)
        if d.quiet is None:
            d.quiet = self.devices()[dev].kind == "cpu" and _quiet(d, self._last)
        n = max(size + 3 & ~3, 4)       # whole 32-bit words: the atomics of int8, int16
        try:
            if d.quiet or size >= hostmem.HUGE and self.devices()[dev].kind == "cpu":
                # On the CPU a buffer is host memory: give it ours (big: on huge pages)
                host = hostmem.buffer(n)
                if host is None:
                    return 0
                buf = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                                hostbuf=host)
                buf._pygomp_host = ctypes.addressof(host) if d.quiet else 0
            else:
                buf = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE, n)
                buf._pygomp_host = 0
        except cl.MemoryError:
            return 0
        buf._pygomp_dev = dev
        return self._space.add(buf, size)

    def _free_impl(self, dev, addr):
        buf = self._space.remove(addr)
        d = self._device(dev)
        if buf.hostbuf is not None and not (d.quiet and d.quiet()):
            d.queue.finish()            # its memory goes with it: let queued work end
        self._frees += 1            # kernels set to that buffer set their arguments anew
        self._records.clear()
        if getattr(buf, "_pygomp_dev", None) != dev:
            raise PluginError(f"{self.label(dev)}: free: {addr:#x} belongs to "
                              f"{self.label(getattr(buf, '_pygomp_dev', '?'))}")

    def _resolve(self, dev, addr, size):
        buf, off, left = self._space.resolve(addr)
        if size > left:
            raise PluginError(f"[{addr:#x}..{addr + size:#x}) runs {size - left} bytes past "
                              f"the end of its OpenCL buffer")
        if buf._pygomp_dev != dev:
            raise PluginError(f"{addr:#x} is memory of {self.label(buf._pygomp_dev)}")
        return buf, off

    def _host2dev_impl(self, dev, dst, src, size):
        d = self._device(dev)
        buf, off = self._resolve(dev, dst, size)
        if buf._pygomp_host and d.quiet():
            hostmem.copy(buf._pygomp_host + off, src, size)
            return
        cl.enqueue_copy(d.queue, buf, _memview(src, size, _READ), dst_offset=off,
                        is_blocking=True)

    def _dev2host_impl(self, dev, dst, src, size):
        d = self._device(dev)
        buf, off = self._resolve(dev, src, size)
        if buf._pygomp_host and d.quiet():
            hostmem.copy(dst, buf._pygomp_host + off, size)
            return
        cl.enqueue_copy(d.queue, _memview(dst, size, _WRITE), buf, src_offset=off,
                        is_blocking=True)

    def _dev2dev_impl(self, dev, dst, src, size):
        d = self._device(dev)
        dbuf, doff = self._resolve(dev, dst, size)
        sbuf, soff = self._resolve(dev, src, size)
        if dbuf is sbuf and abs(doff - soff) < size:       # OpenCL forbids overlap
            tmp = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE, size)
            cl.enqueue_copy(d.queue, tmp, sbuf, src_offset=soff, byte_count=size)
            sbuf, soff = tmp, 0
        cl.enqueue_copy(d.queue, dbuf, sbuf, src_offset=soff, dst_offset=doff,
                        byte_count=size).wait()

    # -- launches ------------------------------------------------------------
    def _fast_impl(self, fallback):
        """`fast.Runner`: single launches of kernels whose arguments are set, from C."""
        return _fast.runner(self._records, fallback, self._last)

    def _synchronize_impl(self, dev):
        d = self._device(dev)
        d.queue.finish()
        if d.fault:                     # nothing in flight
            d.fault[0][d.fault[1]] = faults.ffi.NULL


def _enumerate():
    """Every OpenCL device, probed and described: (pyopencl Devices, DeviceInfos), in
    the plugin's order (GPUs, accelerators, CPUs; those that fail their probe after
    those that work; a CPU after the first that works is ``same_as`` it)."""
    try:
        _pyopencl()
        platforms = cl.get_platforms()
    except Exception:                # no pyopencl, no ICD loader, no platform
        return [], []
    found = []
    for p in platforms:
        try:
            devs = p.get_devices()
        except Exception:
            continue
        for d in devs:
            info = _describe(d)
            caps = frozenset(info.properties["capabilities"].split())
            options = _options(info, caps, ())
            why = _build.probe(cl, d, options)
            if info.kind == "cpu" and not why and _build.vector_probe(d, options):
                props = dict(info.properties)
                props["capabilities"] = " ".join(sorted(caps | {"vector_loops"}))
                info = info.replace(properties=props)
            found.append((d, info.replace(problem=why)))
    order = {"gpu": 0, "accelerator": 1, "cpu": 2}
    found.sort(key=lambda f: (order.get(f[1].kind, 3), bool(f[1].problem)))
    infos = [info for _, info in found]
    # Every CPU device is the host's CPU: the first that works stands for it
    cpus = [i for i, info in enumerate(infos) if info.kind == "cpu"]
    for i in cpus[1:]:
        if not infos[cpus[0]].problem:
            infos[i] = infos[i].replace(same_as=cpus[0])
    return [d for d, _ in found], infos


def _remember(k, infos):
    try:
        cache.put(k, marshal.dumps([tuple(getattr(i, f) for f in DeviceInfo._fields)
                                    for i in infos]), ".opencl-devices")
    except (OSError, ValueError):
        pass                            # a read-only cache: found again next time


_ICD_DIRS = ("/etc/OpenCL/vendors",)
_PACKAGES = ("pyopencl", "pocl_binary_distribution")    # the wheels' loader and PoCL


def _discovery_key() -> str:
    """The cache key of the devices found: the settings that OpenCL's ICD loader, PoCL
    and the probe read (OCL_*, POCL_*, PYGOMP_OPENCL_*, whether ld is on PATH), the
    CPUs and memory PoCL counts, and a stamp (inode, size, times) of every file that
    decides what is found: the ICD files and their directories, the linker's cache
    (ldconfig runs when a driver is installed), pyopencl's and the PoCL wheel's
    libraries, and this plugin's own code."""
    parts = [f"{k}={v}" for k, v in sorted(os.environ.items())
             if k.startswith(("OCL_", "POCL_", "PYGOMP_OPENCL_"))]
    path = os.environ.get("PATH", "").split(os.pathsep)
    parts.append(any(os.access(os.path.join(d, "ld"), os.X_OK) for d in path if d))
    parts += [os.cpu_count(), _machine("sched_getaffinity", 0), _machine("sysconf",
                                                                    "SC_PHYS_PAGES")]
    files = [__file__, _build.__file__, "/etc/ld.so.cache"]
    icds = list(_ICD_DIRS) + os.environ.get("OCL_ICD_VENDORS", "").split(os.pathsep)
    for name in _PACKAGES:
        for d in sys.path:
            top = os.path.join(d or ".", name)
            if os.path.exists(os.path.join(top, "__init__.py")):
                files.append(os.path.join(top, "__init__.py"))
                icds.append(os.path.join(top, ".libs"))
                break
    for d in filter(None, icds):
        files.append(d)
        try:
            files += [os.path.join(d, f) for f in sorted(os.listdir(d))]
        except OSError:
            pass
    for f in files:
        try:
            st = os.stat(f)
            parts.append(f"{f} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}")
        except OSError:
            parts.append(f"{f} -")
    return cache.key("opencl devices", *parts)


def _machine(call, arg):
    """What ``os.<call>(arg)`` says (a set: its size), or None where it cannot say."""
    try:
        got = getattr(os, call)(arg)
    except (AttributeError, OSError, ValueError):
        return None
    return len(got) if isinstance(got, set) else got


def _quiet(d, last):
    """A `Quiet` for device ``d`` if a buffer over host memory is that memory (a write to
    either is seen in the other, without a map), else False."""
    np = _numpy()
    host = hostmem.buffer(128)
    try:
        buf = cl.Buffer(d.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                        hostbuf=host)
        cl.enqueue_fill_buffer(d.queue, buf, np.uint8(0x5A), 0, 128).wait()
        seen = bytes(host) == b"\x5a" * 128
        ctypes.memset(host, 0x33, 128)
        out = np.zeros(128, np.uint8)
        cl.enqueue_copy(d.queue, out, buf, is_blocking=True)
    except cl.Error:
        return False
    if not (seen and (out == 0x33).all()):
        return False
    return Quiet(last, d.queue.int_ptr, cl.command_execution_status.COMPLETE)


def _digest(code: bytes) -> str:
    return hashlib.sha256(code).hexdigest()


def _options(info, caps, kernels) -> str:
    """The build options of kernels on a device, then PYGOMP_OPENCL_BUILD_OPTIONS."""
    opts = []
    if info.kind == "cpu":
        opts.append("-D PYGOMP_DEVICE_CPU=1")
        if _single_items() and all(k.any_group_size for k in kernels):
            opts.append("-D PYGOMP_SINGLE_ITEM_GROUPS=1")
        if "vector_loops" in caps:          # a binary's vector types work (build.py)
            opts.append("-D PYGOMP_VECTOR_LOOPS=1")
    if "generic_address_space" in caps:
        opts += [f"-cl-std={info.properties['cl_std']}", "-D PYGOMP_GENERIC_ADDRESS_SPACE=1"]
    opts += os.environ.get("PYGOMP_OPENCL_BUILD_OPTIONS", "").split()
    return " ".join(opts)


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
    platform = f"{d.platform.name} {d.driver_version} ({d.platform.vendor})"
    return DeviceInfo(name=d.name, kind=kind, platform=platform, memory=d.global_mem_size,
                      properties=props)
