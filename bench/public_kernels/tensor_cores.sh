#!/usr/bin/env bash
# A tensor-core kernel on the GPU (bench/peers/cuda_hgemm: mma.sync + cp.async HGEMM; with PEER=attention
# bench/peers/flashinfer: FlashInfer's FA2 attention prefill, mma.sync + cp.async), tuned by arms that
# answer whether ACF gains compose: knobs + params (GA); ptxas ACFs through the product's own search
# (`--controls ptxas-acf:13.3`, the compileiq strategy); the product's staged search, ACFs on top of the best
# knobs + params' PARAMS (`tune --stage knobs,params --stage ptxas-acf:13.3 --stage-from best`: staged) and the reverse (reverse); and all
# of it in one joint search with the staged search's budget. Then the defaults and every pin are re-measured
# interleaved from a copy of the tree at another path (bench/public_kernels/confirm.py: verify, ROUNDS rounds,
# bootstrap 95% CIs), cuBLAS is timed on the same problem, and the best pin is explained (SASS diff, Nsight
# Compute).
#
#   bench/public_kernels/tensor_cores.sh BUDGET_S STEP...            on the GPU machine, from anywhere
#   bench/public_kernels/tensor_cores.sh --dry-run BUDGET_S STEP...  here, no GPU: see DRY RUN below
#
# STEP, in the order given: knobs, acf, staged, reverse, joint, confirm. confirm also takes the pins of earlier
# calls from .carry/tensor-cores/pins/<target>/<arm>/ (a call's $OUT tgz, unpacked there; a folder named for no
# arm, e.g. staged-12-07, joins the rotation under its own name). Arms share what the budget
# leaves after CONFIRM_S (when confirm is a step) equally, ARM_S each unless set; staged, reverse and joint get
# twice that (the two stages' budget, shared out by the tune). Everything lands in $OUT as it finishes:
# $OUT/tensor_cores-<steps>.log (the console) and $OUT/tensor_cores-<steps>.tgz (journals, pins, confirmation,
# cuBLAS, SASS diff, ncu; rewritten after every step, so a call cut short returns what finished).
#
# Needs (bench/compileiq_side_by_side/carry.sh none .carry makes them): .carry/compileiq/wheels/ (compileiq and what it
# needs), .carry/compileiq/search-spaces/, .carry/cuda133/ptxas-13.3.gz (ACFs need ptxas 13.3: the machine's nvcc 13.0
# runs with it in place of its own), .carry/ray-site.tar.xz (compileiq imports Ray).
#
# DRY RUN: the real peer is configured and built with this machine's nvcc 13.3 (its benchmark says no GPU);
# every arm then runs end to end on bench/multi_gpu/dry, the TEST DOUBLE (a real CUDA library, a host-only
# benchmark that sleeps and prints a time made from its -D parameters; its PARAMS are X and Y), with the
# checkout's .venv (compileiq). No figure of a dry run is a GPU claim.
#
# Env: ARM_S, CONFIRM_S (150), ACF_SPACE (ptxas-acf:13.3: the ACF space every arm searches; ptxas-acf:13.3:att is
# NVIDIA's space for attention kernels), STAGE1 (knobs,params: the staged and reverse arms' knobs + params stage, e.g. params: a
# small grid of tiles listed whole in a few evaluations, the ACF stage then getting what it leaves), STAGE3 (unset: none; e.g.
# knobs: a third stage of the staged arm, on top of the best of the two before it, ACF included), STRATEGY (the knobs arm's `tune --strategy`; unset: the space's default), ARM_OVERHEAD_S (30), SEED (37), JOBS (8), POOL (12), REPEATS (3), ROUNDS (20),
# STAGE_FROM (best: the staged and reverse arms' `tune --stage-from`; both is tune's default), NCU (1), PEER (hgemm, or attention: bench/peers/flashinfer's FA2 prefill, no cuBLAS; attention-hd256: the same
# at head dimension 256, 16 heads; attention-hd64: at 64, 64 heads; sgemm and attn-fp32, the FP32
# peers of campaign.sh, bench/peers/sgemm and bench/peers/flash-attention-minimal: the same arms on every kernel), SIZE (8192: the HGEMM's),
# SEQ (8192: the attention's sequence, 32 heads of 128), LIMITS (1: first time the defaults against the card: cuBLAS on the HGEMM's problem, the attention's TFLOP/s), SEED_FROM (known-good configurations every arm evaluates
# first, `tune --seed-from` values separated by ';', a path relative to the checkout's root; a seed that does
# not fit an arm's or a stage's space is skipped there).
set -uo pipefail
. "$(dirname "$0")/campaign_call.sh"
start_call "tensor_cores${PEER:+-$PEER}" "knobs, acf, staged, reverse, joint, confirm" "$@"
CONFIRM_S=${CONFIRM_S:-150}; ARM_OVERHEAD_S=${ARM_OVERHEAD_S:-30}; SEED=${SEED:-37}; JOBS=${JOBS:-8}
POOL=${POOL:-12}; REPEATS=${REPEATS:-3}; ROUNDS=${ROUNDS:-20}; NCU=${NCU:-1}; SIZE=${SIZE:-8192}; SEQ=${SEQ:-8192}
STAGE1=${STAGE1:-knobs,params}; ACF_SPACE=${ACF_SPACE:-ptxas-acf:13.3}
case ${PEER:-hgemm} in
hgemm) src=bench/peers/cuda_hgemm; target=hgemm_kernels; bench=hgemm_bench; kernel=mmaAsyncStage
       args=(--size "$SIZE" --repeats 20); ncu_args=(--size "$SIZE" --repeats 2) ;;
attention) src=bench/peers/flashinfer; target=attention_kernels; bench=attention_bench
           kernel=SinglePrefillWithKVCacheKernel; args=(--seq "$SEQ" --heads 32 --repeats 20)
           ncu_args=(--seq "$SEQ" --heads 32 --repeats 2) ;;
attention-hd256) src=bench/peers/flashinfer; target=attention_kernels_hd256; bench=attention_bench_hd256
           kernel=SinglePrefillWithKVCacheKernel; args=(--seq "$SEQ" --heads 16 --repeats 20)
           ncu_args=(--seq "$SEQ" --heads 16 --repeats 2) ;;
attention-hd64) src=bench/peers/flashinfer; target=attention_kernels_hd64; bench=attention_bench_hd64
           kernel=SinglePrefillWithKVCacheKernel; args=(--seq "$SEQ" --heads 64 --repeats 20)
           ncu_args=(--seq "$SEQ" --heads 64 --repeats 2) ;;
sgemm) src=bench/peers/sgemm; target=sgemm_kernels; bench=sgemm_bench; kernel=sgemmWarptiling  # FP32: no
       args=(--size 4096 --repeats 20); ncu_args=(--size 4096 --repeats 2) ;;          # tensor cores; the arms
attn-fp32) src=bench/peers/flash-attention-minimal; target=attn_kernels; bench=attn_bench  # on every kernel
           kernel=forward_kernel; args=(--batch 16 --heads 16 --seq 512 --repeats 5)
           ncu_args=(--batch 16 --heads 16 --seq 512 --repeats 1) ;;
*) echo "PEER is hgemm, attention, attention-hd256, attention-hd64, sgemm or attn-fp32, not '$PEER'" >&2; exit 64 ;;
esac

snapshot() {  # the results so far, in $OUT (atomically: a call cut short keeps the last whole one)
    tar -czf "$OUT/.$name.tgz" -C "$res" . && mv -f "$OUT/.$name.tgz" "$OUT/$name.tgz"
}

if [ "$dry" = 1 ]; then
    python=${PYTHON:-$here/.venv/bin/python}
    nvcc=$("$python" -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "bin", "nvcc"))')
    cuobjdump=$(dirname "$nvcc")/cuobjdump
    export CIQ_SEARCH_SPACES_DIR=${CIQ_SEARCH_SPACES_DIR:-/work/shared/search-spaces}
    echo "== DRY RUN: no GPU; the TEST DOUBLE bench/multi_gpu/dry plays the kernel (CPU figures, no GPU claim)"
    echo "TEST DOUBLE: bench/multi_gpu/dry played the kernel" > "$res/DRY"
    b=/tmp/$name-static  # from a copy as the arms make it: what the peer includes from outside it must come along
    peer_tree "$src" "$b-tree"
    cmake -S "$b-tree/$src" -B "$b" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" \
        -Dciq_build_DIR="$("$python" -m ciq_build --cmake-dir)" >/dev/null \
        && cmake --build "$b" --target "$bench" >/dev/null \
        && echo "== $target: $bench built; it says: $("$b/$bench" "${args[@]}" 2>/dev/null | head -1)" \
        || echo "== $target: the real peer did not build"
    src=bench/multi_gpu/dry; target=dry_kernels; bench=dry_bench; kernel=dry_scale; args=()
    extra_cmake=(-DDRY_BENCH_MS="${DRY_BENCH_MS:-50}")
else
    python=python3
    for need in .carry/compileiq/wheels .carry/compileiq/search-spaces/manifest.json .carry/cuda133/ptxas-13.3.gz \
                .carry/ray-site.tar.xz; do
        [ -e "$need" ] || { echo "missing $need: run bench/compileiq_side_by_side/carry.sh none .carry"; exit 2; }
    done
    mkdir -p /tmp/site /tmp/ciq-path
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .carry/compileiq/wheels/*.whl || exit 2
    tar xJf .carry/ray-site.tar.xz -C /tmp/site || exit 2
    ln -sfn "$here/ciq_build" /tmp/ciq-path/ciq_build
    export PYTHONPATH=/tmp/ciq-path:/tmp/site  # only the package: the checkout's cmake/ would shadow pip's cmake
    export CIQ_SEARCH_SPACES_DIR=$here/.carry/compileiq/search-spaces
    nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.max.sm,clocks.sm,temperature.gpu,power.draw \
        --format=csv | tee "$res/gpu.txt"
    hybrid_nvcc
    cuobjdump=$(command -v cuobjdump)
    extra_cmake=()
fi
trap snapshot EXIT
{ "$nvcc" --version | tail -2; "$(dirname "$nvcc")/ptxas" --version | tail -1; } | tee "$res/nvcc.txt"
"$python" -c 'import compileiq.ciq, ciq_build; print("compileiq and ciq_build import")' || exit 2

searched=(); confirming=0
for step in "${steps[@]}"; do
    case $step in
    knobs|acf) searched+=("$step") ;;
    staged|reverse|joint) searched+=("$step" "$step") ;;  # twice the budget: two stages'

    confirm) confirming=1 ;;
    *) echo "unknown step '$step': knobs, acf, staged, reverse, joint or confirm" >&2; exit 64 ;;
    esac
done
if [ ${#searched[@]} -gt 0 ]; then
    ARM_S=${ARM_S:-$(( (budget - CONFIRM_S * confirming - ARM_OVERHEAD_S * ${#searched[@]}) / ${#searched[@]} ))}
    [ "$ARM_S" -ge 20 ] || { echo "budget $budget s is too small for ${#searched[@]} arm budgets"; ARM_S=20; }
    echo "== arms: $ARM_S s of search each (staged, reverse, joint twice that); confirmation ~$CONFIRM_S s; budget $budget s"
fi

pin_dir() {  # arm: its pin, from this call or carried from an earlier one (of the real kernel: not in a dry run)
    if [ -f "$res/$1/pin.json" ]; then echo "$res/$1"
    elif [ "$dry" = 0 ] && [ -f "$here/.carry/tensor-cores/pins/$target/$1/pin.json" ]; then
        mkdir -p "$res/$1" && cp -r "$here/.carry/tensor-cores/pins/$target/$1"/. "$res/$1/" && echo "$res/$1"; fi
}
flags_of() {  # arm: its pin as one CMAKE_CUDA_FLAGS value (-D params, flags, the ACF by absolute path)
    "$python" bench/public_kernels/report.py --cmake-flags "$1" | sed 's/^-DCMAKE_CUDA_FLAGS=//'
}

seeds=()
IFS=';' read -r -a seed_list <<< "${SEED_FROM:-}"
for seed in "${seed_list[@]}"; do
    [ -e "$here/$seed" ] && seed=$here/$seed
    [ -n "$seed" ] && seeds+=(--seed-from="$seed")
done

arm() {  # arm name, seconds, what it searches (tune options)...
    local a=$1 limit=$2; shift 2
    local work=/tmp/$name-$a
    rm -rf "$work" && peer_tree "$src" "$work/tree"
    local most=$(( $(left) - ARM_OVERHEAD_S - CONFIRM_S * confirming ))
    [ "$limit" -le "$most" ] || limit=$most
    [ "$limit" -ge 15 ] || { echo "== $a: skipped, no time left"; return; }
    local tune=("$target" -S "$work/tree/$src" -B "$work/build" --objective time --seed "$SEED"
                --generations 200 --pool-size "$POOL" --repeats "$REPEATS" --jobs "$JOBS" "$@"
                "${seeds[@]}" --time-limit "${limit}s" --cmake-arg=-DCMAKE_CUDA_COMPILER="$nvcc")
    for c in "${extra_cmake[@]}"; do tune+=(--cmake-arg="$c"); done
    echo "== $a: tune ${tune[*]}"
    local start=$SECONDS rc
    timeout -s INT $(( limit + 150 )) "$python" -m ciq_build tune "${tune[@]}" > "$work/tune.log" 2>&1
    rc=$?
    grep -E "figures|not scored|JIT|baseline:|^ciq_build: stage|^ciq_build: staged|verdict:" "$work/tune.log" | head -12
    tail -9 "$work/tune.log"
    echo "== $a: exit $rc after $((SECONDS - start)) s (search limit $limit s)"
    mkdir -p "$res/$a"
    cp "$work/tune.log" "$res/$a/"
    cp "$work/build/ciq/journal/$target.jsonl" "$res/$a/journal.jsonl" 2>/dev/null
    cp "$work/tree/$src/ciq/$target.json" "$res/$a/pin.json" 2>/dev/null
    cp "$work/tree/$src/ciq/"*.acf "$res/$a/" 2>/dev/null
    echo "{\"arm\": \"$a\", \"limit_s\": $limit, \"wall_s\": $((SECONDS - start)), \"rc\": $rc}" > "$res/$a/arm.json"
    "$python" bench/public_kernels/journal_summary.py "$res/$a/journal.jsonl" --top 5 > "$res/$a/summary.txt" 2>&1
    snapshot
}

search() {  # step (the strategy: each space's default, compileiq for the ACF space)
    case $1 in
    knobs) arm knobs "$ARM_S" --controls knobs --controls params ${STRATEGY:+--strategy "$STRATEGY"} ;;
    acf) arm acf "$ARM_S" --controls "$ACF_SPACE" ;;
    staged) arm staged $(( 2 * ARM_S )) --stage "$STAGE1" --stage "$ACF_SPACE" ${STAGE3:+--stage "$STAGE3"} \
                --stage-from "${STAGE_FROM:-best}" ;;
    reverse) arm reverse $(( 2 * ARM_S )) --stage "$ACF_SPACE" --stage "$STAGE1" --stage-from "${STAGE_FROM:-best}" ;;
    joint) arm joint $(( 2 * ARM_S )) --controls knobs --controls params --controls "$ACF_SPACE" \
               --strategy compileiq ;;
    esac
}

confirm() {  # the defaults and every pin, interleaved, from a copy of the tree at another path
    [ "$(left)" -ge $(( CONFIRM_S / 2 )) ] || { echo "== confirm: $(left) s left, not enough"; return; }
    local arms=() best="" best_ratio=9 a d flags carried=()
    # A carried pin under a folder named for no arm (an earlier call's winner, e.g. staged-12-07) rides along
    # too, so one rotation re-measures it beside this call's pins.
    if [ "$dry" = 0 ] && [ -d "$here/.carry/tensor-cores/pins/$target" ]; then
        for d in "$here/.carry/tensor-cores/pins/$target"/*/; do
            a=$(basename "$d"); case " knobs acf staged reverse joint " in *" $a "*) ;; *) carried+=("$a") ;; esac
        done
    fi
    for a in knobs acf staged reverse joint "${carried[@]}"; do
        d=$(pin_dir "$a")
        [ -n "$d" ] || continue
        flags_of "$d" > "$d/cmake_flags.txt"
        arms+=("$a")
    done
    [ ${#arms[@]} -gt 0 ] || { echo "== confirm: no arm pinned anything"; return; }
    # The winner: the pin whose own tune re-measured it fastest against its defaults... measured here instead:
    # every pin is an arm of one rotation; `pinned` is the first, the others ride along (--arm NAME=FLAGS).
    local clone=/tmp/elsewhere/$name
    rm -rf "$clone" && mkdir -p "$clone"
    tar --exclude=./.carry --exclude=./.git --exclude=./build --exclude=./.venv -cf - . | tar -xf - -C "$clone"
    rm -f "$clone/$src/ciq/$target".json "$clone/$src/ciq/$target".*acf
    mkdir -p "$clone/$src/ciq"
    local first=${arms[0]} others=()
    for a in "${arms[@]:1}"; do others+=(--arm "$a=-DCMAKE_CUDA_FLAGS=$(cat "$res/$a/cmake_flags.txt")"); done
    # The first arm's pin as the pinned record (verify checks it took effect).
    cp "$res/$first/pin.json" "$clone/$src/ciq/$target.json"
    cp "$res/$first/"*.acf "$clone/$src/ciq/" 2>/dev/null
    [ "$dry" = 0 ] && ln -sfn "$clone/ciq_build" /tmp/ciq-path/ciq_build
    echo "== confirm: defaults, ${arms[*]} ($ROUNDS interleaved rounds, $(left) s left)"
    (cd "$clone" && "$python" bench/public_kernels/confirm.py --source "$src" --target "$target" --benchmark "$bench" \
            --nvcc "$nvcc" --rounds "$ROUNDS" --time-limit $(( $(left) - 20 )) --work "/tmp/$name-confirm" --json "$res/confirm.json" \
            "${others[@]}" -- "${args[@]}") 2>&1 | tee "$res/confirm.log" | tail -12
    [ "$dry" = 0 ] && ln -sfn "$here/ciq_build" /tmp/ciq-path/ciq_build
    echo "${arms[*]}" > "$res/confirmed_arms.txt"
    snapshot
    # Explain the fastest pin: SASS against the defaults, and Nsight Compute on one launch of each.
    best=$("$python" - "$res/confirm.json" "$first" <<'PY'
import json, statistics, sys
data = json.load(open(sys.argv[1])); first = sys.argv[2]
ratios = {first: data["ratio"], **{name: arm["ratio"] for name, arm in data["arms"].items()}}
print(min(ratios, key=ratios.get))
PY
)
    echo "$best" > "$res/winner.txt"
    local w=/tmp/$name-confirm/$target
    local winner_dir=$w-pinned
    [ "$best" != "$first" ] && winner_dir=$w-$best
    [ -f "$winner_dir/lib$target.a" ] || { echo "== no build of $best to explain"; return; }
    "$python" bench/public_kernels/sass_diff.py "$w-defaults/lib$target.a" "$winner_dir/lib$target.a" \
        --cuobjdump "$cuobjdump" --kernel "$kernel" --json "$res/sass_diff.json" 2>&1 | tee "$res/sass_diff.txt" | tail -14
    if [ "$dry" = 0 ] && [ "$NCU" = 1 ] && command -v ncu >/dev/null; then
        for side in defaults "$best"; do
            local dir=$w-defaults
            [ "$side" = defaults ] || dir=$winner_dir
            timeout 60 ncu --clock-control none -k "regex:$kernel" -s 1 -c 1 --section SpeedOfLight \
                --section Occupancy --section WarpStateStats --section LaunchStats \
                "$dir/$bench" "${ncu_args[@]}" > "$res/ncu-$side.txt" 2>&1
            echo "== ncu $side exit $?: $(grep -m1 -E 'Duration|==ERROR==' "$res/ncu-$side.txt")"
        done
    fi
    snapshot
}

limits() {  # the defaults against the card: cuBLAS on the HGEMM's problem, the attention's own TFLOP/s
    [ "$dry" = 0 ] && [ "${LIMITS:-1}" = 1 ] || return 0
    local b=/tmp/$name-defaults
    # Only the benchmark (and cuBLAS's, where there is one): the folder's other targets are not this call's, and a
    # failure must say why, so the build's output is kept.
    local targets=("$bench")
    cmake -S "$src" -B "$b" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" -DCIQ_DISABLE=ON \
        -Dciq_build_DIR="$("$python" -m ciq_build --cmake-dir)" > "$res/limits-build.log" 2>&1 \
        && { [ "$target" != hgemm_kernels ] || ! grep -q hgemm_cublas "$b/build.ninja" || targets+=(hgemm_cublas); } \
        && cmake --build "$b" --target "${targets[@]}" >> "$res/limits-build.log" 2>&1 \
        || { echo "== limits: the peer did not build ($res/limits-build.log ends:)"; tail -8 "$res/limits-build.log"; return; }
    if [ "$target" = hgemm_kernels ]; then
        [ -x "$b/hgemm_cublas" ] || { echo "== cuBLAS: the toolkit has none (hgemm_cublas not built)"; return; }
        for r in 1 2 3; do "$b/hgemm_cublas" "${args[@]}"; "$b/$bench" "${args[@]}"; done 2>&1 \
            | tee "$res/cublas.txt" | grep -E "Average|FAIL"
    else  # the bar is a share of the card's dense FP16 tensor peak (989 TFLOP/s on the H100 SXM and the H200)
        for r in 1 2 3; do "$b/$bench" "${args[@]}"; done 2>&1 | tee "$res/defaults.txt" | grep -E "TFLOP|FAIL"
    fi
    snapshot
}

limits
for step in "${searched[@]}"; do
    [ -d "$res/$step" ] && continue  # staged, reverse and joint: listed twice, for their budget
    search "$step"
done
[ "$confirming" = 1 ] && confirm
echo "== done in $SECONDS s of $budget"
