"""Errors shared by the layers: `PygompError`, the root of every error pygomp raises on
purpose; the compiler, the plugins' compile step and the faces raise `CompileError` from
here, so that a plugin need not import the compiler."""
from __future__ import annotations

import linecache
import re


class PygompError(Exception):
    """What pygomp raises on purpose, with words for the user.  Each such error also
    keeps the builtin base that says its kind (a `PluginError` is a RuntimeError, an
    `EnvError` a ValueError), so ``except RuntimeError`` still catches it."""


class CompileError(PygompError):
    """A kernel that cannot be compiled, with file, line and source line when known."""

    def __init__(self, message, file=None, line=None, source=None):
        self.message, self.file, self.line, self.source = message, file, line, source
        text = message
        if file is not None:
            text = f"{file}:{line}: {message}"
            if source:
                text += f"\n    {source.strip()}"
        super().__init__(text)


def compiler_error(compiler: str, output: str, name: str) -> CompileError:
    """A CompileError at the Python line of a C-family compiler's first error (generated
    sources carry ``#line``); gcc and clang write ``f.py:12:5: error:``, nvcc
    ``f.py(12): error:``.  ``name`` says what was compiled when no line is found."""
    m = re.search(r"^(.+?\.py)(?::(\d+):(?:\d+:)?|\((\d+)\):) (?:fatal )?error: (.*)$",
                  output, re.M)
    if m is None:
        return CompileError(f"{compiler} failed on {name}:\n{output}")
    file, line = m.group(1), int(m.group(2) or m.group(3))
    return CompileError(f"{compiler}: {m.group(4)}\n{output}", file, line,
                        linecache.getline(file, line))
