#!/usr/bin/env bash
# Issue 24 on the H200: public GEMM, attention and reduction kernels (bench/peers/), three arms per
# kernel with the same search budget (knobs + params; ptxas ACFs alone; both), then every kernel's
# winning pin reproduced from a copy of the tree at another path (verify, >= 30 interleaved rounds of
# defaults, the winner and one other arm's pin, bootstrap 95% CIs) and explained in machine code.
#
#   bench/public_kernels/campaign.sh BUDGET_S STEP...            on the GPU machine, from the checkout's root
#   bench/public_kernels/campaign.sh --dry-run BUDGET_S STEP...  here, no GPU: see DRY RUN below
#
# STEP, in the order given: a kernel to search (sgemm, attn, reduction), or `confirm` (reproduce and
# explain the winner of each kernel not yet confirmed in this call: searched earlier in it, or with
# pins carried in .carry/public-kernels/pins/<kernel>/, as a first call's $OUT tgz unpacks). The whole command
# stays within BUDGET_S seconds: the confirmations' time (CONFIRM_S a kernel) is reserved first, and
# the rest is shared equally by the searched arms (each `tune --time-limit`,
# then the tune's own interleaved re-measure and pin). Everything lands in $OUT as it finishes:
# $OUT/public_kernels-<steps>.log (the console), $OUT/public_kernels-<steps>.tgz (journals, pins, confirmations, SASS
# diffs; rewritten after every step, so a call cut short still returns what finished) and
# $OUT/public_kernels-<steps>.md (the summary, bench/public_kernels/report.py).
#
# Needs .carry/cuda133/ptxas-13.3.gz (ptxas ACFs need ptxas 13.3: the machine's nvcc 13.0 runs with
# ptxas 13.3 in place of its own, as in bench/public_kernels/cuda_samples.sh) and the screened ACF pools
# .carry/public-kernels/pool-<kernel>/ (bench/public_kernels/prepare.sh makes both here).
#
# DRY RUN (--dry-run, on a machine without a GPU): every kernel is played by bench/multi_gpu/dry, the
# TEST DOUBLE (a real CUDA library that nvcc compiles, a host-only benchmark that sleeps and prints a
# time made from its -D parameters), with this machine's nvcc 13.3 and an unscreened pool
# (DRY_POOL). So every step runs end to end (arms, pins, the copy at another path, verify,
# interleaved rounds, SASS diff, report); the real peers are only configured and built (their
# benchmarks say no GPU). The pools are .carry/public-kernels/pool-<kernel> (bench/public_kernels/prepare.sh) unless DRY_POOL
# names one. No figure of a dry run is a GPU claim.
#
# Env: CONFIRM_S (95), ARM_OVERHEAD_S (25: a tune's re-measure and minimal pin after its --time-limit, which
# counts its configure and baseline), ARM_S (each arm's --time-limit; default: what the budget leaves), SEED (24),
# JOBS (6: candidates compiled at once; each is one more scratch tree configured, one after another, inside
# the time limit), POOL (12), REPEATS (3), ROUNDS (30), NCU (1: try Nsight Compute on the winners).
set -uo pipefail
. "$(dirname "$0")/campaign_call.sh"
start_call public_kernels "sgemm, attn, reduction, confirm" "$@"
CONFIRM_S=${CONFIRM_S:-95}; ARM_OVERHEAD_S=${ARM_OVERHEAD_S:-25}; SEED=${SEED:-24}; JOBS=${JOBS:-6}
POOL=${POOL:-12}; REPEATS=${REPEATS:-3}; ROUNDS=${ROUNDS:-30}; NCU=${NCU:-1}

# kernel -> peer folder, target, benchmark, benchmark arguments (the registered ARGS), kernel regex
declare -A SRC=([sgemm]=bench/peers/sgemm [attn]=bench/peers/flash-attention-minimal
                [reduction]=bench/peers/cuda-samples)
declare -A TARGET=([sgemm]=sgemm_kernels [attn]=attn_kernels [reduction]=reduction_kernels)
declare -A BENCH=([sgemm]=sgemm_bench [attn]=attn_bench [reduction]=reduction_bench)
declare -A ARGS=([sgemm]="--size 4096 --repeats 20" [attn]="--batch 16 --heads 16 --seq 512 --repeats 5"
                 [reduction]="--n 67108864 --iterations 100")
declare -A KERNEL=([sgemm]=sgemmWarptiling [attn]=forward_kernel [reduction]=reduce7)

snapshot() {  # the results so far, in $OUT (atomically: a call cut short keeps the last whole one)
    tar -czf "$OUT/.$name.tgz" -C "$res" . && mv -f "$OUT/.$name.tgz" "$OUT/$name.tgz"
    "$python" bench/public_kernels/report.py "$res" > "$OUT/.$name.md" 2>&1 && mv -f "$OUT/.$name.md" "$OUT/$name.md"
}

if [ "$dry" = 1 ]; then
    python=${PYTHON:-$here/.venv/bin/python}
    nvcc=$("$python" -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "bin", "nvcc"))')
    cuobjdump=$(dirname "$nvcc")/cuobjdump
    echo "== DRY RUN: no GPU; the TEST DOUBLE bench/multi_gpu/dry plays every kernel (CPU figures, no GPU claim)"
    echo "TEST DOUBLE: bench/multi_gpu/dry played every kernel" > "$res/DRY"  # the report says so
    for k in sgemm attn reduction; do  # the real peers: configured and built with this nvcc
        b=/tmp/$name-static-$k  # from a copy as the arms make it (what the peer includes must come along)
        peer_tree "${SRC[$k]}" "$b-tree"
        cmake -S "$b-tree/${SRC[$k]}" -B "$b" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" \
            -Dciq_build_DIR="$("$python" -m ciq_build --cmake-dir)" >/dev/null \
            && cmake --build "$b" --target "${BENCH[$k]}" >/dev/null \
            && echo "== $k: ${BENCH[$k]} built; it says: $("$b/${BENCH[$k]}" ${ARGS[$k]} 2>/dev/null | head -1)" \
            || echo "== $k: the real peer did not build"
    done
    for k in sgemm attn reduction; do
        SRC[$k]=bench/multi_gpu/dry; TARGET[$k]=dry_kernels; BENCH[$k]=dry_bench; ARGS[$k]=""; KERNEL[$k]=dry_scale
    done
    pool_of() { echo "${DRY_POOL:-$here/.carry/public-kernels/pool-$1}"; }  # a pool screened on the real kernel: it still loads
    extra_cmake=(-DDRY_BENCH_MS="${DRY_BENCH_MS:-50}")
else
    python=python3
    mkdir -p /tmp/ciq-path && ln -sfn "$here/ciq_build" /tmp/ciq-path/ciq_build
    export PYTHONPATH=/tmp/ciq-path  # only the package: the checkout's cmake/ would shadow pip's cmake
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv \
        | tee "$res/gpu.txt"
    hybrid_nvcc
    cuobjdump=$(command -v cuobjdump)
    pool_of() { echo "$here/.carry/public-kernels/pool-$1"; }
    extra_cmake=()
fi
trap snapshot EXIT
{ "$nvcc" --version | tail -2; "$(dirname "$nvcc")/ptxas" --version | tail -1; } | tee "$res/nvcc.txt"

searched=(); confirms=()
for step in "${steps[@]}"; do
    case $step in
    sgemm|attn|reduction) searched+=("$step") ;;
    confirm) confirms=(sgemm attn reduction) ;;
    *) echo "unknown step '$step': sgemm, attn, reduction or confirm" >&2; exit 64 ;;
    esac
done
# Kernels to confirm: searched here, or with a pin carried from an earlier call.
to_confirm=()
for k in "${confirms[@]}"; do
    if [[ " ${searched[*]} " == *" $k "* ]] || [ -d ".carry/public-kernels/pins/$k" ]; then
        to_confirm+=("$k")
    fi
done
pending=${#to_confirm[@]}  # confirmations still to come: their time is kept free
done_confirms=" "
n_arms=$(( 3 * ${#searched[@]} ))
if [ "$n_arms" -gt 0 ]; then
    ARM_S=${ARM_S:-$(( (budget - CONFIRM_S * ${#to_confirm[@]} - ARM_OVERHEAD_S * n_arms) / n_arms ))}
    [ "$ARM_S" -ge 15 ] || { echo "budget $budget s is too small for $n_arms arms and ${#to_confirm[@]} confirmations"; ARM_S=15; }
    echo "== $n_arms arms of $ARM_S s search each (tune --time-limit), ${#to_confirm[@]} confirmation(s) of ~$CONFIRM_S s; budget $budget s"
fi

arm() {  # kernel, arm name, controls...
    local k=$1 a=$2; shift 2
    local work=/tmp/$name-$k-$a
    # A tree of its own (the peer and the shared benchmark header, at the same relative paths), so that
    # each arm pins into its own ciq/ and the committed pins play no part.
    rm -rf "$work" && peer_tree "${SRC[$k]}" "$work/tree"
    local limit=$ARM_S
    if [ $(( $(left) - limit - ARM_OVERHEAD_S - CONFIRM_S * pending )) -lt 0 ]; then
        limit=$(( $(left) - ARM_OVERHEAD_S - CONFIRM_S * pending ))
        [ "$limit" -ge 10 ] || { echo "== $k/$a: skipped, no time left"; return; }
    fi
    local tune=("${TARGET[$k]}" -S "$work/tree/${SRC[$k]}" -B "$work/build" --objective time --seed "$SEED"
                --generations 200 --pool-size "$POOL" --repeats "$REPEATS" --jobs "$JOBS" "$@"
                --time-limit "${limit}s" --cmake-arg=-DCMAKE_CUDA_COMPILER="$nvcc")
    for c in "${extra_cmake[@]}"; do tune+=(--cmake-arg="$c"); done
    echo "== $k/$a: tune ${tune[*]}"
    local start=$SECONDS rc
    timeout -s INT $(( limit + 120 )) "$python" -m ciq_build tune "${tune[@]}" > "$work/tune.log" 2>&1
    rc=$?
    tail -8 "$work/tune.log"
    echo "== $k/$a: exit $rc after $((SECONDS - start)) s (search limit $limit s)"
    mkdir -p "$res/$k/$a"
    cp "$work/tune.log" "$res/$k/$a/"
    cp "$work/build/ciq/journal/${TARGET[$k]}.jsonl" "$res/$k/$a/journal.jsonl" 2>/dev/null
    cp "$work/tree/${SRC[$k]}/ciq/${TARGET[$k]}".json "$res/$k/$a/pin.json" 2>/dev/null
    cp "$work/tree/${SRC[$k]}/ciq/"*.acf "$res/$k/$a/" 2>/dev/null  # the record names it (<target>.<sha>.acf)
    echo "{\"kernel\": \"$k\", \"arm\": \"$a\", \"limit_s\": $limit, \"wall_s\": $((SECONDS - start)), \"rc\": $rc}" \
        > "$res/$k/$a/arm.json"
    "$python" bench/public_kernels/journal_summary.py "$res/$k/$a/journal.jsonl" --top 5 > "$res/$k/$a/summary.txt" 2>&1
    snapshot
}

search() {  # kernel: the three arms, the same search budget each
    arm "$1" knobs --controls knobs --controls params
    arm "$1" acf --controls acf-pool:"$(pool_of "$1")"
    arm "$1" both --controls knobs --controls params --controls acf-pool:"$(pool_of "$1")"
}

confirm() {  # kernel: the winner from a copy of the tree at another path, against the defaults and the other arms
    local k=$1 pins=$res/$k t=${TARGET[$k]}
    [ -d "$pins" ] || { pins=$here/.carry/public-kernels/pins/$k; mkdir -p "$res/$k" && cp -r "$pins"/. "$res/$k/"; }
    if [ "$(left)" -lt $(( CONFIRM_S / 2 )) ]; then
        echo "== $k: not confirmed, $(left) s left of the budget (a confirmation takes ~$CONFIRM_S s)"; return
    fi
    local winner
    winner=$("$python" bench/public_kernels/report.py --winner "$pins")
    if [ -z "$winner" ]; then echo "== $k: no arm pinned anything: nothing to confirm"; return; fi
    echo "== $k: confirming the $winner arm's pin ($((SECONDS)) s into the call, $(left) s left)"
    # Not `git clone`: the .git that travels to the device is not this checkout's current history.
    local clone=/tmp/elsewhere/$name-$k
    rm -rf "$clone" && mkdir -p "$clone"
    tar --exclude=./.carry --exclude=./.git --exclude=./build --exclude=./.venv -cf - . | tar -xf - -C "$clone"
    rm -f "$clone/${SRC[$k]}/ciq/$t".json "$clone/${SRC[$k]}/ciq/$t".*acf
    mkdir -p "$clone/${SRC[$k]}/ciq"
    cp "$pins/$winner/pin.json" "$clone/${SRC[$k]}/ciq/$t.json"
    cp "$pins/$winner/"*.acf "$clone/${SRC[$k]}/ciq/" 2>/dev/null  # its ACF, under the name the record gives
    # One other arm's pin in the same rotation, the question of the issue: ACFs alone when the winner
    # is not that arm, else knobs + params (each more arm costs ROUNDS more runs).
    local others=() other=acf
    [ "$winner" = acf ] && other=knobs
    if [ -f "$pins/$other/pin.json" ]; then
        others=(--arm "$other=$("$python" bench/public_kernels/report.py --cmake-flags "$pins/$other")")
    fi
    # The copy's own package (on the CPU machine the venv's editable install stays the checkout's).
    [ "$dry" = 0 ] && ln -sfn "$clone/ciq_build" /tmp/ciq-path/ciq_build
    (cd "$clone" && "$python" bench/public_kernels/confirm.py --source "${SRC[$k]}" --target "$t" --benchmark "${BENCH[$k]}" \
            --nvcc "$nvcc" --rounds "$ROUNDS" --work "/tmp/$name-confirm-$k" --json "$res/$k/confirm.json" \
            "${others[@]}" -- ${ARGS[$k]}) 2>&1 | tee "$res/$k/confirm.log" | tail -9
    [ "$dry" = 0 ] && ln -sfn "$here/ciq_build" /tmp/ciq-path/ciq_build
    echo "$winner" > "$res/$k/winner.txt"
    local d=/tmp/$name-confirm-$k/$t
    [ -f "$d-pinned/lib$t.a" ] || { echo "== $k: no pinned build to explain"; snapshot; return; }
    "$python" bench/public_kernels/sass_diff.py "$d-defaults/lib$t.a" "$d-pinned/lib$t.a" --cuobjdump "$cuobjdump" \
        --kernel "${KERNEL[$k]}" --json "$res/$k/sass_diff.json" 2>&1 | tee "$res/$k/sass_diff.txt" | tail -14
    if [ "$dry" = 0 ] && [ "$NCU" = 1 ] && command -v ncu >/dev/null && [ "$(left)" -gt 100 ]; then
        for side in defaults pinned; do  # one launch of the kernel, counters where the runtime allows them
            timeout 40 ncu --clock-control none -k "regex:${KERNEL[$k]}" -c 1 --section SpeedOfLight \
                --section Occupancy --section WarpStateStats --section LaunchStats \
                "$d-$side/${BENCH[$k]}" ${ARGS[$k]} > "$res/$k/ncu-$side.txt" 2>&1
            echo "== $k: ncu $side exit $?: $(grep -m1 -E 'Duration|==ERROR==|==WARNING==' "$res/$k/ncu-$side.txt")"
        done
    fi
    snapshot
}

for step in "${steps[@]}"; do
    if [ "$step" != confirm ]; then search "$step"; continue; fi
    for k in "${to_confirm[@]}"; do
        # Each kernel once, when its pins are here: searched earlier in this call, or carried.
        [[ "$done_confirms" == *" $k "* ]] && continue
        [ -d "$res/$k" ] || [ -d ".carry/public-kernels/pins/$k" ] || continue
        confirm "$k"
        done_confirms+="$k "
        pending=$(( pending - 1 ))
    done
done
echo "== done in $SECONDS s of $budget"
