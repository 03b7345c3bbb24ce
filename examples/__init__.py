"""Examples of Python kernels.

Each module defines ``NAME``, ``SIZE`` (its default problem size) and
``run(device, size) -> (result, reference)``: it runs its kernel on device number
``device`` and returns the result with the numpy reference it must match
(``np.allclose(result, reference, rtol=1e-4, atol=1e-6)``).  ``python -m pygomp demo``
runs them all on every device; ``python examples/NAME.py`` runs one on the default device.
"""
