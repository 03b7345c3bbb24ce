"""Building OpenCL programs from source, with the build log in the error."""
from __future__ import annotations

import re
import warnings

from pygomp.runtime import cache
from pygomp.runtime.plugin import PluginError

stats = cache.target_stats("opencl")    # builds and cache hits, for tests and `info`


class OpenCLBuildError(PluginError):
    """The OpenCL compiler refused a program; the message holds its build log (``log``)."""

    def __init__(self, message, log=""):
        super().__init__(message)
        self.log = log


PROBE = """\
__kernel void pygomp_probe(__global int *out)
{
    int i = get_global_id(0);
    out[i] = 3 * i + 1;
}
"""
PROBE_RESULT = [1, 4, 7, 10]


# Vector types (vectypes.py's loops) through a program binary, as images are loaded.  The
# PoCL of pyopencl's wheel (3.0, LLVM 14) finds no kernel in such a binary and aborts at
# exit, so the probe runs in a process of its own.
VECTOR_PROBE = """\
__kernel void pygomp_probe(__global int *out)
{
    int i = get_global_id(0);
    float16 f = (float16)((float)i) * 3.0f + exp((float16)(0.0f));
    int r = (int)(f.sa);
#ifdef cl_khr_fp64
    double8 d = (double8)((double)i) * 3.0 + exp((double8)(0.0));
    r = (r + (int)(d.s5)) / 2;
#endif
    out[i] = r;
}
"""
_VECTOR_CHILD = """\
import os, sys
import numpy as np, pyopencl as cl
key, options, src, want = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def ident(d):
    p = d.platform
    return "|".join((p.name, p.version, d.name, d.version, d.driver_version))
dev = [d for p in cl.get_platforms() for d in p.get_devices() if ident(d) == key][0]
ctx = cl.Context([dev])
binary = cl.Program(ctx, src).build(options=options).get_info(cl.program_info.BINARIES)[0]
prg = cl.Program(ctx, [dev], [binary]).build(options=options)
out = np.zeros(4, np.int32)
buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
queue = cl.CommandQueue(ctx, dev)
prg.pygomp_probe(queue, out.shape, None, buf)
cl.enqueue_copy(queue, out, buf, is_blocking=True)
print("ok" if out.tolist() == eval(want) else "wrong", flush=True)
os._exit(0)
"""


def vector_probe(dev, options) -> bool:
    """Whether ``dev`` runs kernels in vector types loaded from a program binary, cached
    on disk like `probe`."""
    import subprocess
    import sys
    k = cache.key("opencl vector probe", device_key(dev), options)
    got = cache.get(k, ".probe")
    if got is None:
        try:
            done = subprocess.run([sys.executable, "-c", _VECTOR_CHILD, device_key(dev),
                                   options, VECTOR_PROBE, repr(PROBE_RESULT)],
                                  capture_output=True, text=True, timeout=120)
            got = b"ok" if done.stdout.strip() == "ok" else b"no"
        except (OSError, subprocess.TimeoutExpired):
            got = b"no"
        try:
            cache.put(k, got, ".probe")
        except OSError:
            pass
    return got == b"ok"


def device_key(dev) -> str:
    """Platform, device and driver: what a program binary is valid for."""
    p = dev.platform
    return "|".join((p.name, p.version, dev.name, dev.version, dev.driver_version))


def check_linker(cl, dev, who):
    """PoCL links a kernel for a CPU with the system linker the first time it runs it,
    and aborts the process when there is none: say so before anything is built."""
    why = _no_linker(cl, dev)
    if why:
        raise PluginError(f"{who}: {why}")


def _no_linker(cl, dev) -> str:
    import shutil                       # here: counting devices from the cache needs none
    if (dev.type & cl.device_type.CPU and "Portable Computing Language" in dev.platform.name
            and shutil.which("ld") is None):
        return (f"PoCL links kernels for {dev.name!r} with the system linker 'ld', which "
                f"is not on PATH: install binutils, or put the directory that holds ld on "
                f"PATH")
    return ""


def build_source(cl, ctx, dev, source, options, name):
    """A `cl.Program` built from source for one device."""
    prg = cl.Program(ctx, source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return prg.build(options=options, devices=[dev])
    except cl.Error as e:
        log = _log(str(e))
        raise OpenCLBuildError(f"OpenCL build of {name} failed on {dev.name!r} "
                               f"({dev.platform.name}):\n{log}", log) from None


def probe(cl, dev, options) -> str:
    """Why ``dev`` cannot build and run a tiny kernel with these build options ("" when
    it can), cached on disk by the device's identity (its driver version included) and
    the options, so a warm start builds nothing."""
    why = _no_linker(cl, dev)
    if why:                             # not cached: installing ld mends it
        return why
    k = cache.key("opencl probe", device_key(dev), options)
    why = cache.get(k, ".probe")
    if why is not None:
        return why.decode()
    why = _probe(cl, dev, options)
    try:
        cache.put(k, why.encode(), ".probe")
    except OSError:
        pass
    return why


def _probe(cl, dev, options) -> str:
    import numpy as np
    out = np.zeros(len(PROBE_RESULT), np.int32)
    try:
        ctx = cl.Context([dev])
        queue = cl.CommandQueue(ctx, dev)
        prg = build_source(cl, ctx, dev, PROBE, options, "the probe kernel")
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
        prg.pygomp_probe(queue, out.shape, None, buf)
        cl.enqueue_copy(queue, out, buf, is_blocking=True)
    except OpenCLBuildError as e:
        lines = e.log.strip().splitlines() or ["(no build log)"]
        return f"the probe kernel does not build: {lines[0].strip()}"
    except Exception as e:              # noqa: BLE001  (whatever the driver raises)
        return f"the probe kernel fails: {type(e).__name__}: {e}"
    if out.tolist() != PROBE_RESULT:
        return f"the probe kernel computes {out.tolist()}, not {PROBE_RESULT}"
    return ""


def _log(msg: str) -> str:
    """The compiler's own lines out of pyopencl's message."""
    m = re.search(r"Build on <[^\n]*>:\n\n(.*)", msg, re.S)
    log = m.group(1) if m else msg
    log = re.sub(r"\n\(options: [^\n]*\)\s*$", "", log)
    return log.strip()
