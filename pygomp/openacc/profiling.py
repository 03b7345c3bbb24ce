"""OpenACC's profiling interface from Python, and the records and event pairs the
other modules of the package give their work (`pygomp.runtime.accprof` dispatches)."""
from __future__ import annotations

from ..runtime import accprof
from .device_types import async_sync, device_host, device_host_nonshm, devices_of, type_of

_APIS = {"cuda": accprof.device_api_cuda, "opencl": accprof.device_api_opencl}


def prof_register(event: int, fn, how: int = accprof.reg) -> None:
    """acc_prof_register: ``fn(prof_info, event_info, api_info)`` at each ``event``
    (``acc.ev_*``), with the fields of acc_prof.h (``async`` through getattr)."""
    accprof.register(event, fn, how)


def prof_unregister(event: int, fn, how: int = accprof.reg) -> None:
    """acc_prof_unregister."""
    accprof.unregister(event, fn, how)


def prof_record(construct, dev, q=async_sync, implicit=0):
    """A profiling record for a construct on ``dev`` (None if an outer one's is current)."""
    t = type_of(dev)
    devs = devices_of(device_host_nonshm if t == device_host and not dev.is_initial else t)
    if not dev.is_initial:
        accprof.watch(dev)
    return accprof.start(construct, t, devs.index(dev) if dev in devs else 0, q,
                         _APIS.get(dev.plugin.name, accprof.device_api_none), implicit)


def profiled(construct, dev, q, event, fn, *args):
    """``fn(*args)`` between ``event`` and its end event, in a record of its own (or in
    the current one)."""
    rec = prof_record(construct, dev, q)
    try:
        return accprof.pair(rec or accprof.current(), event, fn, *args)
    finally:
        accprof.finish(rec)
