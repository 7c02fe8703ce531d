#!/usr/bin/env bash
# Does a tune know which GPU it tunes for? The real path of ciq_build.compiler.gpu_arch, on a GPU machine
# (the tests use a stand-in nvidia-smi that reports a compute capability). Four short tunes of cuda-samples
# FDTD3d (bench/peers/cuda-samples), each printing what it says before its search and its summary's
# "figures" line; nothing pinned (--no-pin):
#
#   1. built for sm_75 only, timed: the GPU runs JIT-compiled PTX: one line before the search says so and what
#      to set, and the summary says the times are of JIT-compiled PTX;
#   2. built for 75 and 90a, timed and static together: the static metrics scored are the GPU's architecture's;
#   3. the same build, static objectives only: the benchmark GPU is still read (the benchmark is registered);
#   4. the same build, --architecture 75: only sm_75 is built and scored.
#
#   bench/gpu_arch/run.sh OUT      on the GPU machine, from the checkout's root (nvcc on PATH)
#   bench/gpu_arch/run.sh --dry-run OUT   here, without a GPU: the same commands (no GPU is read)
set -uo pipefail
[ "${1:-}" = --dry-run ] && shift
out=${1:?OUT}
mkdir -p "$out" /tmp/ciq-path && ln -sfn "$PWD/ciq_build" /tmp/ciq-path/ciq_build
export PYTHONPATH=/tmp/ciq-path PYTHONUNBUFFERED=1  # only the package (the checkout's cmake/ would shadow pip's)
nvidia-smi --query-gpu=name,compute_cap --format=csv 2>&1 | tee "$out/gpu.txt"
quick=(--generations 1 --pool-size 4 --jobs 4 --repeats 1 --no-pin --controls knobs)
case_() {  # name, architectures, tune arguments...
    local name=$1 archs=$2; shift 2
    echo "== $name: CUDA_ARCHITECTURES=$archs $*"
    python3 -m ciq_build tune FDTD3d_kernels -S bench/peers/cuda-samples -B "/tmp/gpu-arch-$name" "${quick[@]}" \
        "--cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=$archs" "$@" > "$out/$name.log" 2>&1
    echo "exit $?"
    grep -v "^ciq_build: evaluation" "$out/$name.log" | grep -E "JIT|figures|registers |time |sm_|architecture|error" | head -12
}
case_ jit 75 --objective time
case_ two 75\;90a --objective time --objective registers
case_ static 75\;90a --objective spill_bytes --objective registers
case_ named 75\;90a --objective registers --architecture 75
