"""Which way a looping kernel runs on a CPU device: its program of launches, or its entry
that does the whole run in one work-group (`KernelInfo.one_group`).

Many small launches cost the driver more than one core doing their work, few large ones
less: only running both tells.  PYGOMP_OPENCL_ONE_GROUP says: ``auto`` (the default)
runs a kernel's first calls each way in turn, each waited for and timed, and from then
on the one work-group if it was clearly faster (`MARGIN`: one core doing the work
when the others were busy may look faster than it is); ``1`` always the one
work-group; ``0`` never.  Each way runs `TRIES` times and its best time counts, since a
driver builds an entry for its sizes on its first launch.  The choice is made per kernel
and device on the calls it first sees, then checked again (`RECHECK`): a machine busy
during the first calls would otherwise keep the slower way for good.
"""
from __future__ import annotations

import os

from pygomp.runtime.plugin import PluginError

TRIES = 2
MARGIN = 0.75           # the one group's best time over the program's, at most
RECHECK = frozenset(2 ** k for k in range(3, 11))   # these calls after the first ones
                                                    # run the other way, timed


def mode() -> str:
    """PYGOMP_OPENCL_ONE_GROUP's value, checked."""
    v = os.environ.get("PYGOMP_OPENCL_ONE_GROUP", "auto") or "auto"
    if v not in ("auto", "0", "1"):
        raise PluginError(f"PYGOMP_OPENCL_ONE_GROUP={v!r}: expected auto, 0 or 1")
    return v


class Choice:
    """One kernel's choice on one device: `next` runs under the kernel's lock, `ran`
    after it (a list's append is atomic)."""
    __slots__ = ("mode", "times", "calls")

    def __init__(self, mode: str):
        self.mode = mode
        self.times = ([], [])           # seconds of timed runs: the program, one group
        self.calls = 0                  # calls since the first ones

    def next(self) -> tuple:
        """``(one group, timed)``: the way the next run takes and whether it is timed."""
        if self.mode != "auto":
            return self.mode == "1", False
        program, one = self.times
        if len(one) < TRIES:
            return len(one) < len(program), True
        self.calls += 1
        chosen = min(one) < MARGIN * min(program)
        if self.calls in RECHECK:
            return not chosen, True
        return chosen, False

    def ran(self, one: bool, seconds: float) -> None:
        self.times[one].append(seconds)
