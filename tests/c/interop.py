"""Run by tests/test_shim.py: python interop.py LIBRARY (the built interop.c)."""
import ctypes
import sys

import numpy as np

import pygomp as omp
import pygomp.csrc.shim

pygomp.csrc.shim.load()
lib = ctypes.CDLL(sys.argv[1])
lib.c_scale.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_double]
for f in (lib.c_is_present, lib.c_enter, lib.c_exit):
    f.argtypes = [ctypes.c_void_p, ctypes.c_int]
dev = 0

# Mapped by Python, present for C: C's region finds it and copies nothing back.
a = np.arange(8.0)
omp.target_enter_data(device=dev, to=[a])
assert lib.c_is_present(a.ctypes.data, dev) == 1
lib.c_scale(a.ctypes.data, 8, 2.0)
assert a[3] == 3.0, a                      # the device copy changed, not the host's
omp.target_exit_data(device=dev, from_=[a])
assert a[3] == 6.0, a
assert lib.c_is_present(a.ctypes.data, dev) == 0

# Mapped by C, present for Python, and a Python kernel uses the present copy.
b = np.ones(4)
lib.c_enter(b.ctypes.data, 4)
assert omp.omp_target_is_present(b, dev) == 1


@omp.target
def add_one(x):
    for i in omp.parallel_range(x.shape[0]):
        x[i] += 1.0


add_one.on(dev)(b)
assert b[0] == 1.0, b                      # present: not copied back
lib.c_exit(b.ctypes.data, 4)
assert b[0] == 2.0, b

# C's default device is Python's.
assert lib.c_default_device() == 0
print("interop ok")
