"""The kernel level of a plugin (after LLVM's GenericKernelTy): what every plugin does
with a loaded kernel (plans per launch sizes, scratch memory, the order of the launches
its program says) is here; a plugin's subclass implements the ``_..._impl`` hooks.
"""
from __future__ import annotations

import _thread          # threading's own locks: importing threading takes 0.5 ms

from .contract import DONE, KernelInfo

class Kernel:
    """A kernel loaded on a device: what every plugin does with it is here (after LLVM's
    GenericKernelTy); a plugin's subclass launches one entry.

    `run` takes the launch's plan (`_plan_impl`, made once per launch sizes) and the
    global scratch for its gangs, then launches the entries in the order of the
    kernel's program: all at once where `_program_impl` can (a launcher in C, a kind of
    kernel that is one launch), else one by one (`_launch_impl`).  Runs take turns
    (``lock``) when they share something: scratch, or the entries' arguments where
    those are kept between runs (``shares_arguments``).  `launcher` gives a kernel's
    own way to run calls that repeat (`_launcher_impl`), where it has one."""

    shares_arguments = False    # runs share the entries' arguments: they take turns
    max_group = 1 << 30         # work-items per group the kernel allows (`group`)
    max_gangs = 1 << 62         # gangs per launch the device allows

    def __init__(self, info: KernelInfo, address: int):
        self.info = info
        self.address = address            # the device address `run` is given
        self.dev = None                   # the plugin's device it is loaded on
        self.nwords = len(info.args)      # argument words a run takes (None: any)
        self.plans = {}                   # launch sizes -> (gangs, what _plan_impl made)
        self.lock = _thread.allocate_lock()
        self.exclusive = self.shares_arguments or info.has_scratch or bool(info.private)
        self.buffers = {}                 # "scratch" or "private" -> (buffer, bytes)

    def plan(self, launch):
        """What a run with these launch sizes needs (`_plan_impl`, made once)."""
        launch = tuple(launch)
        plan = self.plans.get(launch)
        if plan is None:
            plan = self.plans[launch] = self._plan_impl(launch)
        return plan

    def run(self, args, launch, wait_for):
        """Launch every entry as the kernel's program says; returns an event (or `DONE`
        when it ran to completion)."""
        try:
            plan = self.plans[launch]
        except (KeyError, TypeError):       # not made yet, or the sizes a list
            plan = self.plan(launch)
        if not self.exclusive:
            return self._run(args, plan, wait_for)
        with self.lock:
            return self._run(args, plan, wait_for)

    def _run(self, args, plan, wait_for):
        info = self.info
        scratch = self.grow("scratch", info.scratch_size(plan[0])) if info.has_scratch \
            else None
        run = self._start_impl(args, plan, scratch, wait_for)
        if not self._program_impl(run):
            order = (program(info.program, lambda word: self._read(run, word))
                     if info.program else range(len(info.entries)))
            for entry in order:
                self._launch_impl(run, entry)
        return self._end_impl(run)

    def launcher(self, launch):
        """``(prepare, start)`` of the kernel's own for calls that repeat with these
        launch sizes (see `Plugin.launcher`), or None: the plugin's."""
        return self._launcher_impl(launch)

    def _read(self, run, word):
        if not self.info.has_scratch:
            raise ValueError("a kernel's program reads a scratch word, but its KernelInfo "
                             "asks for no global scratch")
        return self._word_impl(run, word)

    def grow(self, which, size):
        """The kernel's global (``which`` "scratch") or private scratch of at least
        ``size`` bytes: zero when made, its contents kept when it grows (to twice what
        it had, at least)."""
        buf, have = self.buffers.get(which, (None, 0))
        if have < size or buf is None:
            size = max(size, 2 * have, 8)
            buf = self._scratch_impl(size, buf, have)
            self.buffers[which] = (buf, size)
        return buf

    def geometry(self, launch):
        """Launch sizes of a work-group device: the launch's gangs, and per entry its
        gangs and its group ``(vector, workers)``.  An entry that partitions no level
        runs on one work-item; a level it does not partition gets the launch's size, or
        1; levels left 0 get the plugin's defaults (`_group_impl`, `_gangs_impl` of
        the first entry that partitions gangs); a group larger than ``max_group`` is
        halved, workers first.  The entries of the program only (not ``one_group``)."""
        levels = self.info.levels[:self.info.one_group or None]
        groups = [self.group(launch, lv) for lv in levels]
        gangs = launch[0] or next((self._gangs_impl(i, groups[i])
                                   for i, lv in enumerate(levels) if "g" in lv), 1)
        gangs = min(gangs, self.max_gangs)
        return gangs, [((gangs if "g" in lv else launch[0] or 1) if lv else 1, group)
                       for lv, group in zip(levels, groups)]

    def group(self, launch, levels="gwv"):
        """``(vector, workers)`` of an entry that partitions ``levels`` (see `geometry`)."""
        if not levels:
            return 1, 1
        vector, workers = self._group_impl(levels, launch[2], launch[1])
        while workers * vector > self.max_group and workers > 1:
            workers = (workers + 1) // 2
        while workers * vector > self.max_group:
            vector = (vector + 1) // 2
        return vector, workers

    # -- hooks a plugin's kernel implements ------------------------------------
    def _plan_impl(self, launch):
        """``(gangs, anything)``: what a run with these launch sizes needs, made once
        (``gangs`` sizes the global scratch); by default `geometry`."""
        return self.geometry(launch)

    def _group_impl(self, levels, vector, workers):
        """``(vector, workers)`` with the plugin's defaults for sizes left 0."""
        return vector or 1, workers or 1

    def _gangs_impl(self, entry, group):
        """The gangs of a launch that leaves them 0."""
        return 1

    def _scratch_impl(self, size, old, have):
        """New device memory of ``size`` bytes, zero but for the first ``have`` bytes,
        copied from ``old`` (None when ``have`` is 0)."""
        raise NotImplementedError

    def _start_impl(self, args, plan, scratch, wait_for):
        """Set up one run (after the events ``wait_for``); returns what the other hooks
        of this run are given.  By default: the events waited for, then the words
        (the global scratch added) and the plan.  A kernel with private scratch needs
        its plugin's own (`private_part` per work-item, `grow`)."""
        if self.info.private:
            raise NotImplementedError(f"kernel {self.info.name} has private scratch, "
                                      f"which the plugin does not provide")
        for event in wait_for:
            event.wait()
        return (args if scratch is None else [*args, scratch]), plan

    def _program_impl(self, run) -> bool:
        """Enqueue every launch of the run at once (the whole program, in one call);
        False leaves them to `_launch_impl`, one by one."""
        return False

    def _launch_impl(self, run, entry):
        """Launch entry number ``entry``."""
        raise NotImplementedError

    def _word_impl(self, run, word) -> int:
        """The int64 at word ``word`` of the global scratch, once the launches so far
        are done."""
        raise NotImplementedError

    def _end_impl(self, run):
        """The run's event, once every launch is started."""
        return DONE

    def _launcher_impl(self, launch):
        """``(prepare, start)`` for calls that repeat (`launcher`); None: the plugin's."""
        return None


def program(ops, read):
    """The entries a kernel's program launches, in order (see `KernelInfo.program`);
    ``read(word)`` gives a word of its global scratch when it is reached."""
    for op in ops:
        if isinstance(op, int):
            yield op
        elif op[0] == "repeat":
            for _ in range(read(op[1])):
                yield from program(op[2], read)
        else:
            while read(op[1]):
                yield from program(op[2], read)

