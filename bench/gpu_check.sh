#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one go (about 6 minutes, at most 10 without
# GCC_TESTSUITE):
#
#     bash bench/gpu_check.sh                           # everything
#     GPU_CHECK_PARTS="nvptx" bash bench/gpu_check.sh   # some of: suite bench nvptx
#     PYTEST_ARGS="-n 12" bash bench/gpu_check.sh       # more pytest options (xdist)
#     NVPTX_BUILD=DIR / NVPTX_PREBUILT=DIR              # build the nvptx programs here,
#                                                       # run them on a GPU machine
#
# Run it from the project root on a Linux machine with one NVIDIA GPU, CUDA 12 or 13, and
# Python 3.11+ with numpy, cupy, pytest (and pygomp's own needs: sortedcontainers, cffi,
# platformdirs; hypothesis for some tests) already installed.  It fetches nothing: it
# installs the project in place (pip --no-deps --no-build-isolation), runs the kernel
# test-suite on the CUDA device (PYGOMP_DEVICES=cuda:0), then bench/bench_cuda.py, then
# C programs built by gcc for nvptx-none (gcc-12-offload-nvptx) under libgomp with its
# own nvptx plugin and under the shim on the CUDA plugin (tests/c/nvptx_*.c; GCC's
# libgomp tests too when GCC_TESTSUITE names gcc-12's libgomp/testsuite), and prints a
# short table last, naming each failed test.  Without a GPU it stops at once, saying
# why (GPU_CHECK_DRY=1 rehearses the nvptx part on the host instead).  Logs go to $LOGS (default
# gpu-check-logs/).  Exit status: 0 when every test passed, 1 when some failed, 2 when
# something it needs is missing.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOGS=${LOGS:-gpu-check-logs}
mkdir -p "$LOGS"
say() { printf '%s\n' "$*"; }

# The three nvptx programs, built into $1 (flags after it).
nvptx_build() {
    local out=$1; shift
    gcc -fopenmp "$@" tests/c/nvptx_omp.c -o "$out/omp" 2>"$out/build.log" &&
    gcc -fopenacc "$@" tests/c/nvptx_acc.c -o "$out/acc" 2>>"$out/build.log" &&
    gcc -fopenmp "$@" tests/c/nvptx_bench.c -o "$out/bench" 2>>"$out/build.log"
}

# A GPU machine without gcc's offload compiler runs programs built elsewhere:
# NVPTX_BUILD=DIR builds them here, with the libgomp and nvptx plugin they need, and
# stops; NVPTX_PREBUILT=DIR on the GPU machine runs them from there.
nvptx_prebuilt() {
    local lib
    for f in omp acc bench; do
        cp "$NVPTX_PREBUILT/$f" "$1/$f" || return 1
    done
    lib=$(cd "$NVPTX_PREBUILT/lib" && pwd) || return 1
    export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
if [ -n "${NVPTX_BUILD:-}" ]; then
    mkdir -p "$NVPTX_BUILD/lib"
    nvptx_build "$NVPTX_BUILD" -O2 -foffload=nvptx-none \
        -foffload-options=nvptx-none=-misa=sm_80 || { cat "$NVPTX_BUILD/build.log"; exit 2; }
    for l in libgomp.so.1 libgomp-plugin-nvptx.so.1; do
        cp -L "$(gcc -print-file-name=$l)" "$NVPTX_BUILD/lib/" || exit 2
    done
    say "built into $NVPTX_BUILD: run NVPTX_PREBUILT=$NVPTX_BUILD bash bench/gpu_check.sh there"
    exit 0
fi


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
PARTS=" ${GPU_CHECK_PARTS:-suite bench nvptx} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
DRY=${GPU_CHECK_DRY:-0}
"$PY" -m pygomp info 2>&1 | tee "$LOGS/info.txt" | head -30
if ! grep -q "^  0: cuda:0 gpu" "$LOGS/info.txt"; then
    say "FAILED: pygomp finds no CUDA device (see above: the cuda plugin says why)"
    [ "$DRY" = 1 ] || exit 2
    say "GPU_CHECK_DRY=1: the nvptx part runs on the host (no GPU: its numbers mean nothing)"
    PARTS=" nvptx "
fi

# GCC's nvptx images: tests/c/nvptx_omp.c, nvptx_acc.c and nvptx_bench.c, one binary
# each, under libgomp's nvptx plugin (OMP_TARGET_OFFLOAD=mandatory: it must use the
# GPU) and under the shim on the CUDA plugin.  Sets nvptx_status (0: passed, 2: no
# offload compiler).
nvptx() {
    local out="$LOGS/nvptx" flags=(-O2 -foffload=nvptx-none
                                   -foffload-options=nvptx-none=-misa=sm_80)
    mkdir -p "$out"
    nvptx_status=0
    if [ -n "${NVPTX_PREBUILT:-}" ]; then
        nvptx_prebuilt "$out" || { nvptx_status=1; return; }
    elif ! printf 'int main(void){int a=0;\n#pragma omp target map(tofrom:a)\na=1;\nreturn !a;}\n' |
            gcc -fopenmp "${flags[@]}" -x c - -o "$out/probe" >"$out/probe.log" 2>&1; then
        say "skipped: gcc cannot build for nvptx-none (install gcc-12-offload-nvptx):"
        tail -2 "$out/probe.log" | sed 's/^/  /'
        nvptx_status=2
        return
    fi
    local lib; lib=$("$PY" -m pygomp shim) || { nvptx_status=1; return; }
    local anchor=(env OMP_TARGET_OFFLOAD=mandatory ACC_DEVICE_TYPE=nvidia)
    local ours=(env LD_PRELOAD="$lib" PYGOMP_DEVICES=cuda:0 OMP_TARGET_OFFLOAD=mandatory
                PYGOMP_INFO=0x10)
    local n=$((1 << 28))
    if [ "$PARTS" = " nvptx " ] && [ "$DRY" = 1 ] && ! grep -q "^  0: cuda:0 gpu" "$LOGS/info.txt"; then
        anchor=(env); ours=(env LD_PRELOAD="$lib" PYGOMP_DEVICES=host); n=$((1 << 20))
    fi
    [ -n "${NVPTX_PREBUILT:-}" ] || nvptx_build "$out" "${flags[@]}" ||
        { say "FAILED: building tests/c/nvptx_*.c (log: $out/build.log)"; nvptx_status=1; return; }
    local prog way
    say "program          libgomp+nvptx   shim+cuda   (regions passed, exit status)"
    for prog in omp acc; do
        for way in anchor ours; do
            local -n cmd=$way
            timeout 120 "${cmd[@]}" "$out/$prog" >"$out/$prog.$way.txt" 2>&1
            echo $? >"$out/$prog.$way.rc"
        done
        printf '%-16s %-15s %s\n' "nvptx_$prog.c" \
            "$(grep -c '^ok ' "$out/$prog.anchor.txt")/$(grep -cE '^(ok|FAILED) ' "$out/$prog.anchor.txt") rc $(cat "$out/$prog.anchor.rc")" \
            "$(grep -c '^ok ' "$out/$prog.ours.txt")/$(grep -cE '^(ok|FAILED) ' "$out/$prog.ours.txt") rc $(cat "$out/$prog.ours.rc")"
        # libgomp's own result is the reference: a region failing under both is shown,
        # one failing under the shim alone fails the check
        local failed_there worse
        failed_there=$(grep -h '^FAILED' "$out/$prog.anchor.txt" | sort)
        worse=$(grep -h '^FAILED' "$out/$prog.ours.txt" | sort | comm -13 <(printf '%s\n' "$failed_there") -)
        [ -n "$failed_there" ] && printf '%s\n' "$failed_there" | sed 's/^/  under libgomp too: /'
        [ -n "$worse" ] && { printf '%s\n' "$worse" | sed 's/^/  shim: /'; nvptx_status=1; }
        if [ "$(cat "$out/$prog.ours.rc")" != 0 ] && [ "$(cat "$out/$prog.anchor.rc")" = 0 ]; then
            nvptx_status=1
            tail -3 "$out/$prog.ours.txt"
        fi
        if grep -q "no image" "$out/$prog.ours.txt"; then
            say "  shim: some region fell back to the host (see $out/$prog.ours.txt)"
            nvptx_status=1
        fi
    done
    for way in anchor ours; do
        local -n cmd=$way
        timeout 120 "${cmd[@]}" PYGOMP_INFO=0 "$out/bench" "$n" 5 >"$out/bench.$way.txt" 2>&1 ||
            { say "FAILED: nvptx_bench.c ($way): $(tail -1 "$out/bench.$way.txt")"; nvptx_status=1; }
    done
    "$PY" - "$out/bench.anchor.txt" "$out/bench.ours.txt" "$n" <<'EOF'
import re, sys
def read(path):
    text = open(path).read()
    return {k: float(v) for k, v in re.findall(r"^(empty_us|saxpy_ms) ([0-9.]+)", text, re.M)}
a, b = read(sys.argv[1]), read(sys.argv[2])
print("figure nvptx: libgomp's nvptx plugin against the shim on the CUDA plugin, one binary")
for key, what in (("empty_us", "empty target region (us)"),
                  ("saxpy_ms", f"saxpy of {int(sys.argv[3])} floats, data resident (ms)")):
    if key in a and key in b:
        ratio = b[key] / a[key] if a[key] else float("nan")
        print(f"  {what:46s} libgomp {a[key]:10.3f}  shim {b[key]:10.3f}  shim/libgomp {ratio:6.2f}")
    else:
        print(f"  {what:46s} missing (libgomp: {key in a}, shim: {key in b})")
EOF
    if [ -n "${GCC_TESTSUITE:-}" ]; then
        say "== GCC's libgomp tests with -foffload=nvptx-none (at most 4.5 minutes)"
        local suite=("$GCC_TESTSUITE")      # or the tests nvptx_suite.py --build-only made
        [ -f "$GCC_TESTSUITE/MANIFEST" ] && suite=(--prebuilt "$GCC_TESTSUITE")
        timeout 270 "$PY" tests/c/nvptx_suite.py "${suite[@]}" --budget 240 \
            >"$out/suite.txt" 2>&1 || nvptx_status=1
        grep -v '^  passes' "$out/suite.txt" | tail -6
        say "  tests passing under libgomp only: $(grep -c '^  passes under libgomp only' "$out/suite.txt")"
    else
        say "GCC's libgomp tests: skipped (GCC_TESTSUITE names no gcc-12 libgomp/testsuite,"
        say "  nor a folder of them that tests/c/nvptx_suite.py --build-only made)"
    fi
}

if ! part suite && ! part bench; then
    nvptx_status=0
    if part nvptx; then
        say "== C programs built for nvptx-none (at most 2 minutes, more with GCC_TESTSUITE)"
        nvptx
        say ""
        say "== summary ($LOGS/ holds the logs)"
        case $nvptx_status in
            0) say "nvptx: passed" ;; 2) say "nvptx: skipped (no offload compiler)" ;;
            *) say "nvptx: failed (logs: $LOGS/nvptx/)" ;;
        esac
        [ "$DRY" = 1 ] && say "(a dry run on the host: nothing of it ran on a GPU)"
        exit $(( nvptx_status == 1 ))
    fi
    exit 0
fi

say "== the kernel test-suite on the CUDA device (at most 5.5 minutes)"
start=$(date +%s)
per_test=()                         # a test that hangs is stopped, not the whole run
"$PY" -c "import pytest_timeout" 2>/dev/null && per_test=(--timeout 120)
status=0
if part suite; then
    timeout 330 "$PY" -m pytest tests -v -p no:cacheprovider --continue-on-collection-errors \
        -k "cuda and not test_cuda_build" -rfEs ${per_test[@]+"${per_test[@]}"} \
        ${PYTEST_ARGS:-} \
        >"$LOGS/tests.txt" 2>&1 || status=$?
else
    echo "(the test-suite was not run: GPU_CHECK_PARTS)" >"$LOGS/tests.txt"
fi
tail -3 "$LOGS/tests.txt"
[ $status -eq 124 ] && say "the test-suite ran past 5.5 minutes and was stopped"
tests_s=$(( $(date +%s) - start ))

say "== benchmarks (at most 90 s)"
bench_status=0
if part bench; then
    timeout 90 "$PY" bench/bench_cuda.py >"$LOGS/bench.txt" 2>&1 || bench_status=$?
    cat "$LOGS/bench.txt"
fi

nvptx_status=0
if part nvptx; then
    say "== C programs built for nvptx-none (at most 2 minutes, more with GCC_TESTSUITE)"
    nvptx
    [ $nvptx_status = 2 ] && nvptx_status=0          # no offload compiler: said above
fi

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
if ! part bench; then
    :
elif [ $bench_status -eq 0 ]; then
    sed -n '/^figure /,$p' "$LOGS/bench.txt"
else
    say "bench/bench_cuda.py failed (status $bench_status): see $LOGS/bench.txt"
fi
part nvptx && say "nvptx: $([ $nvptx_status = 0 ] && echo "passed (or skipped: see above)" || echo "failed (logs: $LOGS/nvptx/)")"
[ $status -eq 0 ] && [ $bench_status -eq 0 ] && [ $nvptx_status -eq 0 ]
exit $(( $? != 0 ))
