"""Classic numerical loop nests as pygomp kernels and as OpenMP C (see run.py)."""
from . import datamining, dynprog, linalg, solvers, stencils

BENCHES = linalg.BENCHES + datamining.BENCHES + stencils.BENCHES + dynprog.BENCHES \
    + solvers.BENCHES
