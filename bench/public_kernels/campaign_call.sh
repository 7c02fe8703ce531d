# Sourced by campaign.sh and tensor_cores.sh: how a call of either starts, and the toolkit it runs on the GPU.
#
#   . "$(dirname "$0")/campaign_call.sh"
#   start_call NAME "STEP, STEP, ..." "$@"   # [--dry-run] BUDGET_S STEP...
#
# start_call goes to the checkout's root ($here), reads the arguments into $dry (1 for --dry-run), $budget and
# ${steps[@]}, names the call $name (NAME-<steps>), empties its results folder $res, and copies the console
# into $OUT/$name.log from then on. left: the seconds of the budget still left. peer_tree SRC DIR: a copy of a peer
# at SRC with what it includes from outside its folder, at the same relative paths under DIR, without pins. hybrid_nvcc: on the GPU
# machine, $nvcc is its nvcc 13.0 with ptxas 13.3 from .carry/cuda133/ptxas-13.3.gz in place of its own (and CCCL
# 13.3's headers from .carry/cuda133/cccl-13.3.tar.xz where carried).

start_call() {
    local prefix=$1 known=$2
    shift 2
    cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
    here=$PWD
    dry=0
    if [ "${1:-}" = --dry-run ]; then dry=1; shift; fi
    budget=${1:?usage: bench/public_kernels/$(basename "$0") [--dry-run] BUDGET_S STEP...}
    shift
    [ $# -gt 0 ] || { echo "name at least one step: $known" >&2; exit 64; }
    steps=("$@")
    name="$prefix-$(IFS=-; echo "${steps[*]}")"
    OUT=${OUT:-/tmp/out}
    res=/tmp/$name
    rm -rf "$res" && mkdir -p "$res" "$OUT"
    exec > >(tee "$OUT/$name.log") 2>&1
    export PYTHONUNBUFFERED=1
}

left() { echo $(( budget - SECONDS )); }

peer_tree() {  # SRC DIR: the peer, bench/peers/common.cmake and the shared benchmark header, no pins
    local src=$1 dir=$2
    rm -rf "$dir" && mkdir -p "$dir/$(dirname "$src")" "$dir/sample_extension"
    cp -r "$src" "$dir/$src" && cp -r sample_extension/bench "$dir/sample_extension/" || return 1
    [ ! -f "$(dirname "$src")/common.cmake" ] || cp "$(dirname "$src")/common.cmake" "$dir/$(dirname "$src")/"
    rm -f "$dir/$src/ciq/"*.json "$dir/$src/ciq/"*.acf
}

hybrid_nvcc() {
    # nvcc 13.0 with ptxas 13.3 (nvcc.profile finds the rest relative to bin/: the other folders are links).
    local root entry
    root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    rm -rf /tmp/hybrid && mkdir -p /tmp/hybrid
    for entry in "$root"/*; do [ "$(basename "$entry")" = bin ] || ln -s "$entry" /tmp/hybrid/; done
    cp -r "$root/bin" /tmp/hybrid/bin
    gunzip -c .carry/cuda133/ptxas-13.3.gz > /tmp/hybrid/bin/ptxas && chmod +x /tmp/hybrid/bin/ptxas
    if [ -f .carry/cuda133/cccl-13.3.tar.xz ]; then
        # CCCL's headers of 13.3 in place of the toolkit's (FlashInfer needs cuda::fast_mod_div, new in 13.1):
        # nvcc.profile names them as the one -isystem directory.
        rm -rf /tmp/hybrid-cccl && mkdir -p /tmp/hybrid-cccl && tar xJf .carry/cuda133/cccl-13.3.tar.xz -C /tmp/hybrid-cccl
        sed -i 's|"-isystem" "[^"]*include/cccl"|"-isystem" "/tmp/hybrid-cccl/cccl"|' /tmp/hybrid/bin/nvcc.profile
        grep -q /tmp/hybrid-cccl /tmp/hybrid/bin/nvcc.profile || echo "hybrid_nvcc: no CCCL directory in nvcc.profile" >&2
    fi
    nvcc=/tmp/hybrid/bin/nvcc
}
