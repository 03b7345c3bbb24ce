"""python -m pygomp {info, demo, compile, build, shim, language}."""
from __future__ import annotations

import argparse
import sys


def info(args) -> int:
    from . import upc
    from .runtime import devices, env
    upc_lines = upc.info_lines()        # None outside mpiexec; [] on ranks other than 0
    if upc_lines == []:
        return 0
    s = env.settings()
    devs = devices.all_devices()        # a bad setting fails here, before any output
    print("plugins:")
    for name, p in sorted(devices.plugins().items()):
        if isinstance(p, Exception):
            print(f"  {name}: unavailable ({p})")
        else:
            caps = ", ".join(sorted(p.capabilities)) or "-"
            print(f"  {name}: target {p.target}, API v{p.api_version}, {caps}")
            if not p.num_devices() and p.unavailable:
                print(f"       no devices here: {p.unavailable}")
            for i, d in enumerate(p.devices()):
                if p.number(i) is None:
                    print(f"       {name}:{i} {d.kind}: {d.name} [{d.platform}] is no offload "
                          f"device: {_left_out(p, d)}")
    print("devices:")
    for dev in devs:
        i = dev.info
        what = "initial device (host, shared memory)" if dev.is_initial else (
            f"{dev.plugin.name}:{dev.local} {i.kind}")
        mem = f", {i.memory >> 20} MiB" if i.memory else ""
        print(f"  {dev.number}: {what}: {i.name}" + (f" [{i.platform}]" if i.platform else "")
              + mem)
        for k, v in sorted(i.properties.items()):
            print(f"       {k}: {v}")
    print("settings:")
    print(f"  OMP_TARGET_OFFLOAD = {s.target_offload.upper()}")
    print(f"  OMP_DEFAULT_DEVICE = {devices.get_default()}")
    print(f"  PYGOMP_DEVICES = {s.devices if s.devices is not None else '(unset: all devices)'}")
    print(f"  PYGOMP_INFO = {s.info:#x}")
    print(f"  PYGOMP_CACHE_DIR = {s.cache_dir}")
    if upc_lines:
        print("upc (pygomp.upc over MPI):")
        for line in upc_lines:
            print(f"  {line}")
    return 0


def _left_out(plugin, d) -> str:
    if d.problem:
        return d.problem
    if d.same_as is not None:
        return (f"the same {d.kind} as {plugin.name}:{d.same_as} "
                f"({plugin.devices()[d.same_as].name})")
    return "PYGOMP_DEVICES leaves it out"


def demo(args) -> int:
    from .demo import main as run_demo
    return run_demo(args.size)


def language(args) -> int:
    """The kernel language: the AST kinds a kernel may contain, then the functions it may
    call, by group, each with its line of doc."""
    import ast
    from .compiler import callables
    from .compiler.frontend import SUPPORTED
    print("Python a kernel may contain (AST node kinds):")
    for title, base in (("statements", ast.stmt), ("expressions", ast.expr)):
        print(f"  {title}:")
        for k, kind in SUPPORTED.items():
            if issubclass(k, base):
                print(f"    {k.__name__:<20} {kind.doc}")
    print(f"Functions a kernel may call ({len(callables.ENTRIES)}):")
    for group, title in callables.GROUPS.items():
        print(f"  {title}:")
        for e in callables.ENTRIES:
            if e.group == group:
                print(f"    {e.name:<20} {e.doc}")
    return 0


def shim(args) -> int:
    from .csrc.shim import path
    print(path())
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pygomp")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="plugins, devices and settings").set_defaults(func=info)
    d = sub.add_parser("demo", help="run the examples on every device, checked against numpy")
    d.add_argument("--size", type=int, default=0, help="problem size (0: each example's own)")
    d.set_defaults(func=demo)
    sub.add_parser("language", help="what a kernel may contain and call, with a line each"
                   ).set_defaults(func=language)
    sub.add_parser("shim", help="the path of libpygomp.so, the C face (built if needed)"
                   ).set_defaults(func=shim)
    sub.add_parser("compile", help="print the generated source of the kernels in a file "
                                   "(see: compile --help)")
    sub.add_parser("build", help="C entry points and offload tables for the kernels in a "
                                 "file (see: build --help)")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["compile"]:                 # its own parser
        from .cli import main as run_compile
        return run_compile(argv[1:])
    if argv[:1] == ["build"]:
        from .build import main as run_build
        return run_build(argv[1:])
    args = parser.parse_args(argv)
    from .runtime.devices import OffloadError
    from .runtime.env import EnvError
    try:
        return args.func(args)
    except (OffloadError, EnvError) as e:      # a setting that cannot work: say which
        print(f"python -m pygomp {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
