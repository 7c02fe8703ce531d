# Sourced by campaign.sh and tensor_cores.sh: how a call of either starts, and the toolkit it runs on the GPU.
#
#   . "$(dirname "$0")/campaign_call.sh"
#   start_call NAME "STEP, STEP, ..." "$@"   # [--dry-run] BUDGET_S STEP...
#
# start_call goes to the checkout's root ($here), reads the arguments into $dry (1 for --dry-run), $budget and
# ${steps[@]}, names the call $name (NAME-<steps>), empties its results folder $res, and copies the console
# into $OUT/$name.log from then on. left: the seconds of the budget still left. hybrid_nvcc: on the GPU
# machine, $nvcc is its nvcc 13.0 with ptxas 13.3 from .carry/cuda133/ptxas-13.3.gz in place of its own.

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

hybrid_nvcc() {
    # nvcc 13.0 with ptxas 13.3 (nvcc.profile finds the rest relative to bin/: the other folders are links).
    local root entry
    root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    rm -rf /tmp/hybrid && mkdir -p /tmp/hybrid
    for entry in "$root"/*; do [ "$(basename "$entry")" = bin ] || ln -s "$entry" /tmp/hybrid/; done
    cp -r "$root/bin" /tmp/hybrid/bin
    gunzip -c .carry/cuda133/ptxas-13.3.gz > /tmp/hybrid/bin/ptxas && chmod +x /tmp/hybrid/bin/ptxas
    nvcc=/tmp/hybrid/bin/nvcc
}
