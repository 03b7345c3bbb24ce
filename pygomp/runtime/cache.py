"""The on-disk cache of compiled images, safe for several processes at once and against
other users of the machine.

``PYGOMP_CACHE_DIR`` (default: the user cache dir, e.g. ``~/.cache/pygomp``) holds one
file per entry, named by the BLAKE2b hash of its key parts (`Plugin.compile` gives the
target, the source, the device and compiler identities; `key` adds the pygomp
version).  An entry is written to a temporary file and renamed into place (atomic).

An entry holds code that this process runs, so the cache reads only what this user
wrote, or what the configuration says to trust:

- A directory is used only when group and others cannot write it, and this user owns
  it or it is trusted by configuration: listed in ``PYGOMP_CACHE_READONLY_DIRS``, or
  the ``PYGOMP_CACHE_DIR`` set and not writable (a site-wide cache).  This is checked
  before each use; the directories the cache makes are 0700.
- An entry in a directory of this user's carries a MAC of its name and bytes under
  that directory's key (``.key``, random, 0600): keyed BLAKE2b, which needs no OpenSSL
  (loading it costs a new process milliseconds); one in a trusted directory of another
  user carries a BLAKE2b checksum, which is checked.  A key of the wrong length
  (damaged) is replaced once, with a warning, and the entries under it are rebuilt.
- A file written from an entry (`materialize`: a shared object to dlopen) is compared
  with the entry's bytes before its path is given out.

What fails a check is refused with a one-line RuntimeWarning (the path and the
reason), and rebuilt.  When the cache directory cannot be written, or is refused, new
entries go to ``<tempdir>/pygomp-cache-<uid>``, made 0700 or checked to be this user's;
if that one is refused too, to a fresh private directory removed at exit.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import stat
import warnings
from _operator import _compare_digest      # hmac.compare_digest, without OpenSSL

try:
    from _blake2 import blake2b             # hashlib's own; hashlib imports OpenSSL
except ImportError:                         # a Python built without it
    from hashlib import blake2b

from .._version import VERSION
from . import env

FORMAT = "3"                    # part of every key: entries of older layouts never match
MAGIC = b"PYGOMP-CACHE-3:"
_TRAILER = len(MAGIC) + 128     # MAGIC, then the checksum and the MAC, 32 bytes each in hex
_UID = os.geteuid() if hasattr(os, "geteuid") else None     # None: no POSIX modes
stats = {"hits": 0, "builds": 0}
_by_target = {}
_dirs = {}                      # configuration -> ([(dir, trusted)], write dir)


def target_stats(target: str) -> dict:
    """Builds and cache hits of one target's `Plugin.compile` in this process."""
    return _by_target.setdefault(target, {"builds": 0, "cache_hits": 0})


def _warn(path, why):
    warnings.warn(f"pygomp: the kernel cache refuses {path}: {why}", RuntimeWarning,
                  stacklevel=3)


def _unsafe(path, trusted=False, follow=True):
    """Why the directory ``path`` must not be used, or None."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError as e:
        return f"it cannot be read ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if _UID is None:
        return None
    if st.st_mode & 0o022:
        return f"group or others can write it (mode {stat.S_IMODE(st.st_mode):04o})"
    if st.st_uid != _UID and not trusted:
        return f"it is owned by uid {st.st_uid}, not by this user (uid {_UID})"
    return None


def _checked(path, trusted=False):
    why = _unsafe(path, trusted)
    if why:
        _warn(path, why)
    return not why


def _makedir(path):
    if not os.path.isdir(path):         # as a rule it is: no failed mkdir to catch
        with contextlib.suppress(OSError):
            os.makedirs(path, mode=0o700, exist_ok=True)


def directories():
    """``(read, write)``: the directories entries are looked up in, in order, and the one
    new entries go to.  A cache directory that cannot be written (a read-only file
    system, a shared cache) is still read; new entries then go to a directory of this
    user's under the temp dir, and a warning says so once."""
    read, write = _layout()
    return [d for d, _ in read], write


def _layout():
    d = env.cache_dir()
    extra = tuple(env.cache_readonly_dirs())
    configured = bool(os.environ.get("PYGOMP_CACHE_DIR"))
    found = _dirs.get((d, extra, configured))
    if found is None:
        found = _dirs[(d, extra, configured)] = _choose(d, extra, configured)
    return found


def _choose(d, extra, configured):
    _makedir(d)
    read, write, why = [], None, None
    if os.path.isdir(d):
        ours = _unsafe(d) is None
        writable = _writable(d)
        trusted = d in extra or (configured and not writable)
        why = _unsafe(d, trusted)
        if why is None:
            read.append((d, trusted and not ours))
            write = d if ours and writable else None
    for r in extra:
        if r != d and _checked(r, trusted=True):
            read.append((r, _unsafe(r) is not None))
    if write is None:
        write = _fallback()
        read.append((write, False))
        text = f"refuses {d}: {why}; new entries are written to" if why else \
            f"{d} cannot be written: its entries are read, new ones are written to"
        warnings.warn(f"pygomp: the kernel cache {text} {write}", RuntimeWarning,
                      stacklevel=4)
    return read, write


def _fallback():
    """``<tempdir>/pygomp-cache-<uid>`` when this user owns it, with a safe mode (it is
    made 0700 when missing), else a fresh private directory that lives as long as the
    process."""
    import shutil
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"pygomp-cache-{_UID}")
    with contextlib.suppress(OSError):
        os.mkdir(path, 0o700)               # fails when it exists: then it is checked
    why = _unsafe(path, follow=False)       # a link planted there is refused too
    if why is None and _writable(path):
        return path
    private = tempfile.mkdtemp(prefix="pygomp-cache-")
    atexit.register(shutil.rmtree, private, True)
    _warn(path, f"{why or 'it cannot be written'}; this process writes to {private}")
    return private


def directory() -> str:
    """Where new entries are written (see `directories`)."""
    return _layout()[1]


def _writable(d) -> bool:
    """Whether this process can make a file in ``d`` (it tries: a new file of a random
    name, removed at once; tempfile is not imported for it)."""
    for _ in range(3):
        path = os.path.join(d, f".probe-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            continue
        except OSError:
            return False
        os.unlink(path)
        return True
    return False


def _read_dirs():
    """The directories to read, each checked now, with whether it is a trusted one of
    another user (no MAC key of ours)."""
    return [(d, trusted) for d, trusted in _layout()[0] if _checked(d, trusted)]


def digest(data: bytes, size: int = 32) -> str:
    """The BLAKE2b hash of ``data`` in hex (``size`` bytes): what the cache and the keys
    of its users hash with."""
    return blake2b(data, digest_size=size).hexdigest()


def key(*parts) -> str:
    h = blake2b(digest_size=20)
    for p in (VERSION, FORMAT) + parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()[:40]


def _dir_key(d, create=False):
    """The MAC key of directory ``d`` (made when ``create``), or None.  A key of the
    wrong length (damaged) is replaced, and the entries sealed under it removed, since
    no key can check them now: they are rebuilt when next used."""
    path = os.path.join(d, ".key")
    if create and not os.path.exists(path):
        _new_key(d, path, replace=False)
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as f:
            st, k = os.fstat(f.fileno()), f.read()
            why = _key_unsafe(st)
            if why is None and len(k) != 32:
                return _replace_damaged(d, path, f, len(k))
    except OSError:
        return None
    if why:
        _warn(path, why)
        return None
    return k


def _key_unsafe(st):
    """Why a key file of ``os.stat`` result ``st`` cannot be trusted, or None."""
    if _UID is None:
        return None
    if st.st_uid != _UID:
        return f"the key is owned by uid {st.st_uid}, not by this user (uid {_UID})"
    if st.st_mode & 0o077:
        return f"group or others can read the key (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _new_key(d, path, replace):
    """Writes a random key to ``path``: atomically, and unless ``replace`` never over
    one another process made."""
    import tempfile
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")          # mode 0600
    with os.fdopen(fd, "wb") as f:
        f.write(os.urandom(32))
    try:
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    except FileExistsError:
        pass
    except OSError:
        os.replace(tmp, path)               # a file system without hard links
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _replace_damaged(d, path, f, size):
    """Replaces the damaged key open as ``f``, once among processes: under a lock on
    it, and only while it is still the file at ``path``; then reads the key anew."""
    import fcntl
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    try:
        if os.path.samestat(os.fstat(f.fileno()), os.lstat(path)):
            for name in os.listdir(d):
                if name.endswith(".bin"):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(d, name))
            _new_key(d, path, replace=True)
            _warn(path, f"the key is damaged ({size} bytes, not 32); it is replaced, "
                        f"and the entries sealed under it are rebuilt")
    finally:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    return _dir_key(d)


def _mac(k, name, data):
    """Keyed BLAKE2b of the name and the bytes: a MAC by design (as HMAC is for SHA-2)."""
    h = blake2b(name.encode() + b"\0", key=k, digest_size=32)
    h.update(data)
    return h.hexdigest().encode()


def checksum(data: bytes) -> bytes:
    """An entry's checksum of its bytes, as its trailer holds it."""
    return digest(data).encode()


def _seal(data: bytes, name: str, k: bytes) -> bytes:
    return data + MAGIC + checksum(data) + _mac(k, name, data)


def _unseal(blob, name, k):
    """``(data, None)``, or ``(None, why)``; ``k`` None checks the checksum only."""
    if len(blob) < _TRAILER or blob[-_TRAILER:-128] != MAGIC:
        return None, "it is truncated or not a cache entry"
    data, digest, mac = blob[:-_TRAILER], blob[-128:-64], blob[-64:]
    if checksum(data) != digest:
        return None, "its checksum does not match (it is corrupt)"
    if k is not None and not _compare_digest(_mac(k, name, data), mac):
        return None, "its MAC does not match (it was changed after it was written)"
    return data, None


def _read(path):
    """The bytes of ``path``, or None when missing or when others can write it."""
    try:
        with open(path, "rb") as f:
            st, blob = os.fstat(f.fileno()), f.read()
    except OSError:
        return None
    if _UID is not None and st.st_mode & 0o022:
        _warn(path, f"group or others can write it (mode {stat.S_IMODE(st.st_mode):04o})")
        return None
    return blob


def get(k: str, suffix: str = "") -> bytes | None:
    """The bytes stored under key ``k``, or None (missing, corrupt or refused)."""
    name = k + suffix + ".bin"
    for d, trusted in _read_dirs():
        path = os.path.join(d, name)
        if not os.path.exists(path):
            continue
        mac_key = None if trusted else _dir_key(d)      # first: it may replace a key
        blob = _read(path)
        if blob is None:
            continue
        if trusted or mac_key is not None:
            data, why = _unseal(blob, name, mac_key)
        else:
            data, why = None, "its directory has no key to check it with"
        if why:
            _warn(path, why)
            continue
        stats["hits"] += 1
        return data
    return None


def put(k: str, data: bytes, suffix: str = "") -> None:
    d = directory()
    _makedir(d)
    if not _checked(d):
        return
    name = k + suffix + ".bin"
    mac_key = _dir_key(d, create=True)
    if mac_key is None:
        return
    sealed = _seal(data, name, mac_key)
    import tempfile
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(sealed)
        os.replace(tmp, os.path.join(d, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def get_or_build(k: str, build, suffix: str = "") -> bytes:
    """The cached bytes for ``k``, or ``build()``'s result, stored for next time."""
    data = get(k, suffix)
    if data is None:
        data = build()
        stats["builds"] += 1
        put(k, data, suffix)
    return data


def helper_object(what: str, source: str, compiler_id, compile_c, name: str) -> str | None:
    """The path of a small C object of the runtime's own (not a kernel: not counted in
    the builds), compiled by ``compile_c(source, name)`` once and kept here; None where
    there is no compiler or no cache."""
    try:
        k = key(what, source, compiler_id)
        code = get(k)
        if code is None:
            code = compile_c(source, name)
            put(k, code)
        return materialize(k, code, ".so")
    except Exception:           # noqa: BLE001  (no compiler, no cache)
        return None


def materialize(k: str, data: bytes, suffix: str) -> str:
    """A file holding ``data`` (e.g. a shared object to dlopen), written once and reused;
    its name carries the content hash, and a file found under that name is used only
    when it holds exactly these bytes (else it is refused and written anew)."""
    name = f"{k}-{digest(data, 8)}{suffix}"
    for d, trusted in _read_dirs():
        lib = os.path.join(d, "lib")
        path = os.path.join(lib, name)
        if not os.path.exists(path) or not _checked(lib, trusted):
            continue
        found = _read(path)
        if found == data:
            return path
        if found is not None:
            _warn(path, "its bytes differ from its cache entry (it was changed after "
                        "it was written)")
    lib = os.path.join(directory(), "lib")
    _makedir(lib)
    why = _unsafe(lib)
    if why:
        raise OSError(f"pygomp: the kernel cache refuses {lib}: {why}")
    import tempfile
    fd, tmp = tempfile.mkstemp(dir=lib, prefix=".tmp-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    path = os.path.join(lib, name)
    os.replace(tmp, path)
    return path
