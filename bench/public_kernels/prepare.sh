#!/usr/bin/env bash
# What bench/public_kernels/campaign.sh needs on the GPU machine, made here (CPU, compileiq and pip's CUDA 13.3):
#
#   bench/public_kernels/prepare.sh [CARRY=.carry]
#
#   CARRY/cuda133/ptxas-13.3.gz   pip's ptxas 13.3 (ptxas ACFs need it; the GPU machine's nvcc is 13.0),
#                                 shared with other campaigns; written once, atomically
#   CARRY/public-kernels/pool-raw/           COUNT (400) ptxas ACFs sampled from the CUDA 13.3 space, seed SEED (24)
#   CARRY/public-kernels/pool-<kernel>/      that pool screened on each kernel (bench/public_kernels/acf_screen.py: one ACF per
#                                 distinct SASS, no more spills than the defaults): sgemm and attn on the
#                                 first SCREEN (160) ACFs; reduction (213 kernels in one file, ptxas takes
#                                 seconds an ACF) on the first SCREEN_REDUCTION (60)
#   CARRY/public-kernels/screen-<kernel>.json the screens' per-ACF reports
#
# Only the screened pools travel (carry .carry/cuda133 and .carry/public-kernels, ~17 MB together); pool-raw
# stays here. The device sends the lead checkout's tree: copy CARRY into its .carry/ if it is elsewhere.
set -euo pipefail
cd "$(dirname "$0")/../.."
carry=${1:-.carry}
COUNT=${COUNT:-400}; SEED=${SEED:-24}; SCREEN=${SCREEN:-160}; SCREEN_REDUCTION=${SCREEN_REDUCTION:-60}
python=${PYTHON:-.venv/bin/python}
bin=$("$python" -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "bin"))')
export CIQ_SEARCH_SPACES_DIR=${CIQ_SEARCH_SPACES_DIR:-/work/shared/search-spaces}

if [ ! -f "$carry/cuda133/ptxas-13.3.gz" ]; then
    mkdir -p "$carry"
    tmp=$(mktemp -d "$carry/.cuda133.XXXX")
    gzip -6 -c "$bin/ptxas" > "$tmp/ptxas-13.3.gz"
    { "$bin/ptxas" --version | tail -2; (cd "$bin" && sha256sum ptxas); } > "$tmp/VERSION"
    chmod 755 "$tmp"
    mv -T "$tmp" "$carry/cuda133" 2>/dev/null || rm -rf "$tmp"  # another helper made it first: keep theirs
fi
mkdir -p "$carry/public-kernels"
[ -f "$carry/public-kernels/pool-raw/pool.json" ] || "$python" -m ciq_build sample-acfs --space ptxas-acf:13.3 \
    --count "$COUNT" --seed "$SEED" --out "$carry/public-kernels/pool-raw"

screen() {  # kernel, source, first N, includes...
    local k=$1 src=$2 first=$3; shift 3
    local inc=()
    for i in "$@"; do inc+=(-I "$i"); done
    "$python" bench/public_kernels/acf_screen.py --source "$src" "${inc[@]}" --pool "$carry/public-kernels/pool-raw" --first "$first" \
        --out "$carry/public-kernels/pool-$k" --nvcc "$bin/nvcc" --cuobjdump "$bin/cuobjdump" --jobs 2 \
        --json "$carry/public-kernels/screen-$k.json"
}
screen attn bench/peers/flash-attention-minimal/attn_launch.cu "$SCREEN" bench/peers/flash-attention-minimal
screen sgemm bench/peers/sgemm/sgemm_launch.cu "$SCREEN" bench/peers/sgemm bench/peers/sgemm/upstream \
    bench/peers/sgemm/shim
screen reduction bench/peers/cuda-samples/upstream/reduction/reduction_kernel.cu "$SCREEN_REDUCTION" \
    bench/peers/cuda-samples/upstream/reduction
du -sh "$carry/cuda133" "$carry/public-kernels"/pool-{sgemm,attn,reduction}
