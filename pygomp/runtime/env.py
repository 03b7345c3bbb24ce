"""Environment variables and the ICVs they set, parsed once.

OMP_TARGET_OFFLOAD   default | mandatory | disabled (case-insensitive)
OMP_DEFAULT_DEVICE   the default-device-var ICV (a device number)
OMP_DISPLAY_ENV      true | false | verbose: print the settings once, at start-up
PYGOMP_DEVICES       ordered list of ``plugin[:selector]``; device numbers follow it
                     (``none``: the initial device alone; empty is an error)
PYGOMP_INFO          bitmask of what to report on stderr (see INFO_*)
PYGOMP_PROFILE       a file to write a Chrome trace of the run into (see `trace`)
PYGOMP_BOUNDSCHECK   1: every kernel checks its array accesses (an IndexError at the
                     Python line; a decorator's ``boundscheck=`` wins)
PYGOMP_POISON        1: device memory a map allocates without copying into it (alloc,
                     from; OpenACC create, copyout) is filled, so that a missing ``to``
                     shows: signalling NaNs for float arrays, else 0xA5 bytes
GOMP_DEBUG           a nonzero number: libgomp's trace lines for what the runtime does as
                     libgomp does it (`debug`), on stderr
PYGOMP_CACHE_DIR     where compiled kernels and programs are cached (default: the user's
                     cache dir: $XDG_CACHE_HOME or ~/.cache, ~/Library/Caches, %LOCALAPPDATA%)
                     Used only when group and others cannot write it and this user owns
                     it, or when it is set and read-only (a site-wide cache: trusted)
PYGOMP_CACHE_READONLY_DIRS  more cache directories to read (never written), separated by
                     os.pathsep; trusted although another user owns them, but refused
                     when group or others can write them
"""
from __future__ import annotations

import os
import re
import sys
import _thread          # threading's own locks: importing threading takes 0.5 ms

from ..frozen import Frozen
from ..errors import PygompError

OPENMP_VERSION = 202111   # _OPENMP of the spec whose rules the runtime follows (5.2)

INFO_MAP = 0x01       # a mapping is created or removed
INFO_REUSE = 0x02     # a mapping is found present and reused
INFO_TABLE = 0x04     # the device's map is dumped on error, and what is left at exit
INFO_COPY = 0x08      # data is copied to or from a device
INFO_LAUNCH = 0x10    # a kernel is launched


class EnvError(PygompError, ValueError):
    """An environment variable has a value that cannot be used."""


class Settings(Frozen):
    """What the environment says, read once (`settings`):

    - ``target_offload``: "default", "mandatory" or "disabled"
    - ``default_device``, ``info`` (PYGOMP_INFO's bits), ``cache_dir``
    - ``display_env``: "", "true" or "verbose"
    - ``devices``: PYGOMP_DEVICES, None if unset
    - ``profile``: PYGOMP_PROFILE, where to write a trace, "" for none
    - ``boundscheck``: PYGOMP_BOUNDSCHECK, kernels check their array accesses
    - ``poison``: PYGOMP_POISON, fill what maps allocate without a copy
    - ``gomp_debug``: GOMP_DEBUG, libgomp's trace lines"""
    __slots__ = _fields = ("target_offload", "default_device", "display_env", "devices",
                           "info", "cache_dir", "profile", "boundscheck", "poison",
                           "gomp_debug")
    _defaults = {"profile": "", "boundscheck": False, "poison": False, "gomp_debug": False}


def _parse(environ) -> Settings:
    offload = environ.get("OMP_TARGET_OFFLOAD", "default").strip().lower()
    if offload not in ("default", "mandatory", "disabled"):
        raise EnvError(f"invalid value for environment variable OMP_TARGET_OFFLOAD: "
                       f"{environ['OMP_TARGET_OFFLOAD']!r} (expected DEFAULT, MANDATORY "
                       f"or DISABLED)")
    default_device = _int(environ, "OMP_DEFAULT_DEVICE", 0)
    if default_device < 0:
        raise EnvError(f"invalid value for environment variable OMP_DEFAULT_DEVICE: "
                       f"{default_device} (expected a device number >= 0)")
    display = environ.get("OMP_DISPLAY_ENV", "false").strip().lower()
    if display not in ("true", "false", "verbose"):
        raise EnvError(f"invalid value for environment variable OMP_DISPLAY_ENV: "
                       f"{environ['OMP_DISPLAY_ENV']!r} (expected TRUE, FALSE or VERBOSE)")
    return Settings(
        target_offload=offload,
        default_device=default_device,
        display_env="" if display == "false" else display,
        devices=environ.get("PYGOMP_DEVICES"),
        info=_int(environ, "PYGOMP_INFO", 0),
        cache_dir=cache_dir(environ),
        profile=environ.get("PYGOMP_PROFILE", ""),
        boundscheck=_int(environ, "PYGOMP_BOUNDSCHECK", 0) != 0,
        poison=_int(environ, "PYGOMP_POISON", 0) != 0,
        gomp_debug=_leading_int(environ.get("GOMP_DEBUG", "")) != 0,
    )


def _leading_int(text):
    """The number a text starts with, else 0 (C's atoi: libpygomp.so reads GOMP_DEBUG
    so)."""
    if not text:
        return 0                # unset, as a rule: no pattern to compile
    m = re.match(r"\s*[-+]?\d+", text)
    return int(m.group()) if m else 0


def _int(environ, name, default):
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text, 0)
    except ValueError:
        raise EnvError(f"invalid value for environment variable {name}: {text!r} "
                       f"(expected an integer)") from None


def cache_dir(environ=os.environ) -> str:
    """PYGOMP_CACHE_DIR, or the user cache dir (read each time: tests set it late)."""
    d = environ.get("PYGOMP_CACHE_DIR")
    if d:
        return d
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")
    elif os.name == "nt":
        base = environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    else:
        base = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "pygomp")


def cache_readonly_dirs(environ=os.environ) -> list:
    """PYGOMP_CACHE_READONLY_DIRS as a list (read each time, as `cache_dir`)."""
    return [d for d in environ.get("PYGOMP_CACHE_READONLY_DIRS", "").split(os.pathsep) if d]


_lock = _thread.allocate_lock()
_settings: Settings | None = None


def settings() -> Settings:
    global _settings
    if _settings is None:
        with _lock:
            if _settings is None:
                _settings = _parse(os.environ)
    return _settings


def info(bit: int, message: str) -> None:
    """Print a PYGOMP_INFO message if its bit is set."""
    if settings().info & bit:
        print(f"pygomp: {message}", file=sys.stderr, flush=True)


def debug(line: str) -> None:
    """Print one of libgomp's GOMP_DEBUG trace lines (``line`` ends with its newline)."""
    if settings().gomp_debug:
        sys.stderr.write(line)
        sys.stderr.flush()


def pointer(value: int) -> str:
    """An address as C's %p prints it."""
    return f"{value:#x}" if value else "(nil)"


def display() -> None:
    """Print the OMP_DISPLAY_ENV block on stderr, if asked for (once, at import)."""
    if not os.environ.get("OMP_DISPLAY_ENV"):
        return
    s = settings()
    if not s.display_env:
        return
    lines = ["OPENMP DISPLAY ENVIRONMENT BEGIN",
             f"  _OPENMP = '{OPENMP_VERSION}'",
             f"  OMP_DEFAULT_DEVICE = '{s.default_device}'",
             f"  OMP_TARGET_OFFLOAD = '{s.target_offload.upper()}'"]
    if s.display_env == "verbose":
        lines += [f"  PYGOMP_DEVICES = '{s.devices if s.devices is not None else ''}'",
                  f"  PYGOMP_INFO = '{s.info:#x}'",
                  f"  PYGOMP_CACHE_DIR = '{s.cache_dir}'",
                  f"  PYGOMP_PROFILE = '{s.profile}'"]
    lines.append("OPENMP DISPLAY ENVIRONMENT END")
    print("\n".join(lines), file=sys.stderr, flush=True)
