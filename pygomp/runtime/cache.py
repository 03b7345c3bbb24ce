"""The on-disk cache of compiled images, safe for several processes at once.

``PYGOMP_CACHE_DIR`` (default: the user cache dir, e.g. ``~/.cache/pygomp``) holds one
file an entry, named by the SHA-256 of its key parts (`Plugin.compile` gives the target,
the source, the device and compiler identities; `key` adds the pygomp version).  An
entry is written to a temporary file and renamed into place (atomic), and carries a
checksum trailer: a truncated or corrupt entry is rebuilt, not trusted.  A cache that
cannot be written is still read (`directories`).
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import warnings

from . import env

MAGIC = b"PYGOMP-CACHE-1:"
stats = {"hits": 0, "builds": 0}
_by_target = {}


def target_stats(target: str) -> dict:
    """Builds and cache hits of one target's `Plugin.compile` in this process."""
    return _by_target.setdefault(target, {"builds": 0, "cache_hits": 0})


def directories():
    """``(read, write)``: the directories entries are looked up in, in order, and the one
    new entries go to.  A cache directory that cannot be written (a read-only file
    system, a shared cache) is still read; new entries then go to a directory of this
    user's under the temp dir, and a warning says so once."""
    d = env.cache_dir()
    found = _dirs.get(d)
    if found is None:
        try:
            os.makedirs(d, exist_ok=True)
        except OSError:
            pass
        if _writable(d):
            found = ([d], d)
        else:
            fallback = os.path.join(tempfile.gettempdir(), f"pygomp-cache-{os.getuid()}")
            os.makedirs(fallback, exist_ok=True)
            found = ([d, fallback] if os.path.isdir(d) else [fallback], fallback)
            warnings.warn(f"pygomp: the kernel cache {d} cannot be written: its entries are "
                          f"read, new ones are written to {fallback}", RuntimeWarning,
                          stacklevel=2)
        _dirs[d] = found
    return found


def directory() -> str:
    """Where new entries are written (see `directories`)."""
    return directories()[1]


def _writable(d) -> bool:
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".probe-")
    except OSError:
        return False
    os.close(fd)
    os.unlink(tmp)
    return True


_dirs = {}


@functools.lru_cache(maxsize=1)
def version() -> str:
    from .. import __version__      # read late: the package imports this module
    return __version__


def key(*parts) -> str:
    h = hashlib.sha256()
    for p in (version(),) + parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()[:40]


def _seal(data: bytes) -> bytes:
    return data + MAGIC + hashlib.sha256(data).hexdigest().encode()


def _open(blob: bytes):
    n = len(MAGIC) + 64
    if len(blob) < n or blob[-n:-64] != MAGIC:
        return None
    data = blob[:-n]
    return data if hashlib.sha256(data).hexdigest().encode() == blob[-64:] else None


def get(k: str, suffix: str = "") -> bytes | None:
    """The bytes stored under key ``k``, or None (missing or corrupt)."""
    for d in directories()[0]:
        try:
            with open(os.path.join(d, k + suffix + ".bin"), "rb") as f:
                data = _open(f.read())
        except OSError:
            continue
        if data is not None:
            stats["hits"] += 1
            return data
    return None


def put(k: str, data: bytes, suffix: str = "") -> None:
    d = directory()
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_seal(data))
        os.replace(tmp, os.path.join(d, k + suffix + ".bin"))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def get_or_build(k: str, build, suffix: str = "") -> bytes:
    """The cached bytes for ``k``, or ``build()``'s result, stored for next time."""
    data = get(k, suffix)
    if data is None:
        data = build()
        stats["builds"] += 1
        put(k, data, suffix)
    return data


def materialize(k: str, data: bytes, suffix: str) -> str:
    """A file holding ``data`` (e.g. a shared object to dlopen), written once and reused;
    its name carries the content hash (and it is written whole, then renamed), so a
    file of that name and size holds these bytes."""
    name = f"{k}-{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    for d in directories()[0]:
        path = os.path.join(d, "lib", name)
        try:
            if os.stat(path).st_size == len(data):
                return path
        except OSError:
            pass
    d = os.path.join(directory(), "lib")
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    path = os.path.join(d, name)
    os.replace(tmp, path)
    return path
