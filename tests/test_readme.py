"""Every ```python block of README.md runs as a program, as a reader would run it: in a
fresh process, on the default devices (the environment's PYGOMP_DEVICES, unset: all)."""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MPIEXEC = shutil.which("mpiexec", path=str(pathlib.Path(sys.executable).parent)) or \
    shutil.which("mpiexec")


def blocks():
    """(the heading above it, its text) for each python block, in order."""
    out, heading, fence, block = [], None, None, []
    for line in ROOT.joinpath("README.md").read_text().splitlines():
        if line.startswith("```"):
            if fence is None:
                fence, block = line[3:].strip(), []
            else:
                if fence == "python":
                    out.append((heading, "\n".join(block) + "\n"))
                fence = None
        elif fence is not None:
            block.append(line)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    return out


BLOCKS = dict(blocks())


def run(text, tmp_path, mpi=0):
    path = tmp_path / "snippet.py"
    path.write_text(text)
    cmd = [sys.executable, str(path)]
    if mpi:
        cmd = [MPIEXEC, "-n", str(mpi)] + cmd
    env = dict(os.environ, PYGOMP_UPC_TIMEOUT="60")
    p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_every_block_is_tested():
    assert len(BLOCKS) == len(blocks())        # one block a section: names stay unique
    assert set(BLOCKS) == {"Kernels", "NVIDIA GPUs", "Data mapping",
                           "OpenACC: `pygomp.openacc`",
                           "Profiling: OpenACC's interface for tools",
                           "Shared arrays over MPI ranks: `pygomp.upc`"}


def test_kernels(tmp_path):
    rc, out, err = run(BLOCKS["Kernels"], tmp_path)
    assert rc == 0, err
    assert out.split() == ["3000000.0"]         # dot(x, y) after y = 2 * 1 + 1


def test_data_mapping_fails_where_it_says(tmp_path):
    text = BLOCKS["Data mapping"]
    rc, out, err = run(text, tmp_path)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "# error:" in s)
    assert rc == 1
    assert f'snippet.py", line {line}' in err          # the line marked "error"
    last = err.strip().splitlines()[-1]
    assert last.startswith("pygomp.runtime.mapping.MappingError") and "present" in last


def test_openacc(tmp_path):
    rc, out, err = run(BLOCKS["OpenACC: `pygomp.openacc`"], tmp_path)
    assert rc == 0, err
    assert out.strip() == "[2. 2. 2.]"


def test_openacc_profiling(tmp_path):
    """On an offload device the events it names; on the initial device alone, none."""
    rc, out, err = run(BLOCKS["Profiling: OpenACC's interface for tools"], tmp_path)
    assert rc == 0, err
    assert out.split() in (["alloc", "8000", "enqueue_upload_start", "8000"], [])


def test_cupy_arrays_in_place(tmp_path):
    """It uses the saxpy kernel of the Kernels block, on device 0: a GPU."""
    from pygomp.runtime import devices
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("needs cupy: pip install 'pygomp[cuda]'")
    first = devices.all_devices()[0]
    if first.is_initial or first.plugin.name != "cuda":
        why = getattr(devices.plugins().get("cuda"), "unavailable", None)
        pytest.skip(f"needs a CUDA GPU as device 0 ({why or 'device 0 is another'})")
    text = BLOCKS["Kernels"] + BLOCKS["NVIDIA GPUs"] + "print(float(y[3]))\n"
    rc, out, err = run(text, tmp_path)
    assert rc == 0, err
    assert out.split()[-1] == "7.0"             # 2 * 3 + 1


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or MPIEXEC is None,
                    reason="needs mpi4py and mpiexec: pip install 'pygomp[mpi]'")
def test_upc_under_mpiexec(tmp_path):
    """Run as the README runs its UPC example: mpiexec -n 2 python FILE."""
    rc, out, err = run(BLOCKS["Shared arrays over MPI ranks: `pygomp.upc`"], tmp_path, mpi=2)
    assert rc == 0, out + err
    assert out.count(str(np.sin(12345.0))) == 2         # x[12345], printed by each rank
