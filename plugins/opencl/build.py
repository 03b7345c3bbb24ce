"""Building OpenCL programs, with program binaries cached on disk.

Key: source, options, platform, device and driver version.  Entries are written
atomically (a temporary file, then rename) and carry a checksum; an entry that fails its
checksum or whose binary the driver refuses is rebuilt from source and rewritten.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import warnings

from pygomp.runtime.plugin import PluginError

MAGIC = b"pygomp-opencl-1\n"
stats = {"builds": 0, "cache_hits": 0}    # per process, for tests and `info`


class OpenCLBuildError(PluginError):
    """The OpenCL compiler refused a program; the message holds its build log."""


def cache_dir() -> str | None:
    d = os.environ.get("PYGOMP_CACHE_DIR")
    if d is None:
        try:
            import platformdirs
            d = platformdirs.user_cache_dir("pygomp")
        except ImportError:
            return None
    return os.path.join(d, "opencl")


def device_key(dev) -> str:
    p = dev.platform
    return "|".join((p.name, p.version, dev.name, dev.version, dev.driver_version))


def build(cl, ctx, dev, source: str, options: str = "", name: str = ""):
    """A built `cl.Program` for one device, from the disk cache when possible."""
    key = hashlib.sha256("\0".join((source, options, device_key(dev))).encode()).hexdigest()
    d = cache_dir()
    path = os.path.join(d, key[:2], key + ".bin") if d else None
    binary = _read(path) if path else None
    if binary is not None:
        try:
            prg = cl.Program(ctx, [dev], [binary]).build(options=options)
            stats["cache_hits"] += 1
            return prg
        except cl.Error:
            pass                                   # stale or refused: rebuild
    prg = _build_source(cl, ctx, dev, source, options, name)
    stats["builds"] += 1
    if path:
        try:
            _write(path, prg.get_info(cl.program_info.BINARIES)[0])
        except OSError:
            pass                                   # a read-only cache is no error
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


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = len(MAGIC) + 32
    if len(data) <= head or not data.startswith(MAGIC):
        return None
    body = data[head:]
    if hashlib.sha256(body).digest() != data[len(MAGIC):head]:
        return None
    return body


def _write(path: str, binary: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(binary).digest() + binary)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
