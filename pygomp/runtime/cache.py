"""The on-disk cache of compiled images, safe for several processes at once.

``PYGOMP_CACHE_DIR`` (default: the user cache dir, e.g. ``~/.cache/pygomp``) holds one
file an entry, named by the SHA-256 of its key parts (`Plugin.compile` gives the target,
the source, the device and compiler identities; `key` adds the pygomp version).  An entry is written to a temporary file and renamed into place (atomic), and
carries a checksum trailer: a truncated or corrupt entry is rebuilt, not trusted.
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile

from . import env

MAGIC = b"PYGOMP-CACHE-1:"
stats = {"hits": 0, "builds": 0}
_by_target = {}


def target_stats(target: str) -> dict:
    """Builds and cache hits of one target's `Plugin.compile` in this process."""
    return _by_target.setdefault(target, {"builds": 0, "cache_hits": 0})


def directory() -> str:
    """The cache directory (created); an unwritable one falls back to the temp dir."""
    d = env.cache_dir()
    if d in _usable:
        return _usable[d]
    try:
        os.makedirs(d, exist_ok=True)
        if not os.access(d, os.W_OK):
            raise PermissionError(d)
        _usable[d] = d
    except OSError:
        fallback = os.path.join(tempfile.gettempdir(), f"pygomp-cache-{os.getuid()}")
        os.makedirs(fallback, exist_ok=True)
        _usable[d] = fallback
    return _usable[d]


_usable = {}


@functools.lru_cache(maxsize=1)
def version() -> str:
    try:
        from importlib.metadata import version as v
        return v("pygomp")
    except Exception:
        return "0"


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
    path = os.path.join(directory(), k + suffix + ".bin")
    try:
        with open(path, "rb") as f:
            data = _open(f.read())
    except OSError:
        return None
    if data is not None:
        stats["hits"] += 1
    return data


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
    its name carries the content hash, so a stale or foreign file is never picked up."""
    d = os.path.join(directory(), "lib")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{k}-{hashlib.sha256(data).hexdigest()[:16]}{suffix}")
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return path
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path
