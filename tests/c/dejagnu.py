"""What conformance.py reads of DejaGnu's test files: the ``{ dg-... }`` directives, the
Tcl words of their arguments and the target selectors they name."""
from __future__ import annotations

import fnmatch
import re

TRIPLET = "x86_64-pc-linux-gnu"


def tcl(s: str) -> str:
    """A Tcl double-quoted string's backslash substitutions."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r", "t": "\t"}.get(m.group(1),
                                                                           m.group(1)), s)


def words(text: str) -> list[str]:
    """A Tcl list: "quoted" strings (backslashes kept), {braced} groups, bare words."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i + 1:j])
            i = j + 1
        elif c == "{":
            depth, j = 1, i + 1
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            out.append(text[i + 1:j - 1].strip())
            i = j
        else:
            j = i
            while j < len(text) and not text[j].isspace():
                j += 1
            out.append(text[i:j])
            i = j
    return out


def directives(text: str):
    """(name, arguments) of each ``{ dg-name arguments }``, braces and quotes balanced
    (the rest of its line, a comment, is not part of it)."""
    for m in re.finditer(r"\{\s*dg-([\w-]+)", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == '"':
                i += 1
                while i < len(text) and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif c in "{}":
                depth += 1 if c == "{" else -1
            i += 1
        yield m.group(1), text[m.end():i - 1].strip()


def holds(selector: str, have, deferred, probes: list) -> bool:
    """Whether a DejaGnu target selector holds: triplet globs, effective targets in
    ``have``, ``!``, ``&&``, ``||`` and braces (juxtaposed terms: any of them).  A name in
    ``deferred`` (a probe's) is added to ``probes`` and counts as true (the probe decides
    at run time)."""
    tokens = re.findall(r"\|\||&&|!|[{}()]|[^\s{}()!|&]+", selector)
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take():
        pos[0] += 1
        return tokens[pos[0] - 1]

    def any_of():
        v = all_of()
        while peek() not in (None, "}", ")"):
            if peek() == "||":
                take()
            w = all_of()
            v = v or w
        return v

    def all_of():
        v = one()
        while peek() == "&&":
            take()
            w = one()
            v = v and w
        return v

    def one():
        t = take()
        if t == "!":
            return not one()
        if t in ("{", "("):
            v = any_of()
            take()
            return v
        if t in deferred:
            probes.append(t)
            return True
        if t.count("-") >= 2:
            return fnmatch.fnmatch(TRIPLET, t)
        return t in have

    return any_of() if tokens else True


def flags_match(patterns: str, flags) -> bool:
    return any(p == "*" or any(fnmatch.fnmatch(f, p) for f in flags)
               for p in words(patterns) if p)
