"""Regions that C runs itself: the C half of `calls.Call.plan` (csrc/README.md, "How a
construct runs", says how shim.c carries a plan out).

A target region that repeats on a device of the host plugin gets a plan (`install`):
C runs it from its next time without Python, while the device's map is the one the
plan was made for.  The devices of the host plugin get a `ShimLock` (`start`): when
Python takes one, C starts no planned region there, and the regions in flight there
become Python's (`calls.adopt`); such a region ends through `pg_py_land`.
"""
from __future__ import annotations

import _thread          # threading's own locks: importing threading takes 0.5 ms

from ..runtime import calls, devices
from . import abi


def start() -> None:
    """libpygomp.so is loaded: devices of the host plugin found from now on get a
    `ShimLock`."""
    devices.lock_maker(_new_lock)


def _new_lock(dev):
    if dev.plugin.name == "host" and not dev.is_initial:
        return ShimLock(dev)
    return _thread.RLock()


class ShimLock(calls.GateLock):
    """`calls.GateLock` with shim.c's gate: pg_gate_enter stops C's regions on the
    device (and says whether some are in flight), pg_gate_take gives each one in flight
    (its token, its plan's id, the addresses of the items it made), pg_gate_leave lets
    C start regions again, by the plans good for the epoch it is told."""
    __slots__ = ()

    def _take_impl(self, dev):
        lib = abi.lib
        if lib.pg_gate_enter(dev.number):
            out = abi.ffi.new("uint64_t[]", 2 + calls.PLAN_ITEMS)
            while lib.pg_gate_take(dev.number, out):
                calls.adopt(dev, out[0], out[1], out[2:2 + calls.PLAN_ITEMS])

    def _let_go_impl(self, dev, epoch):
        abi.lib.pg_gate_leave(dev.number, epoch)


def install(call, device, fn, n, packed):
    """Give C the plan of a region that it may run itself from now on (shim.c)."""
    got = call.plan()
    if got is not None:
        pid, version, words, flags = got
        old = abi.lib.pg_plan_install(device, fn, n, packed, words, flags, version, pid)
        if old:
            calls.forget(pid if old < 0 else old)


def pg_py_land(token):
    """A region that C ran by its plan and Python adopted meanwhile: its end."""
    calls.land(token)
    return 1
