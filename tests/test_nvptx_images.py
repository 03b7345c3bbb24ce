"""C programs built with gcc's nvptx offload compiler (``-foffload=nvptx-none``, OpenMP
and OpenACC) under the shim: their images enter pygomp's registry, read as `nm`, the
binary's .rodata and ptxas say; without a GPU every region falls back and gives the
right values; the CUDA plugin's launch convention for them (geometry and parameter
block, with a stand-in for CuPy).  The tests named ``cuda`` run the programs on a GPU
and skip here with the reason; bench/gpu_check.sh runs them."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pygomp.csrc import shim
from pygomp.runtime import images
from pygomp.runtime.gcc_images import NvptxImage, entries
from pygomp.runtime.plugin import Image

HERE = Path(__file__).parent / "c"
OFFLOAD = ["-O1", "-foffload=nvptx-none", "-foffload-options=nvptx-none=-misa=sm_80"]
MODELS = {"omp": ("nvptx_omp.c", "-fopenmp"), "acc": ("nvptx_acc.c", "-fopenacc")}
TIMEOUT = 180


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "ACC_", "GOMP_", "PYGOMP_", "LD_PRELOAD"))}
    env["PYGOMP_CACHE_DIR"] = os.environ["PYGOMP_CACHE_DIR"]
    env.update(extra)
    return env


def _gcc(args):
    return subprocess.run(["gcc", *args], capture_output=True, text=True, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def offload_compiler(tmp_path_factory):
    """Skips where gcc has no nvptx offload compiler (Debian: gcc-12-offload-nvptx)."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    d = tmp_path_factory.mktemp("probe")
    (d / "p.c").write_text("int main(void){int a=0;\n#pragma omp target map(tofrom:a)\n"
                           "a=1;\nreturn !a;}\n")
    done = _gcc(["-fopenmp", *OFFLOAD, str(d / "p.c"), "-o", str(d / "p")])
    if done.returncode:
        pytest.skip(f"gcc cannot build for nvptx-none (install gcc-12-offload-nvptx): "
                    f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}")


@pytest.fixture(scope="module")
def built(offload_compiler, tmp_path_factory):
    """model -> (program, shared library of the same source, its main renamed)."""
    out = tmp_path_factory.mktemp("nvptx")
    got = {}
    for model, (src, flag) in MODELS.items():
        exe, so = out / model, out / f"lib{model}.so"
        for args in ([str(HERE / src), "-o", str(exe)],
                     [str(HERE / src), "-Dmain=pg_main", "-fPIC", "-shared", "-o", str(so)]):
            done = _gcc([flag, *OFFLOAD, *args])
            assert done.returncode == 0, done.stderr
        got[model] = (str(exe), str(so))
    return got


# What a Python process that loads the shim and then a library sees in the registry.
READER = textwrap.dedent(r"""
    import ctypes, json, sys
    from pygomp.csrc import shim
    from pygomp.runtime import images
    lib = shim.load()
    so = ctypes.CDLL(sys.argv[1])
    lib.omp_get_num_devices()              # Python takes the waiting tables
    out = []
    for t in images.tables():
        if all(i.target != "cuda" for i in t.images):  # the declare target variables of
            continue                        # the loaded objects (runtime/elf_tables.py)
        before = repr(t.images[0])
        host = t.image_for("host", "host")
        image = t.image_for("cuda", "cuda:sm_90")
        for i, p in enumerate(image.ptx):
            open(f"{sys.argv[2]}/{len(out)}-{i}.ptx", "wb").write(p)
        out.append({"before": before, "host": repr(host), "functions": t.functions,
                    "variables": t.variables, "kernels": [k.name for k in image.kernels],
                    "image_variables": image.variables, "dims": image.dims,
                    "modes": image.modes, "n_ptx": len(image.ptx),
                    "counter": ctypes.addressof(ctypes.c_int.in_dll(so, sys.argv[3]))})
    print(json.dumps(out))
""")
KNOWN = {"omp": "counter", "acc": "g"}          # a variable of each program


@pytest.fixture(scope="module")
def registered(built, tmp_path_factory):
    """model -> (the registry's tables of the library, the folder of its PTX)."""
    out = {}
    for model, (_, so) in built.items():
        d = tmp_path_factory.mktemp(f"ptx-{model}")
        done = subprocess.run([sys.executable, "-c", READER, so, str(d), KNOWN[model]],
                              capture_output=True, text=True, timeout=TIMEOUT,
                              env=_env(PYGOMP_DEVICES="host"))
        assert done.returncode == 0, done.stderr
        out[model] = (json.loads(done.stdout), d)
    return out


def _nm(path):
    """symbol -> address in the file, for the defined ones."""
    done = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    syms = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2]] = int(parts[0], 16)
    return syms


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_table_is_registered_and_read_on_first_use(registered, model):
    (table,), _ = registered[model]
    assert table["before"] == "<pending cuda image, not read yet>"
    assert table["host"] == "None"             # a host device has no image of it


@pytest.mark.parametrize("model", sorted(MODELS))
def test_functions_and_variables_match_nm(built, registered, model):
    (table,), _ = registered[model]
    syms = _nm(built[model][1])
    base = table["counter"] - syms[KNOWN[model]]
    by_address = {a: s for s, a in syms.items()}
    host_names = [by_address[f - base] for f in table["functions"]]
    assert all(re.fullmatch(r"pg_main\._omp_fn\.\d+", n) for n in host_names), host_names
    # GCC names a region's device kernel as its host function, '.' spelled '$'
    assert table["kernels"] == [n.replace(".", "$") for n in host_names]
    names = [by_address[a - base] for a, _ in table["variables"]]
    assert [[n, s] for n, (_, s) in zip(names, table["variables"])] == table["image_variables"]
    want = {"omp": [["counter", 4], ["table", 128]], "acc": [["g", 256]]}[model]
    assert sorted(table["image_variables"]) == want
    regions = re.findall(r"#pragma (?:omp target(?! (?:update|data))|acc (?:parallel|kernels))",
                         (HERE / MODELS[model][0]).read_text())
    assert len(table["kernels"]) == len(regions)       # one kernel per region of the source


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_ptx_is_the_binarys_own(built, registered, model):
    (table,), folder = registered[model]
    rodata = folder / "rodata"
    done = subprocess.run(["objcopy", "-O", "binary", "--only-section=.rodata",
                           built[model][1], str(rodata)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = rodata.read_bytes()
    objects = [p.read_bytes() for p in sorted(folder.glob("0-*.ptx"))]
    assert len(objects) == table["n_ptx"] == data.count(b"// BEGIN PREAMBLE\n")
    assert all(o.endswith(b"\0") and o in data for o in objects)
    found = entries(objects)
    assert set(table["kernels"]) <= set(found)
    # OpenMP kernels take the address block, the soft stacks and a stack's size
    assert table["modes"] == [model] * len(table["kernels"])
    assert {found[k] for k in table["kernels"]} == {"omp": {3}, "acc": {1}}[model]
    if model == "acc":              # the compiler's dims: vector_length(64), num_gangs(8)
        assert [8, 1, 64] in table["dims"]
    else:
        assert all(d == [0, 0, 0] for d in table["dims"])


PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas"
                                  if os.access("/usr/local/bin/ptxas", os.X_OK) else None)


@pytest.mark.skipif(PTXAS is None, reason="no ptxas (CUDA's PTX assembler) on this machine")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_ptx_passes_ptxas(registered, model, arch, tmp_path):
    _, folder = registered[model]
    for i, p in enumerate(sorted(folder.glob("0-*.ptx"))):
        src = tmp_path / f"{i}.ptx"
        src.write_bytes(p.read_bytes().rstrip(b"\0"))
        done = subprocess.run([PTXAS, "-c", f"-arch={arch}", str(src), "-o", os.devnull],
                              capture_output=True, text=True, timeout=TIMEOUT)
        assert done.returncode == 0, f"{p.name}: {done.stderr}"


@pytest.fixture(scope="module")
def fallback_runs(built):
    """Every program under libgomp alone and under the shim's host device."""
    lib = shim.path()
    runs = {}
    for model, (exe, _) in built.items():
        runs[model, "libgomp"] = subprocess.run([exe], capture_output=True, text=True,
                                                timeout=TIMEOUT, env=_env())
        runs[model, "shim"] = subprocess.run(
            [exe], capture_output=True, text=True, timeout=TIMEOUT,
            env=_env(LD_PRELOAD=lib, PYGOMP_DEVICES="host", PYGOMP_INFO="0x10"))
    return runs


REGIONS = {"omp": ["saxpy", "reduction", "declare target variables", "teams and threads",
                   "nowait in a data region", "a region with one scalar"],
           "acc": ["gang vector loop", "reduction", "kernels", "declare create",
                   "async queue"]}


@pytest.mark.parametrize("how", ["libgomp", "shim"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_without_a_gpu_every_region_falls_back_right(fallback_runs, model, how):
    done = fallback_runs[model, how]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"ok {r}" for r in REGIONS[model]] + ["0 failed"]


def test_pending_images_are_read_once_and_only_for_their_target():
    calls = []
    image = Image("cuda", b"code")
    pending = images.Pending("cuda", "", lambda: calls.append(1) or image)
    table = images.OffloadImage(functions=[], variables=[], images=(pending,))
    assert table.image_for("host", "host") is None and calls == []
    assert table.image_for("cuda", "cuda:sm_90") is image
    assert table.image_for("cuda", "cuda:sm_80") is image and calls == [1]


# -- the CUDA plugin's convention for these images, with stand-ins for the GPU -------

gcc = pytest.importorskip("pygomp.plugins.cuda.gcc")
H200 = {"registers_per_multiprocessor": 65536, "multiprocessors": 132,
        "max_grid_dim_x": 2**31 - 1, "max_threads_per_block": 1024,
        "max_threads_per_multiprocessor": 2048}


def _kernel(mode, dims=(0, 0, 0), max_threads=1024, regs=32):
    return gcc.Kernel("main$_omp_fn$0", 0xF00, mode, dims, max_threads, regs)


def test_openmp_geometry_as_libgomps_nvptx_plugin():
    k = _kernel("omp")
    # 8 warps by default; teams: the blocks the registers hold, times the SMs
    assert gcc.omp_geometry(k, H200, (0, 0, 0)) == (65536 // (32 * 32 * 8) * 132, 8)
    assert gcc.omp_geometry(k, H200, (4, 2, 0)) == (4, 2)
    assert gcc.omp_geometry(_kernel("omp", max_threads=128), H200, (0, 64, 0))[1] == 4


def test_openacc_geometry_compiler_dims_win_and_zeros_get_defaults():
    assert gcc.acc_geometry(_kernel("acc", (8, 1, 64)), H200, (100, 4, 32)) == (8, 1, 64)
    assert gcc.acc_geometry(_kernel("acc"), H200, (0, 0, 0)) == (2 * 132, 32, 32)
    assert gcc.acc_geometry(_kernel("acc", (0, 0, 32)), H200, (16, 2, 0)) == (16, 2, 32)
    with pytest.raises(Exception, match="num_workers 64 x vector_length 32"):
        gcc.acc_geometry(_kernel("acc", max_threads=1024), H200, (1, 64, 32))


class _FakeCupy:
    """What gcc.launch uses of CuPy, recording the launch and its parameter values."""

    def __init__(self):
        import ctypes
        self.ctypes = ctypes
        self.launches, self.copies, self.memory = [], [], {}
        fake = self

        class Block:
            def __init__(self, size):
                self.buffer = ctypes.create_string_buffer(size)
                self.ptr = ctypes.addressof(self.buffer)

                class Mem:
                    pass
                self.mem = Mem()
                self.mem.size = size

        class Pool:
            def malloc(self, size):
                return Block(size)

        class Stream:
            ptr = 0x5
            def __enter__(self): return self
            def __exit__(self, *a): return False

        class Runtime:
            memcpyHostToDevice = 1

            def memcpyAsync(self, dst, src, n, kind, stream):
                ctypes.memmove(dst, src, n)
                fake.copies.append((dst, n, stream))

        class Driver:
            def launchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
                n = 3 if fake.mode == "omp" else 1
                ptrs = (ctypes.c_void_p * n).from_address(params)
                values = [ctypes.c_uint64.from_address(p).value for p in ptrs]
                fake.launches.append(((gx, gy, gz), (bx, by, bz), shared, stream, values))

        class Cuda:
            runtime, driver = Runtime(), Driver()
        self.cuda = Cuda()

        class Device:
            pool, stream, stacks = Pool(), Stream(), None
        self.device = Device()


@pytest.mark.parametrize("mode", ["omp", "acc"])
def test_a_launch_passes_the_address_block(mode):
    import ctypes
    cp = _FakeCupy()
    cp.mode = mode
    k = _kernel(mode)
    geometry = (4, 2) if mode == "omp" else (8, 2, 32)
    block = gcc.launch(cp, cp.device, H200, k, [0x1000, 7, 0x2000], geometry)
    (grid, threads, shared, stream, values), = cp.launches
    assert stream == 0x5 and shared == 0
    assert values[0] == block.ptr
    assert list((ctypes.c_uint64 * 3).from_address(block.ptr)) == [0x1000, 7, 0x2000]
    if mode == "omp":               # teams x (32 lanes, warps); a stack a warp
        assert (grid, threads) == ((4, 1, 1), (32, 2, 1))
        assert values[2] == gcc.STACK
        assert cp.device.stacks.mem.size == gcc.STACK * 4 * 2 and values[1] == cp.device.stacks.ptr
    else:                           # gangs x (vector, workers)
        assert (grid, threads) == ((8, 1, 1), (32, 2, 1))


# -- on a GPU (bench/gpu_check.sh): the same programs on the CUDA plugin -------------

def _gpu():
    from pygomp.runtime import devices
    p = devices.plugins().get("cuda")
    if p is None or isinstance(p, Exception) or not p.num_devices():
        pytest.skip(f"no CUDA device: {getattr(p, 'unavailable', '') or p}")


@pytest.mark.parametrize("model", sorted(MODELS))
def test_cuda_runs_gcc_images(built, model):
    _gpu()
    done = subprocess.run([built[model][0]], capture_output=True, text=True, timeout=TIMEOUT,
                          env=_env(LD_PRELOAD=shim.path(), PYGOMP_DEVICES="cuda:0",
                                   OMP_TARGET_OFFLOAD="mandatory", PYGOMP_INFO="0x10"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"ok {r}" for r in REGIONS[model]] + ["0 failed"]
    assert "no image" not in done.stderr         # every region ran on the GPU
    assert "device 0: run" in done.stderr
