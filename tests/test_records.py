"""Record arrays (numpy structured dtypes) as kernel arguments: fields read and written
as ``p[i]["x"]`` and ``p["x"][i]``, sub-array fields, fields in array expressions and
reductions, aligned and packed layouts, mapping (target data, bounds checking), on every
device against the kernel's py_func; the same kernels under the CUDA emulation
(test_cuda_emu); and the messages for what stays refused."""
import os
import re
import sys

import numpy as np
import pytest

import pygomp
import pygomp.kernels as omp
from pygomp.errors import CompileError

sys.path.insert(0, os.path.dirname(__file__))

PT = np.dtype([("x", np.float64), ("y", np.float64), ("m", np.float32), ("id", np.int32),
               ("v", np.float64, (3,))])
PACKED = np.dtype([("flag", np.bool_), ("x", np.float64), ("k", np.int16),
                   ("w", np.float32, (2, 2))])                      # align=False: 27 bytes
ALIGNED = np.dtype([("flag", np.bool_), ("x", np.float64), ("k", np.uint16),
                    ("w", np.float32, (2, 2))], align=True)        # C's layout, padded
OFFSETS = np.dtype({"names": ["b", "a"], "formats": [np.int32, np.float64],
                    "offsets": [12, 0], "itemsize": 24})           # fields out of order


def particles(n, dtype=PT, seed=0):
    rng = np.random.default_rng(seed)
    p = np.zeros(n, dtype)
    for f in dtype.names:
        t = dtype.fields[f][0]
        base = t.subdtype[0] if t.subdtype else t
        if base.kind == "f":
            p[f] = rng.random(p[f].shape) * 2 - 1
        elif base.kind == "b":
            p[f] = rng.random(p[f].shape) < 0.5
        else:
            p[f] = rng.integers(0, 100, p[f].shape)
    return p


def same(a, b):
    for f in a.dtype.names:
        np.testing.assert_allclose(a[f], b[f], rtol=1e-6, atol=1e-12, err_msg=f)


def same_arrays(args, want):
    """The arrays of a kernel's arguments after it ran, against its py_func's."""
    for a, b in zip(args, want):
        if isinstance(a, np.ndarray) and a.dtype.names:
            same(a, b)
        elif isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-6)


@omp.target
def push(p, dt):
    for i in omp.parallel_range(p.shape[0]):
        p[i]["x"] += dt * p[i]["v"][0]
        p["y"][i] = p["y"][i] + dt * p["v"][i, 1]
        p["m"][i] = 2 * p[i]["m"]
        p[i]["v"][2] = p[i]["id"] * 0.5 - p["v"][i][0]
        if p[i]["id"] % 3 == 0:
            p[i]["id"] = -p[i]["id"]


@omp.target
def layouts(q, out):
    for i in omp.parallel_range(q.shape[0]):
        s = 0.0
        for a in range(2):
            for b in range(2):
                s += q[i]["w"][a, b] * (a + 1)
                q["w"][i, a, b] = q["w"][i, b, a] + 1
        out[i] = s + q[i]["x"] * (1 if q[i]["flag"] else -1) + q["k"][i]
        q[i]["k"] = q[i]["k"] + 1


@omp.target
def offsets(r):
    for i in omp.parallel_range(r.shape[0]):
        r[i]["b"] = r[i]["b"] * 2 + i
        r[i]["a"] = r[i]["a"] + r[i]["b"]


@omp.target
def grid(g):
    for i in omp.parallel_range(g.shape[0]):
        for j in range(g.shape[1]):
            g[i, j]["x"] = g[i][j]["y"] * j + g["v"][i, j, 2]


@omp.target
def fields_whole(p, e):
    p["x"][:] = p["x"] + 0.5 * p["y"]      # a field in array expressions
    p["v"][:, 1] = -p["v"][:, 0]
    e[0] = np.sum(p["x"])                   # and reductions
    e[1] = np.max(p["m"])
    e[2] = p["v"].sum()
    p["id"] = 7                             # all of a field


@omp.target
def energy(p):
    e = 0.0
    for i in omp.parallel_range(p.shape[0], reduction="+:e"):
        e += 0.5 * p[i]["m"] * (p[i]["v"][0] ** 2 + p[i]["v"][1] ** 2 + p[i]["v"][2] ** 2)
    return e


@omp.target
def viewed(p):
    xs = p["x"]
    vs = p["v"]
    for i in omp.parallel_range(p.shape[0]):
        xs[i] = vs[i, 2] + p.shape[0] + vs.shape[1]


@omp.declare_target
def kick(p, i, dt):
    p[i]["v"][0] += dt * p[i]["m"]


@omp.target
def kicks(p, dt):
    for i in omp.parallel_range(len(p)):
        kick(p, i, dt)


ODD = np.dtype([("int", np.int32), ("x-y", np.float64), ("pyg_a", np.float32)])
ODD_ALIGNED = np.dtype(ODD.descr, align=True)


@omp.target
def odd_names(p):                           # fields no C member could be named
    for i in omp.parallel_range(p.shape[0]):
        p[i]["x-y"] = p[i]["int"] * 2.0 + p["pyg_a"][i]


@omp.target
def counts(p, k):
    for i in omp.parallel_range(k.shape[0]):
        omp.atomic_add(p["x-y"], k[i], 1.0)
        omp.atomic_max(p["int"], k[i], i)


CASES = [
    (odd_names, lambda: (particles(50, ODD),)),
    (push, lambda: (particles(1000), 0.1)),
    (layouts, lambda: (particles(300, PACKED), np.zeros(300))),
    (layouts, lambda: (particles(300, ALIGNED), np.zeros(300))),
    (offsets, lambda: (particles(200, OFFSETS),)),
    (grid, lambda: (particles(60, PT).reshape(6, 10),)),
    (fields_whole, lambda: (particles(500), np.zeros(3))),
    (viewed, lambda: (particles(100),)),
    (kicks, lambda: (particles(100), 0.25)),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_record_kernels_on_every_device(device, k):
    kernel, make = CASES[k]
    args, want = make(), make()
    kernel.on(device)(*args)
    kernel.py_func(*want)
    same_arrays(args, want)


def test_reduction_over_a_field(device):
    p = particles(2000)
    assert np.isclose(energy.on(device)(p), energy.py_func(p), rtol=1e-9)


def test_atomics_on_fields(device):
    p, k = particles(10, ODD_ALIGNED), np.arange(95) % 10
    want = p.copy()
    counts.on(device)(p, k)
    np.add.at(want["x-y"], k, 1.0)
    np.maximum.at(want["int"], k, np.arange(95))
    same(p, want)


def test_atomics_refuse_unaligned_fields():
    """A packed float64 at offset 4: an atomic there faults on a GPU."""
    p, k = particles(10, ODD), np.arange(95) % 10
    with pytest.raises(CompileError, match=r"omp.atomic_add on the field 'x-y', which is not "
                                           r"aligned to its 8 bytes in every record \(offset "
                                           r"4, records of 16 bytes\): give the dtype "
                                           r"align=True"):
        counts.on(0)(p, k)


def test_layouts_match_numpy():
    from pygomp.compiler.records import record
    assert not record(PT).packed and not record(ALIGNED).packed
    assert record(PACKED).packed and record(PACKED).size == PACKED.itemsize == 27
    src = layouts.source(particles(2, PACKED), np.zeros(2))
    assert "struct __attribute__((packed))" in src


def test_target_data_keeps_records_on_the_device(device):
    p, want = particles(400), particles(400)
    with pygomp.target_data(device=device, tofrom=[p]):
        for _ in range(3):
            push.on(device)(p, 0.05)
    for _ in range(3):
        push.py_func(want, 0.05)
    same(p, want)


def test_enter_and_exit_data_with_records(offload_device):
    dev = offload_device
    p, want = particles(300), particles(300)
    pygomp.target_enter_data(device=dev, to=[p])
    try:
        push.on(dev)(p, 0.1)
        push.py_func(want, 0.1)
        assert not np.array_equal(p["x"], want["x"])        # still on the device
    finally:
        pygomp.target_exit_data(device=dev, from_=[p])
    same(p, want)


@omp.target(boundscheck=True)
def far(p, k):
    for i in omp.parallel_range(1):
        p[i]["v"][k] = 1.0


@omp.target(boundscheck=True)
def far_record(p, k):
    for i in omp.parallel_range(1):
        p[k]["x"] = p["y"][k] + 1


def numpy_says(kernel, *args):
    with pytest.raises(IndexError) as e:
        kernel.py_func(*args)
    return str(e.value)


def test_bounds_checking_on_records(device):
    p = particles(5)
    far.on(device)(p, 2)
    assert p["v"][0, 2] == 1.0
    said = numpy_says(far, particles(5), 3)         # p[0]["v"] has one axis: axis 0
    assert said == "index 3 is out of bounds for axis 0 with size 3"
    with pytest.raises(IndexError, match=f"test_records.py:[0-9]+: {said}$"):
        far.on(device)(p, 3)
    far_record.on(device)(p, 4)
    assert p["x"][4] == p["y"][4] + 1
    said = numpy_says(far_record, particles(5), 5)
    with pytest.raises(IndexError, match=f"test_records.py:[0-9]+: {said}$"):
        far_record.on(device)(p, 5)


def test_each_dtype_its_own_specialization():
    a = np.zeros(3, [("x", np.float64), ("y", np.float64)])
    b = np.zeros(3, [("y", np.float64), ("x", np.float64)])
    offsets_ab = omp.target(offsets.py_func)
    r1, r2 = particles(3, OFFSETS), np.zeros(3, [("a", np.float32), ("b", np.int64)])
    offsets_ab(r1)
    offsets_ab(r2)
    assert list(r2["b"]) == [0, 1, 2] and r1["a"][0] != 0
    assert a.dtype != b.dtype


# -- refusals ------------------------------------------------------------------------

@omp.target
def no_field(p):
    for i in omp.parallel_range(p.shape[0]):
        p[i]["z"] = 1.0


@omp.target
def attribute(p):
    for i in omp.parallel_range(p.shape[0]):
        p[i].x = 1.0


@omp.target
def whole(p, q):
    for i in omp.parallel_range(p.shape[0]):
        q[i] = p[i]


@omp.declare_target
def bump(x):
    x[0] += 1


@omp.target
def field_to_helper(p):
    bump(p["x"])


@omp.target
def not_a_record(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] = x[i]["a"]


@omp.target
def closure(p):
    def f(i):
        return p[i]["x"] * 2 + p["id"][i]
    for i in omp.parallel_range(p.shape[0]):
        p[i]["y"] = f(i)


def test_nested_function_reads_fields(device):
    p, want = particles(20), particles(20)
    closure.on(device)(p)
    closure.py_func(want)
    same(p, want)


def test_refusals():
    p = particles(3)
    with pytest.raises(CompileError, match=r"x\[i\]\['a'\]: x is a float64 array; a field "
                                           r"name indexes a record array"):
        not_a_record(np.zeros(3))
    with pytest.raises(CompileError, match=r"p\[i\]\['z'\]: the record array p has no "
                                           r"field 'z' \(its fields: x, y, m, id, v\)"):
        no_field(p)
    with pytest.raises(CompileError, match=r"p\[i\]\.x: a field of a structured array is "
                                           r"written p\[i\]\['x'\] \(\.x is numpy's "
                                           r"recarray"):
        attribute(p)
    with pytest.raises(CompileError, match=r"q\[i\] is a record \(or records\): kernels "
                                           r"read and write the fields"):
        whole(p, particles(3))
    with pytest.raises(CompileError, match=r"p\['x'\] is a field of a record array: "
                                           r"passing a field to a helper is not supported"):
        field_to_helper(p)
    nested = np.zeros(2, [("a", [("b", np.int32)])])
    with pytest.raises(TypeError, match="the field 'a' of .* is itself a record: nested "
                                        "structured dtypes are not supported"):
        offsets(nested)
    for f in (object, "U4", "S3"):
        what = re.escape(str(np.dtype(f)))
        with pytest.raises(TypeError, match=f"the field 'a' of .* has the dtype {what}: "
                                            f"record fields must be"):
            offsets(np.zeros(2, [("a", f)]))
    with pytest.raises(TypeError, match="a record \\(np.void\\) is not a kernel argument"):
        offsets(p[0])


# -- the CUDA dialect under the emulation of test_cuda_emu -------------------------------

@pytest.fixture(scope="module")
def emu():
    tce = pytest.importorskip("test_cuda_emu")
    return tce, tce.emulator([(k, make()) for k, make in CASES]
                             + [(energy, (particles(2),))])


@pytest.mark.parametrize("gangs, workers, vector", [(3, 2, 8), (1, 1, 32)])
def test_cuda_emulated(emu, gangs, workers, vector):
    tce, lib = emu
    for kernel, make in CASES:
        args, want = make(), make()
        tce.run(lib, kernel, args, gangs, workers, vector)
        kernel.py_func(*want)
        same_arrays(args, want)
    p = particles(3000)
    assert np.isclose(tce.run(lib, energy, (p,), gangs, workers, vector),
                      energy.py_func(p), rtol=1e-9)


# -- from C: examples/c/particles.c, an array of structs, under the shim ----------------

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "c")


@pytest.fixture(scope="module")
def particles_exe(tmp_path_factory):
    import subprocess
    out = tmp_path_factory.mktemp("particles")
    tables = out / "particles_offload.c"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYGOMP_D", "OMP_"))}
    done = subprocess.run([sys.executable, "-m", "pygomp", "build",
                           os.path.join(EXAMPLE, "particles.py"), "-o", str(tables)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    exe = out / "particles"
    done = subprocess.run(["gcc", "-O1", "-fopenmp", "-foffload=disable", "-Wall",
                           "-Wno-unused-function", os.path.join(EXAMPLE, "particles.c"),
                           str(tables), "-o", str(exe), "-lm"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return str(exe), env


@pytest.mark.parametrize("where", ["host", "opencl"])
def test_c_program_passes_its_structs(particles_exe, where):
    """A C program's array of structs goes to a kernel as the record array its dtype
    describes, in the program's own target data region (present: no copy) and alone."""
    import subprocess
    from pygomp.csrc import shim
    from pygomp.runtime import devices
    if where == "opencl" and not any(d.plugin.name == "opencl" for d in
                                     devices.all_devices()):
        pytest.skip("no OpenCL device")
    exe, env = particles_exe
    env = dict(env, PYGOMP_DEVICES=where, PYGOMP_INFO="0x18", LD_PRELOAD=shim.path())
    done = subprocess.run([exe, "3000"], capture_output=True, text=True, env=env,
                          timeout=180)
    assert done.returncode == 0 and ": ok (" in done.stdout, done.stdout + done.stderr
    assert "(56-byte structs)" in done.stdout
    assert len(re.findall(r"device 0: run 0x[0-9a-f]+ launch", done.stderr)) == 5
    # push's data region copies p in (1); kinetic maps p to the device (1)
    assert len(re.findall(r"copy to device", done.stderr)) == 2, done.stderr
