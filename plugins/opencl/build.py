"""Building OpenCL programs, with program binaries in pygomp's on-disk cache.

Key: source, options, platform, device and driver version.  An entry that is corrupt, or
whose binary the driver refuses, is rebuilt from source and rewritten.
"""
from __future__ import annotations

import re
import warnings

from pygomp.compiler import cache
from pygomp.runtime.plugin import PluginError

stats = {"builds": 0, "cache_hits": 0}    # per process, for tests and `info`


class OpenCLBuildError(PluginError):
    """The OpenCL compiler refused a program; the message holds its build log."""


def device_key(dev) -> str:
    p = dev.platform
    return "|".join((p.name, p.version, dev.name, dev.version, dev.driver_version))


def build(cl, ctx, dev, source: str, options: str = "", name: str = ""):
    """A built `cl.Program` for one device, from the disk cache when possible."""
    key = cache.key("opencl", source, options, device_key(dev))
    binary = cache.get(key, ".clbin")
    if binary is not None:
        try:
            prg = cl.Program(ctx, [dev], [binary]).build(options=options)
            stats["cache_hits"] += 1
            return prg
        except cl.Error:
            pass                                   # stale or refused: rebuild
    prg = _build_source(cl, ctx, dev, source, options, name)
    stats["builds"] += 1
    try:
        cache.put(key, prg.get_info(cl.program_info.BINARIES)[0], ".clbin")
    except OSError:
        pass                                       # a read-only cache is no error
    return prg


def _build_source(cl, ctx, dev, source, options, name):
    prg = cl.Program(ctx, source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return prg.build(options=options, devices=[dev])
    except cl.Error as e:
        raise OpenCLBuildError(
            f"OpenCL build of {name or 'a program'} failed on {dev.name!r} "
            f"({dev.platform.name}):\n{_log(str(e))}") from None


def _log(msg: str) -> str:
    """The compiler's own lines out of pyopencl's message."""
    m = re.search(r"Build on <[^\n]*>:\n\n(.*)", msg, re.S)
    log = m.group(1) if m else msg
    log = re.sub(r"\n\(options: [^\n]*\)\s*$", "", log)
    return log.strip()
