#!/usr/bin/env bash
# Runtime tuning of the sample's kernels on a GPU machine, for docs/RESULTS.md.
#
#   bench/sample_kernels/run.sh knobs  OUT   public knobs + -D params, the machine's own nvcc
#   bench/sample_kernels/run.sh confirm OUT  rebuild from scratch with the pin in .carry/pin (defaults vs
#                                  pinned) and run both interleaved: bench/sample_kernels/confirm_pin.py
#   bench/sample_kernels/run.sh acf    OUT   ptxas ACFs from a pool sampled ahead (.carry/acf-pool). ptxas
#                                  ACFs need ptxas 13.3: the machine's own toolkit is used with
#                                  ptxas 13.3 (carried, .carry/ptxas-13.3.gz) in place of its own
#
# Every tune re-measures its winner against the compiler's defaults, interleaved,
# and prints the ratio and the noise; the pinned records are copied to OUT.
set -uo pipefail
mode=$1; out=$2
mkdir -p "$out"
# Only the package on the path: the checkout's top-level cmake/ (a Python
# package in the wheel) would shadow the `cmake` module of pip's cmake.
mkdir -p /tmp/ciq-path && ln -sfn "$PWD/ciq_build" /tmp/ciq-path/ciq_build
export PYTHONPATH=/tmp/ciq-path PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu --format=csv | tee "$out/gpu.txt"
GENS=${GENS:-3}; POOL=${POOL:-8}; REPEATS=${REPEATS:-5}

tune() {  # target, build dir, extra args...
    local target=$1 build=$2; shift 2
    python3 -m ciq_build tune "$target" -S sample_extension -B "$build" --objective time \
        --generations "$GENS" --pool-size "$POOL" --repeats "$REPEATS" --jobs 4 "$@" \
        --cmake-arg=-DSAMPLE_EXTENSION_PYTHON=OFF 2>&1 | tee "$out/tune-$target-$mode.log"
    cp sample_extension/ciq/"$target".json "$out/$target-$mode.json" 2>/dev/null
    local acf  # the pin's ACF, under the name its record gives (gemm_kernels.<sha256 prefix>.acf)
    acf=$(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["controls"].get("acf"); print(a["file"] if a else "")' \
          sample_extension/ciq/"$target".json 2>/dev/null)
    [ -n "$acf" ] && cp sample_extension/ciq/"$acf" "$out/"
    cp "$build"/ciq/journal/"$target".jsonl "$out/$target-$mode.jsonl" 2>/dev/null
    rm -f sample_extension/ciq/"$target".json sample_extension/ciq/"$target".*acf
}

hybrid_toolkit() {
    # A copy of the machine's toolkit whose ptxas is 13.3 (nvcc.profile finds the
    # rest relative to bin/, so the other folders are links to the real ones).
    local root
    root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    rm -rf /tmp/hybrid && mkdir -p /tmp/hybrid
    for entry in "$root"/*; do [ "$(basename "$entry")" = bin ] || ln -s "$entry" /tmp/hybrid/; done
    cp -r "$root/bin" /tmp/hybrid/bin
    gunzip -c .carry/ptxas-13.3.gz > /tmp/hybrid/bin/ptxas && chmod +x /tmp/hybrid/bin/ptxas
    # Separable compilation: nvlink 13.0 refuses 13.3 cubins ("newer than toolkit").
    if [ -f .carry/nvlink-13.3.gz ]; then
        gunzip -c .carry/nvlink-13.3.gz > /tmp/hybrid/bin/nvlink && chmod +x /tmp/hybrid/bin/nvlink
    fi
    { /tmp/hybrid/bin/nvcc --version | tail -2; /tmp/hybrid/bin/ptxas --version | tail -1; } | tee "$out/nvcc.txt"
}

case $mode in
knobs)
    nvcc --version | tail -2 | tee "$out/nvcc.txt"
    tune gemm_kernels /tmp/build-knobs --controls knobs --controls params
    tune reduce_kernels /tmp/build-knobs --controls knobs --controls params
    ;;
acf)
    hybrid_toolkit
    tune "${TARGET:-gemm_kernels}" /tmp/build-acf --controls acf-pool:"$PWD/.carry/acf-pool" \
        --cmake-arg=-DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc
    ;;
confirm)
    hybrid_toolkit
    cp .carry/pin/gemm_kernels.json .carry/pin/*.acf sample_extension/ciq/  # the record and the ACF it names
    python3 bench/sample_kernels/confirm_pin.py --source sample_extension --target gemm_kernels --benchmark gemm_bench \
        --nvcc /tmp/hybrid/bin/nvcc --rounds "${ROUNDS:-30}" -- --m 2048 --n 2048 --k 2048 --repeats 20 \
        2>&1 | tee "$out/confirm-gemm_kernels.log"
    rm -f sample_extension/ciq/gemm_kernels.json sample_extension/ciq/gemm_kernels.*acf
    ;;
esac
