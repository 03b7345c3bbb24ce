#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one go (about 5 minutes, at most 8):
#
#     bash bench/gpu_check.sh
#
# Run it from the project root on a Linux machine with one NVIDIA GPU, CUDA 12 or 13, and
# Python 3.11+ with numpy, cupy, pytest (and pygomp's own needs: sortedcontainers, cffi,
# platformdirs; hypothesis for some tests) already installed.  It fetches nothing: it
# installs the project in place (pip --no-deps --no-build-isolation), runs the kernel
# test-suite on the CUDA device (PYGOMP_DEVICES=cuda:0), then bench/bench_cuda.py, and
# prints a short table last, naming each failed test.  Logs go to $LOGS (default
# gpu-check-logs/).  Exit status: 0 when every test passed, 1 when some failed, 2 when
# something it needs is missing.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOGS=${LOGS:-gpu-check-logs}
mkdir -p "$LOGS"
say() { printf '%s\n' "$*"; }

say "== what this machine has"
missing=$("$PY" - <<'EOF'
import importlib.util, sys
need = {"numpy": "numpy", "cupy": "cupy (cupy-cuda12x or cupy-cuda13x)", "pytest": "pytest",
        "sortedcontainers": "sortedcontainers", "cffi": "cffi",
        "platformdirs": "platformdirs", "setuptools": "setuptools>=68 (to install in place)"}
if sys.version_info < (3, 11):
    print(f"Python 3.11 or later (this is {sys.version.split()[0]})")
for mod, what in need.items():
    if importlib.util.find_spec(mod) is None:
        print(what)
if importlib.util.find_spec("setuptools"):
    import setuptools
    v = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
    if v < (68, 0):
        print(f"setuptools>=68 (this is {setuptools.__version__})")
    elif v < (70, 1) and importlib.util.find_spec("wheel") is None:
        print("wheel (setuptools before 70.1 needs it to install in place)")
EOF
)
if [ -n "$missing" ]; then
    say "MISSING (install these first, e.g. pip install NAME from a machine with network"
    say "or from wheels copied here):"
    printf '%s\n' "$missing" | sed 's/^/  /'
    exit 2
fi
for opt in hypothesis pytest_timeout; do
    "$PY" -c "import $opt" 2>/dev/null ||
        say "note: $opt is not installed: the tests that need it are not collected"
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
    say "note: nvidia-smi not found"

say "== install in place (no network)"
if ! "$PY" -m pip install -q --no-deps --no-build-isolation -e . >"$LOGS/install.log" 2>&1; then
    tail -20 "$LOGS/install.log"
    say "FAILED: pip install --no-deps --no-build-isolation -e . (log: $LOGS/install.log)"
    exit 2
fi
export PYGOMP_DEVICES=cuda:0
"$PY" -m pygomp info 2>&1 | tee "$LOGS/info.txt" | head -30
if ! grep -q "^  0: cuda:0 gpu" "$LOGS/info.txt"; then
    say "FAILED: pygomp finds no CUDA device (see above: the cuda plugin says why)"
    exit 2
fi

say "== the kernel test-suite on the CUDA device (at most 5.5 minutes)"
start=$(date +%s)
per_test=()                         # a test that hangs is stopped, not the whole run
"$PY" -c "import pytest_timeout" 2>/dev/null && per_test=(--timeout 120)
timeout 330 "$PY" -m pytest tests -v -p no:cacheprovider --continue-on-collection-errors \
    -k "cuda and not test_cuda_build" -rfEs ${per_test[@]+"${per_test[@]}"} >"$LOGS/tests.txt" 2>&1
status=$?
tail -3 "$LOGS/tests.txt"
[ $status -eq 124 ] && say "the test-suite ran past 5.5 minutes and was stopped"
tests_s=$(( $(date +%s) - start ))

say "== benchmarks (at most 90 s)"
timeout 90 "$PY" bench/bench_cuda.py >"$LOGS/bench.txt" 2>&1
bench_status=$?
cat "$LOGS/bench.txt"

say ""
say "== summary ($LOGS/ holds the logs)"
say "tests ($tests_s s): $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$LOGS/tests.txt" | tail -1)"
failed=$(grep -E '^(FAILED|ERROR) ' "$LOGS/tests.txt")
[ -z "$failed" ] && failed=$(grep -E ' (FAILED|ERROR)( |$)' "$LOGS/tests.txt" |
                             grep -v '^=' | sed -E 's/^(.*) (FAILED|ERROR).*/\2 \1/')
if [ -n "$failed" ]; then
    say "failed:"
    printf '%s\n' "$failed" | cut -c1-200 | sed 's/^/  /'
else
    [ $status -eq 0 ] && say "failed: none"
fi
if [ $bench_status -eq 0 ]; then
    sed -n '/^figure /,$p' "$LOGS/bench.txt"
else
    say "bench/bench_cuda.py failed (status $bench_status): see $LOGS/bench.txt"
fi
[ $status -eq 0 ] && [ $bench_status -eq 0 ]
exit $(( $? != 0 ))
