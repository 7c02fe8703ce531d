#!/usr/bin/env bash
# Issue 23 item 4: NVIDIA's own CompileIQ flow and ciq_build side by side, on the same kernel, GPU and
# budget, in one device call. The kernel is CompileIQ's reduction example
# (examples/compilers/nvcc_example/reduction.cu and its optimize_reduction.py); on sm_90 both arms search
# the PTXAS ACF space, applied through -Xptxas --apply-controls (as CompileIQ's nvbench_example does).
#
#   arm A  CompileIQ's optimize_reduction.py, changed only in its search space (the four edits in
#          bench/compileiq_side_by_side/steps.py CHANGES), --generations G --pool-size POOL --runs REPEATS
#   arm B  ciq_build on the same .cu through a CMakeLists (bench/compileiq_side_by_side/project/): ciq_tune_target
#          with METRIC on the benchmark's own "Time = ... s" line, --generations G --pool-size POOL
#          --repeats REPEATS --jobs JOBS
#
# G is what fits ARM_S seconds of arm A at POOL candidates a generation (a probe compile and run first);
# both arms get the same. Then the defaults and both winners are built the way CompileIQ's script builds
# and run in ROUNDS interleaved rounds (bench/compileiq_side_by_side/steps.py remeasure), and the report prints
# wall B/A (a cost: lower is better) and each winner's time against the defaults with a 95% CI.
#
#   bench/compileiq_side_by_side/run.sh            on the GPU machine, from the checkout's root, with the carry:
#       .carry/compileiq/wheels/ (compileiq and what it needs that the machine lacks), .carry/compileiq/compileiq-example/
#       (CompileIQ's three files), .carry/compileiq/search-spaces/ (CompileIQ's offline search spaces),
#       .carry/cuda133/ptxas-13.3.gz (ptxas 13.3: ACFs need it; the machine's nvcc is 13.0), .carry/ray-site.tar.xz
#       (compileiq imports Ray); bench/compileiq_side_by_side/carry.sh makes them
#   bench/compileiq_side_by_side/run.sh --dry-run  on a machine without a GPU: the checkout's .venv (CUDA 13.3,
#       compileiq), CompileIQ's script and ciq_build for real, but the kernel is the TEST DOUBLE
#       bench/compileiq_side_by_side/project/reduction_dry.cu (sleeps instead of launching): CPU figures, no GPU claim
#
# Output: $OUT/compileiq_side_by_side.log (the console) and $OUT/compileiq_side_by_side.tgz (both arms'
# logs, CompileIQ's results CSV and best ACF, ciq_build's journal and pin, the probe, re-measure samples).
# Env: POOL (12, shrunk to fit), REPEATS (3), JOBS (8), SEED (1), ARM_S (240), ROUNDS (6), MOST_GENERATIONS (10),
# TOTAL_S (540: arm B is cut, and the re-measure shortened, to end the call by then), N (67108864),
# PHASE (both; or "a" then "b": two device calls, so each arm may have most of a call's 600 s. "a" runs the
# probe and arm A and ends there, its tgz the hand-over; "b" takes that tgz (ARM_A_TGZ, default
# .carry/compileiq/arm-a.tgz, carried), runs arm B with the same budget, the re-measure and the report.)
set -uo pipefail
cd "$(dirname "$0")/../.."
here=$PWD
dry=0
[ "${1:-}" = --dry-run ] && dry=1
PHASE=${PHASE:-both}
case "$PHASE" in both|a|b) ;; *) echo "PHASE must be both, a or b (got $PHASE)"; exit 2;; esac
ARM_A_TGZ=${ARM_A_TGZ:-$here/.carry/compileiq/arm-a.tgz}
[ "$PHASE" = b ] && [ ! -f "$ARM_A_TGZ" ] && { echo "PHASE=b needs phase a's tgz at $ARM_A_TGZ (ARM_A_TGZ)"; exit 2; }
OUT=${OUT:-/tmp/out}
res=/tmp/res-compileiq-sbs
rm -rf "$res" && mkdir -p "$res" "$OUT"
exec > >(tee "$OUT/compileiq_side_by_side.log") 2>&1
# The build trees stay behind (hundreds of MB), all but ciq_build's journal: each candidate's controls
# and scores, what tells one arm's draws from the other's.
finish() {
    [ -d "$res/arm-b/build/ciq/journal" ] && cp -r "$res/arm-b/build/ciq/journal" "$res/arm-b-journal"
    tar -czf "$OUT/compileiq_side_by_side.tgz" --exclude='*/build/*' --exclude='reduction-*' -C "$res" .
}
trap finish EXIT
POOL=${POOL:-12}; REPEATS=${REPEATS:-3}; JOBS=${JOBS:-8}; SEED=${SEED:-1}; ARM_S=${ARM_S:-240}
ROUNDS=${ROUNDS:-6}; MOST_GENERATIONS=${MOST_GENERATIONS:-10}; TOTAL_S=${TOTAL_S:-540}; N=${N:-67108864}
ARCH=sm_90
[ "$POOL" -gt 5 ] || { echo "POOL must be at least 6 (compileiq's SearchConfiguration refuses a pool of 5 or fewer)"; exit 2; }
export PYTHONUNBUFFERED=1
helper=$here/bench/compileiq_side_by_side/steps.py
example=$here/.carry/compileiq/compileiq-example
started=$SECONDS
arm_a_reserve=120  # what arm B and the re-measure need after arm A in the same call
[ "$PHASE" = a ] && arm_a_reserve=10
left() { echo $((TOTAL_S - (SECONDS - started))); }

if [ "$dry" = 1 ]; then
    python=${PYTHON:-$here/.venv/bin/python}
    toolkit=$("$python" -c 'import nvidia, pathlib; print(pathlib.Path(list(nvidia.__path__)[0]) / "cu13")')
    export PATH="$toolkit/bin:$here/.venv/bin:$PATH"
    nvcc=$toolkit/bin/nvcc
    source_cu=$here/bench/compileiq_side_by_side/project/reduction_dry.cu
    export CIQ_SEARCH_SPACES_DIR=${CIQ_SEARCH_SPACES_DIR:-/work/shared/search-spaces}
    echo "== DRY RUN: no GPU; the kernel is a TEST DOUBLE that sleeps (CPU figures, no GPU claim)"
else
    python=python3
    for need in "$example/optimize_reduction.py" "$example/reduction.cu" .carry/cuda133/ptxas-13.3.gz \
                .carry/ray-site.tar.xz .carry/compileiq/search-spaces/manifest.json; do
        [ -e "$need" ] || { echo "missing $need: run bench/compileiq_side_by_side/carry.sh and carry .carry/compileiq," \
                                 ".carry/cuda133/ptxas-13.3.gz and .carry/ray-site.tar.xz"; exit 2; }
    done
    mkdir -p /tmp/site /tmp/ciq-path
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .carry/compileiq/wheels/*.whl || exit 2
    tar xJf .carry/ray-site.tar.xz -C /tmp/site || exit 2
    ln -sfn "$here/ciq_build" /tmp/ciq-path/ciq_build
    export PYTHONPATH=/tmp/ciq-path:/tmp/site  # only the package: the checkout's cmake/ would shadow pip's cmake
    # The machine's toolkit with ptxas 13.3 in place of its own (as bench/public_kernels/cuda_samples.sh does).
    root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    rm -rf /tmp/hybrid && mkdir -p /tmp/hybrid
    for entry in "$root"/*; do [ "$(basename "$entry")" = bin ] || ln -s "$entry" /tmp/hybrid/; done
    cp -r "$root/bin" /tmp/hybrid/bin
    gunzip -c .carry/cuda133/ptxas-13.3.gz > /tmp/hybrid/bin/ptxas && chmod +x /tmp/hybrid/bin/ptxas
    export PATH=/tmp/hybrid/bin:$PATH
    nvcc=/tmp/hybrid/bin/nvcc
    source_cu=$example/reduction.cu
    export CIQ_SEARCH_SPACES_DIR=$here/.carry/compileiq/search-spaces
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,temperature.gpu --format=csv | tee "$res/gpu.txt"
fi
{ "$nvcc" --version | tail -2; ptxas --version | tail -1; } | tee "$res/toolkit.txt"
"$python" -c 'import compileiq.ciq, ciq_build; print("compileiq and ciq_build import")' || exit 2
[ -f "$example/optimize_reduction.py" ] || { echo "missing $example: bench/compileiq_side_by_side/carry.sh"; exit 2; }
cat "$example/COMMIT" 2>/dev/null | sed 's/^/CompileIQ example at /'

# The two arms' folders: CompileIQ's script (changed as CHANGES says) and ciq_build's CMake project, each
# beside its own copy of the same reduction.cu.
mkdir -p "$res/arm-a" "$res/arm-b"
"$python" "$helper" derive "$example" "$res/arm-a" || exit 2
cp "$source_cu" "$res/arm-a/reduction.cu"
cp bench/compileiq_side_by_side/project/CMakeLists.txt "$source_cu" "$res/arm-b/"
[ "$dry" = 1 ] && mv "$res/arm-b/reduction_dry.cu" "$res/arm-b/reduction.cu"

if [ "$PHASE" = b ]; then
    # Phase a's probe, budget and arm A, as that call left them; this call's kit builds the re-measure.
    tar xzf "$ARM_A_TGZ" -C "$res" ./probe.json ./budget.txt ./arm-a ./arm-a.time.json ./arm-a.log || exit 2
    read -r GENS POOL < "$res/budget.txt"
    echo "== phase b: arm A from $ARM_A_TGZ ($GENS generations x $POOL); its end:"
    grep -v -E "Generation|it/s|s/it" "$res/arm-a.log" | tail -8
else
    echo "== probe: one compile and one run (the budget's unit)"
    "$python" "$helper" probe --nvcc "$nvcc" --arch "$ARCH" --source "$source_cu" --n "$N" --work "$res/probe" \
        --json "$res/probe.json" || exit 1
    read -r GENS POOL < <("$python" "$helper" budget "$res/probe.json" --arm-s "$ARM_S" --pool "$POOL" --runs "$REPEATS" \
           --most "$MOST_GENERATIONS") || exit 1
    echo "== budget: $GENS generations x $POOL, $REPEATS runs a candidate, both arms"

    echo "== arm A: CompileIQ's optimize_reduction.py"
    (cd "$res/arm-a" && timeout -s INT $(($(left) - arm_a_reserve)) "$python" "$helper" timed "$res/arm-a.time.json" -- \
        "$python" optimize_reduction.py --arch "$ARCH" --generations "$GENS" --pool-size "$POOL" --runs "$REPEATS") \
        2>&1 | tee "$res/arm-a.log" | grep -v -E "Generation|it/s|s/it" | tail -15
    echo "$GENS $POOL" > "$res/budget.txt"
    [ "$PHASE" = a ] && { echo "== phase a: $((SECONDS - started)) s; its tgz is phase b's ARM_A_TGZ"; exit 0; }
fi

echo "== arm B: ciq_build tune (METRIC on the same output, same budget)"
cap=$(($(left) - 75))  # the re-measure's builds and rounds after it
timeout -s INT "$cap" "$python" "$helper" timed "$res/arm-b.time.json" -- \
    "$python" -m ciq_build tune reduction -S "$res/arm-b" -B "$res/arm-b/build" --objective time \
    --repeats "$REPEATS" --generations "$GENS" --pool-size "$POOL" --jobs "$JOBS" --seed "$SEED" \
    --cmake-arg=-DCMAKE_CUDA_COMPILER="$nvcc" 2>&1 | tee "$res/arm-b.log" | tail -25

echo "== re-measure: defaults and both winners, built as CompileIQ's script builds, $ROUNDS interleaved rounds"
rounds=$ROUNDS
[ "$(left)" -lt 60 ] && rounds=3 && echo "(little time left: $rounds rounds)"
"$python" "$helper" remeasure --nvcc "$nvcc" --arch "$ARCH" --source "$source_cu" --work "$res/remeasure" \
    --json "$res/remeasure.json" --compileiq-acf "$res/arm-a/reduction_best_config.bin" \
    --ciq-pin "$res/arm-b/ciq/reduction.json" --n "$N" --rounds "$rounds"

"$python" "$helper" report "$res" | tee "$res/report.txt"
echo "== $((SECONDS - started)) s in all"
