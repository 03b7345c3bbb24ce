"""Building OpenCL programs from source, with the build log in the error."""
from __future__ import annotations

import re
import shutil
import warnings

from pygomp.runtime import cache
from pygomp.runtime.plugin import PluginError

stats = cache.target_stats("opencl")    # builds and cache hits, for tests and `info`


class OpenCLBuildError(PluginError):
    """The OpenCL compiler refused a program; the message holds its build log."""


def device_key(dev) -> str:
    """Platform, device and driver: what a program binary is valid for."""
    p = dev.platform
    return "|".join((p.name, p.version, dev.name, dev.version, dev.driver_version))


def check_linker(cl, dev, who):
    """PoCL links a kernel for a CPU with the system linker the first time it runs it,
    and aborts the process when there is none: say so before anything is built."""
    if (dev.type & cl.device_type.CPU and "Portable Computing Language" in dev.platform.name
            and shutil.which("ld") is None):
        raise PluginError(f"{who}: PoCL links kernels for {dev.name!r} with the system linker "
                          f"'ld', which is not on PATH: install binutils, or put the "
                          f"directory that holds ld on PATH")


def build_source(cl, ctx, dev, source, options, name):
    """A `cl.Program` built from source for one device."""
    prg = cl.Program(ctx, source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return prg.build(options=options, devices=[dev])
    except cl.Error as e:
        raise OpenCLBuildError(
            f"OpenCL build of {name} failed on {dev.name!r} "
            f"({dev.platform.name}):\n{_log(str(e))}") from None


def _log(msg: str) -> str:
    """The compiler's own lines out of pyopencl's message."""
    m = re.search(r"Build on <[^\n]*>:\n\n(.*)", msg, re.S)
    log = m.group(1) if m else msg
    log = re.sub(r"\n\(options: [^\n]*\)\s*$", "", log)
    return log.strip()
