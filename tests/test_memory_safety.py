"""Memory handed to C stays owned while C uses it: kernels run in a process whose
allocator fills freed memory with a pattern (PYTHONMALLOC=malloc MALLOC_PERTURB_), so a
kernel that reads a freed argument array gets garbage instead of its arguments."""
import os
import subprocess
import sys
import textwrap

KERNELS = textwrap.dedent("""
    import sys
    import numpy as np
    import pygomp.kernels as omp
    sys.path.insert(0, {root!r})
    from examples.dot import dot

    @omp.target
    def axpbyc(a: float, x, b: np.int32, y, c: np.float32, out):
        for i in omp.parallel_range(x.shape[0]):
            out[i] = a * x[i] + b * y[i] + c

    dev = int(sys.argv[1])
    x, y = np.arange(1000.0), np.linspace(-1.0, 1.0, 1000)
    out = np.zeros(1000)
    for _ in range(20):          # freed and reused memory differs from call to call
        axpbyc.on(dev)(2.5, x, 3, y, np.float32(0.5), out)
        assert np.array_equal(out, 2.5 * x + 3 * y + 0.5), out[:8]
        assert abs(dot.on(dev)(x, y) - np.dot(x, y)) < 1e-9
    print("ok")
""")


def test_kernel_arguments_are_owned_during_the_call(device, tmp_path):
    script = tmp_path / "kernels_perturbed.py"
    script.write_text(KERNELS.format(root=os.path.dirname(os.path.dirname(__file__))))
    env = dict(os.environ, PYTHONMALLOC="malloc", MALLOC_PERTURB_="165")
    p = subprocess.run([sys.executable, str(script), str(device)], env=env,
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]
