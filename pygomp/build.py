"""``python -m pygomp build FILE.py -o OUT.c [--targets host,opencl] [--signature ...]``

Kernels written in Python, called from C.  OUT.c holds, for every ``@target`` kernel of
FILE (one specialization each: parameter types from annotations such as ``x:
"float32[:]"`` or ``a: np.float32``, or ``--signature NAME=T1,T2,...``):

- a C entry point with a plain C signature: an array is a pointer and its extents
  (``float *x, int64_t x_n0``), a scalar its C type, and a kernel that returns a value
  returns it.  It offloads through GOMP_target_ext, so under libpygomp.so it runs on the
  default device and finds arrays present that the program mapped itself;
- its host code (the host dialect's C), which runs where no image does (under libgomp
  alone too);
- an image for each device identity of each target, compiled now through the cache, for
  the devices PYGOMP_DEVICES numbers (unset: every device of every plugin); a device that
  cannot have one (it does not work, or its compiler refuses the kernel) gets none, and
  one line on stderr names it and the reason;
- its descriptor table, registered by a constructor through GOMP_offload_register_ver
  and unregistered by a destructor.

docs/c-tables.md describes the table, the image formats and the calling convention.
"""
from __future__ import annotations

import argparse
import json
import runpy
import sys

from .compiler import annotate
from .compiler import types as T
from .errors import CompileError
from .runtime import devices, env, kinds
from .runtime.plugin import PluginError

TARGET_TYPE = 0x7067            # pygomp's offload target type (GCC's are 0..8)
VERSION = 1 << 16               # GOMP_VERSION_PACK(1, 0): any libgomp accepts it
MAGIC = "pygomp1"
FPI = kinds.FIRSTPRIVATE_INT

C_TYPES = {"bool": "bool", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t",
           "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t",
           "int64": "int64_t", "uint64": "uint64_t", "float32": "float", "float64": "double"}

PRELUDE = f"""\
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

void GOMP_target_ext(int, void (*)(void *), size_t, void **, size_t *, unsigned short *,
                     unsigned int, void **, void **);
void GOMP_offload_register_ver(unsigned, const void *, int, const void *);
void GOMP_offload_unregister_ver(unsigned, const void *, int, const void *);

/* pygomp's target data (docs/c-tables.md): metadata in JSON, then each image's code. */
struct pygomp_table {{
    char magic[8];                         /* "{MAGIC}" */
    const char *meta;
    uint64_t n_codes;
    const unsigned char *const *codes;
    const uint64_t *sizes;
}};

static void *pygomp_no_args[1];            /* GOMP_target_ext's args: none */

/* A floating-point scalar's bits as a firstprivate word. */
static inline void *pygomp_f64(double v) {{ uint64_t w; memcpy(&w, &v, 8); return (void *)(uintptr_t)w; }}
static inline void *pygomp_f32(float v) {{ uint32_t w; memcpy(&w, &v, 4); return (void *)(uintptr_t)w; }}
"""


def _types(kernel, signature):
    """The parameter types of a kernel: --signature, else annotations."""
    if signature is not None:
        if len(signature) != len(kernel.param_names):
            raise SystemExit(f"--signature {kernel.__name__}: {len(signature)} types for "
                             f"{len(kernel.param_names)} parameters")
        return signature
    out = []
    for name in kernel.param_names:
        t = kernel.annotations.get(name)
        if isinstance(t, annotate.ArrayAnn):
            if t.type is None:
                raise SystemExit(f"{kernel.__name__}: parameter {name!r} is annotated "
                                 f"{t.text}, which leaves its dtype or rank open: annotate "
                                 f"it (\"float32[:]\", ...) or give --signature")
            t = t.type
        if t is None:
            raise SystemExit(f"{kernel.__name__}: parameter {name!r} has no type: annotate "
                             f"it (\"float32[:]\", np.float64, ...) or give --signature")
        out.append(t)
    return out


class EntryPoint:
    """The C side of one kernel specialization."""

    def __init__(self, kernel, spec):
        self.kernel, self.spec = kernel, spec
        self.name = kernel.__name__
        self.host_fn = f"pygomp_host_{self.name}"
        self.params, self.words = [], []        # C parameters; map items in word order
        for (is_array, how, _), (cname, t), pname in zip(spec.steps, spec.params,
                                                         kernel.param_names):
            if is_array:
                ctype = t.elem.c if isinstance(t.elem, T.Record) else C_TYPES[t.elem.name]
                const = "const " if not how & kinds.FLAG_FROM else ""
                self.params.append(f"{const}{ctype} *{pname}")
                dims = [f"{pname}_n{k}" for k in range(t.ndim)]
                self.params += [f"int64_t {d}" for d in dims]
                size = " * ".join(f"(size_t){d}" for d in dims) + f" * sizeof({ctype})"
                self.words.append((f"(void *){pname}", size, how))
                self.words += [(f"(void *)(intptr_t){d}", "0", FPI) for d in dims]
            else:
                self.params.append(f"{C_TYPES[t.name]} {pname}")
                self.words.append((_word(pname, t), "0", FPI))
        self.ret = None if spec.ret is T.VOID else C_TYPES[spec.ret.name]
        if self.ret:
            self.words.append(("(void *)&pygomp_ret", "sizeof pygomp_ret", kinds.FROM))

    def c_entry(self) -> str:
        n = len(self.words)
        lines = [f"{self.ret or 'void'} {self.name}({', '.join(self.params) or 'void'})", "{"]
        if self.ret:
            lines.append(f"    {self.ret} pygomp_ret = 0;")
        lines += [f"    void *hostaddrs[{n}] = {{{', '.join(w for w, _, _ in self.words)}}};",
                  f"    size_t sizes[{n}] = {{{', '.join(s for _, s, _ in self.words)}}};",
                  f"    unsigned short kinds[{n}] = {{{', '.join(str(k) for _, _, k in self.words)}}};",
                  f"    GOMP_target_ext(-1, {self.host_fn}, {n}, hostaddrs, sizes, kinds, 0, "
                  f"NULL, pygomp_no_args);"]
        if self.ret:
            lines.append("    return pygomp_ret;")
        return "\n".join(lines + ["}"])

    def c_host(self, entry_symbol) -> str:
        launch = ", ".join(str(n) for n in self.kernel.launch)
        return (f"static void {self.host_fn}(void *words)\n{{\n"
                f"    static const int64_t launch[3] = {{{launch}}};\n"
                f"    {entry_symbol}((void **)words, launch);\n}}")


def _word(name, t: T.Scalar) -> str:
    """A scalar as GOMP_target_ext's firstprivate word (as Python's kernels pass it)."""
    if t.name in ("float64", "float32"):
        return f"pygomp_f{t.name[5:]}({name})"
    return f"(void *)(uintptr_t)(int64_t){name}"


def _images(spec, targets, said):
    """An image of ``spec`` for each device identity of every target, compiled now for
    the devices PYGOMP_DEVICES numbers (every device of every plugin when it is unset).
    A device that cannot have one gets none, and a line on stderr says why (once for the
    whole build, ``said``, when it is not the kernel's fault)."""
    def say(line):
        if line not in said:
            said.add(line)
            print(f"pygomp build: {line}", file=sys.stderr)
    chosen = [(p, i) for p, i in _devices() if p.target in targets]
    for t in sorted(set(targets) - {p.target for p, _ in chosen}):
        say(f"no {t} device here: no {t} images")
    out, units, seen = [], {}, set()
    for plugin, dev in chosen:
        info = plugin.devices()[dev]
        if info.problem:
            say(f"no images for {plugin.name}:{dev} ({info.name}): it does not work: "
                f"{info.problem}")
            continue
        ident = plugin.identity(dev)
        if (plugin.target, ident) in seen:
            continue
        seen.add((plugin.target, ident))
        try:
            if plugin.target not in units:
                units[plugin.target] = spec.unit(plugin.target_hooks())
            out.append(plugin.compile(dev, units[plugin.target]))
        except (CompileError, PluginError) as e:     # e.g. fp64 on a device without it
            reason = (getattr(e, "log", "") or str(e)).strip().splitlines()[0]
            say(f"no image of {spec.kernel.__name__} for {plugin.name}:{dev} ({info.name}): "
                f"{reason}")
    return out


def _devices():
    """(plugin, its device number) of every device images are built for."""
    if env.settings().devices is not None:
        return [(d.plugin, d.local) for d in devices.all_devices() if not d.is_initial]
    found = []
    for plugin in devices.plugins().values():
        if not isinstance(plugin, Exception):       # a plugin that cannot be loaded
            found += [(plugin, i) for i in range(plugin.num_devices())]
    return found


def _c_bytes(name, data: bytes) -> str:
    rows = [", ".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16)]
    return f"static const unsigned char {name}[] = {{\n    " + ",\n    ".join(rows) + "\n};"


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _meta(entry, imgs) -> str:
    return json.dumps({
        "name": entry.name, "launch": list(entry.kernel.launch),
        "images": [{"target": i.target, "identity": i.identity, "name": i.name,
                    "kernels": [k.as_dict() for k in i.kernels],
                    "variables": [list(v) for v in i.variables]} for i in imgs]})


def _table(entry, imgs) -> str:
    n = entry.name
    parts = [_c_bytes(f"pygomp_code_{n}_{i}", img.code) for i, img in enumerate(imgs)]
    codes = ", ".join(f"pygomp_code_{n}_{i}" for i in range(len(imgs))) or "0"
    sizes = ", ".join(str(len(img.code)) for img in imgs) or "0"
    parts += [
        f"static const unsigned char *const pygomp_codes_{n}[] = {{{codes}}};",
        f"static const uint64_t pygomp_sizes_{n}[] = {{{sizes}}};",
        f"static const struct pygomp_table pygomp_data_{n} = {{\"{MAGIC}\", "
        f"{_c_string(_meta(entry, imgs))}, {len(imgs)}, pygomp_codes_{n}, pygomp_sizes_{n}}};",
        f"static void *const pygomp_funcs_{n}[] = {{(void *){entry.host_fn}}};",
        f"static const void *const pygomp_host_table_{n}[4] = "
        f"{{pygomp_funcs_{n}, pygomp_funcs_{n} + 1, NULL, NULL}};"]
    return "\n".join(parts)


def _dedupe(sources) -> str:
    """The host code of several kernels in one file: their dialect's common preamble
    (includes, helpers) once."""
    seen, out = set(), []
    for src in sources:
        for chunk in src.split("\n\n"):
            if chunk.strip() and chunk not in seen:
                seen.add(chunk)
                out.append(chunk)
    return "\n\n".join(out)


def build(path, targets, signatures=None) -> str:
    """The C file for the kernels of the Python file ``path``."""
    from .kernels import Kernel, dialect_for
    ns = runpy.run_path(path, run_name="__pygomp_build__")
    kernels = [k for k in ns.values() if isinstance(k, Kernel)]
    if not kernels:
        raise SystemExit(f"no @target kernels in {path}")
    host = dialect_for("host")
    entries, hosts, tables, said = [], [], [], set()
    for k in kernels:
        spec = k.specialize(*_types(k, (signatures or {}).get(k.__name__)))
        e = EntryPoint(k, spec)
        unit = spec.unit(host)
        hosts.append(unit.source)
        entries.append((e, unit.entry))
        tables.append(_table(e, _images(spec, targets, said)))
    body = [f"/* Generated by `python -m pygomp build` from {path}: do not edit. */",
            PRELUDE, "/* -- host code " + "-" * 60 + " */", _dedupe(hosts)]
    for (e, symbol), table in zip(entries, tables):
        body += [f"/* -- {e.name} " + "-" * (66 - len(e.name)) + " */", e.c_host(symbol),
                 e.c_entry(), table]
    names = [e.name for e, _ in entries]
    body.append("__attribute__((constructor)) static void pygomp_register(void)\n{\n" + "".join(
        f"    GOMP_offload_register_ver({VERSION:#x}, pygomp_host_table_{n}, {TARGET_TYPE:#x}, "
        f"&pygomp_data_{n});\n" for n in names) + "}")
    body.append("__attribute__((destructor)) static void pygomp_unregister(void)\n{\n" + "".join(
        f"    GOMP_offload_unregister_ver({VERSION:#x}, pygomp_host_table_{n}, "
        f"{TARGET_TYPE:#x}, &pygomp_data_{n});\n" for n in names) + "}")
    return "\n\n".join(body) + "\n"


def main(argv=None) -> int:
    from .cli import parse_signatures
    p = argparse.ArgumentParser(prog="python -m pygomp build",
                                description="C entry points, host code, images and "
                                            "descriptor tables for the kernels in FILE")
    p.add_argument("file")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--targets", default=None,
                   help="comma-separated targets to make images for (default: every "
                        "installed plugin's)")
    p.add_argument("--signature", action="append", metavar="NAME=T1,T2,...")
    args = p.parse_args(argv)
    if args.targets:
        targets = {t.strip() for t in args.targets.split(",") if t.strip()}
    else:
        targets = {pl.target for pl in devices.plugins().values()
                   if not isinstance(pl, Exception)}
    text = build(args.file, targets, parse_signatures(args.signature))
    with open(args.output, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
