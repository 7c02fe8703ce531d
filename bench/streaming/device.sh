#!/usr/bin/env bash
# Issue 23 item 2 on a GPU: bench/streaming/run.py --gpu (bench/streaming/stream_gpu's CUDA kernel, timed with CUDA
# events, its benchmark streaming each repetition) in one device call; the console goes to
# $OUT/streaming-gpu.txt.
#
#   bench/streaming/device.sh             on the GPU machine (the checkout's package only on PYTHONPATH:
#                                      its top-level cmake/ would shadow pip's cmake)
#   bench/streaming/device.sh --dry-run   here, without a GPU: the same options on tests/projects/stream's
#                                      CPU stand-in (the TEST DOUBLE), with the checkout's .venv
#
# Env: REPS, BASE_MS, STEP, X_VALUES, GENS, POOL, REPEATS, JOBS.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
options=(--reps "${REPS:-40}" --base-ms "${BASE_MS:-10}" --step "${STEP:-0.2}" --x-values "${X_VALUES:-12}"
         --generations "${GENS:-2}" --pool-size "${POOL:-8}" --repeats "${REPEATS:-3}" --jobs "${JOBS:-8}")
export PYTHONUNBUFFERED=1
if [ "${1:-}" = --dry-run ]; then
    echo "== DRY RUN: no GPU; tests/projects/stream's CPU stand-in (TEST DOUBLE), CPU figures, no GPU claim"
    python=${PYTHON:-.venv/bin/python}
else
    mkdir -p /tmp/ciq-path && ln -sfn "$PWD/ciq_build" /tmp/ciq-path/ciq_build
    export PYTHONPATH=/tmp/ciq-path
    python=python3
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,temperature.gpu --format=csv
    nvcc --version | tail -2
    options+=(--gpu)
fi
started=$(date +%s)
"$python" bench/streaming/run.py "${options[@]}" 2>&1 | tee "$OUT/streaming-gpu.txt"
status=${PIPESTATUS[0]}
echo "wall $(( $(date +%s) - started )) s, exit $status" | tee -a "$OUT/streaming-gpu.txt"
exit "$status"
