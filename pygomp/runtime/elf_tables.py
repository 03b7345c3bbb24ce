"""The offload tables a C program carries in its own ELF sections.

``gcc -fopenmp`` (or ``-fopenacc``) puts every ``declare target`` function in the section
``.gnu.offload_funcs`` (one address per function) and every ``declare target`` (or
``acc declare``) variable in ``.gnu.offload_vars`` (address, then size; the size's top
bit marks ``declare target link``), whether or not it builds an offload image. With
``-foffload=disable`` nothing registers them, so `loaded` finds them in every object
the process has loaded: the section headers come from the object's file, the contents
from memory, where the dynamic loader has relocated them.
"""
from __future__ import annotations

import ctypes
import struct

from ..frozen import Frozen
from . import images
from .contract import ProgramImage

LINK_BIT = 1 << 63
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")      # Elf64_Ehdr
_SHDR = struct.Struct("<IIQQQQIIQQ")            # Elf64_Shdr
_NAMES = {b".gnu.offload_funcs": "functions", b".gnu.offload_vars": "variables"}


class Tables(Frozen):
    """One object's tables, read from its memory: its ``path``, ``functions`` (host
    addresses), ``variables`` ((host address, size without the link bit)) and ``links``
    (per variable: declare target link)."""
    __slots__ = _fields = ("path", "functions", "variables", "links")


def offload_table(found: Tables) -> images.OffloadImage:
    """The registry's table of one object's declare-target variables (its functions
    stay out: a region's host function is run by address, as before)."""
    image = ProgramImage("host", b"", (), tuple(("", s) for _, s in found.variables),
                         name=found.path, addresses=tuple(a for a, _ in found.variables))
    return images.OffloadImage(functions=[], variables=list(found.variables),
                               images=(image,), name=f"{found.path}: declare target variables")


class _Info(ctypes.Structure):      # the head of struct dl_phdr_info
    _fields_ = [("addr", ctypes.c_uint64), ("name", ctypes.c_char_p)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Info), ctypes.c_size_t,
                             ctypes.c_void_p)


def _objects() -> list:
    """(file path, load bias) of every loaded object; the program is /proc/self/exe."""
    out = []

    def each(info, size, data):
        name = info.contents.name.decode(errors="surrogateescape") if info.contents.name else ""
        out.append((name or "/proc/self/exe", info.contents.addr))
        return 0

    ctypes.CDLL(None).dl_iterate_phdr(_CALLBACK(each), None)
    return out


def sections(path: str) -> dict:
    """The offload sections of an ELF file: "functions"/"variables" -> (address, size)
    as linked; {} for a file that is not a 64-bit little-endian ELF or has neither."""
    try:
        with open(path, "rb") as f:
            head = f.read(_EHDR.size)
            if len(head) < _EHDR.size or head[:6] != b"\x7fELF\x02\x01":
                return {}
            *_, shoff, _, _, _, _, shentsize, shnum, shstrndx = _EHDR.unpack(head)
            if not shoff or shentsize != _SHDR.size or shstrndx >= shnum:
                return {}
            f.seek(shoff)
            table = f.read(shnum * shentsize)
            heads = [_SHDR.unpack_from(table, i * shentsize) for i in range(shnum)]
            strtab = heads[shstrndx]
            f.seek(strtab[4])
            names = f.read(strtab[5])
    except OSError:
        return {}
    out = {}
    for name, _, _, addr, _, size, *_ in heads:
        key = _NAMES.get(names[name:names.find(b"\0", name)])
        if key and size:
            out[key] = (addr, size)
    return out


def _words(addr: int, size: int) -> list:
    return list((ctypes.c_uint64 * (size // 8)).from_address(addr))


def loaded() -> list[Tables]:
    """The tables of every loaded object that has any."""
    out = []
    for path, bias in _objects():
        found = sections(path)
        if not found:
            continue
        functions = _words(bias + found["functions"][0], found["functions"][1]) \
            if "functions" in found else []
        pairs = _words(bias + found["variables"][0], found["variables"][1]) \
            if "variables" in found else []
        sizes = pairs[1::2]
        out.append(Tables(path, tuple(functions),
                          tuple((a, s & ~LINK_BIT) for a, s in zip(pairs[::2], sizes)),
                          tuple(bool(s & LINK_BIT) for s in sizes)))
    return out
