#!/usr/bin/env bash
# Issue 13 on a GPU machine: baselines, tunes and clean-tree reproductions of
# the new sample kernel (stencil_kernels) and the cuda-samples peer
# (convolutionSeparable_kernels). Everything comes back as $OUT/<mode>.tgz
# plus $OUT/<mode>.log (the device tool returns at most 8 files).
#
#   bench/public_kernels/cuda_samples.sh stencil   machine ceilings, both baselines, then tune stencil_kernels
#   bench/public_kernels/cuda_samples.sh peer      tune convolutionSeparable_kernels
#   bench/public_kernels/cuda_samples.sh peeracf   ptxas ACFs alone on the peer (evidence, --no-pin)
#   bench/public_kernels/cuda_samples.sh fdtd      second peer (cuda-samples FDTD3d): baseline, the static screen's
#                                   prediction (-maxrregcount 56/64 against the defaults, 5 runs each),
#                                   then tune FDTD3d_kernels (knobs + params)
#   bench/public_kernels/cuda_samples.sh readme    the README's first command (FDTD3d, static) as the README gives it
#                                   (the default search) and with --strategy ga, then confirm (below) the
#                                   default's pin with the GA's winner as a third arm
#   bench/public_kernels/cuda_samples.sh occupancy the README's command with --objective occupancy --objective spill_bytes,
#                                   its pin confirmed against the defaults
#   bench/public_kernels/cuda_samples.sh confirm   copy the tree to another path, rebuild defaults and pins,
#                                   verify, 30+ interleaved rounds each (bench/public_kernels/confirm.py)
#
# Needs in .carry/: ptxas-13.3.gz (ptxas ACFs need ptxas 13.3: the machine's nvcc
# 13.0 runs with ptxas 13.3 in place of its own, as bench/sample_kernels/run.sh does) and
# the ACF pools sampled on the CPU machine (pool-stencil/, pool-peer/).
# Env: TUNE_S (seconds of search before the tune is stopped and finished from
# its journal), GENS, POOL, JOBS, REPEATS, SEED, ROUNDS.
set -uo pipefail
mode=$1
OUT=${OUT:-/tmp/out}
res=/tmp/res-$mode
rm -rf "$res" && mkdir -p "$res" "$OUT"
exec > >(tee "$OUT/$mode.log") 2>&1
finish() { tar -czf "$OUT/$mode.tgz" -C "$res" . ; }
trap finish EXIT
TUNE_S=${TUNE_S:-360}; GENS=${GENS:-24}; POOL=${POOL:-16}; JOBS=${JOBS:-12}; REPEATS=${REPEATS:-3}
SEED=${SEED:-1}; ROUNDS=${ROUNDS:-30}
export PYTHONUNBUFFERED=1

use_package() {  # only the package on the path (the checkout's cmake/ would shadow pip's cmake)
    mkdir -p /tmp/ciq-path && ln -sfn "$1/ciq_build" /tmp/ciq-path/ciq_build
    export PYTHONPATH=/tmp/ciq-path
}

hybrid_toolkit() {
    local root
    root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    rm -rf /tmp/hybrid && mkdir -p /tmp/hybrid
    for entry in "$root"/*; do [ "$(basename "$entry")" = bin ] || ln -s "$entry" /tmp/hybrid/; done
    cp -r "$root/bin" /tmp/hybrid/bin
    gunzip -c .carry/ptxas-13.3.gz > /tmp/hybrid/bin/ptxas && chmod +x /tmp/hybrid/bin/ptxas
    { /tmp/hybrid/bin/nvcc --version | tail -2; /tmp/hybrid/bin/ptxas --version | tail -1; } | tee "$res/nvcc.txt"
}

# target, source dir, benchmark, benchmark args (the registered ARGS)
declare -A SRC=([stencil_kernels]=sample_extension [convolutionSeparable_kernels]=bench/peers/cuda-samples
                [FDTD3d_kernels]=bench/peers/cuda-samples)
declare -A BENCH=([stencil_kernels]=stencil_bench [convolutionSeparable_kernels]=convolutionSeparable_bench
                  [FDTD3d_kernels]=FDTD3d_bench)
declare -A ARGS=([stencil_kernels]="--nx 512 --ny 512 --nz 128 --repeats 20"
                 [convolutionSeparable_kernels]="--w 8192 --h 8192 --repeats 20"
                 [FDTD3d_kernels]="--dim 376 --repeats 20")
# confirm: a third arm timed beside defaults and pin (the winner's -D params alone, no compiler flags)
# (FDTD3d: the one knob the static screen predicts, alone: bench/public_kernels/static_screen.py, docs/RESULTS.md)
declare -A ARM=([stencil_kernels]="params=-DCMAKE_CUDA_FLAGS=-DCIQ_STENCIL_BY=4 -DCIQ_STENCIL_ZCHUNK=16"
                [FDTD3d_kernels]="maxrreg64=-DCMAKE_CUDA_FLAGS=-maxrregcount=64")
declare -A CONTROLS=([stencil_kernels]="--controls knobs --controls params --controls acf-pool:$PWD/.carry/pool-stencil"
                     [convolutionSeparable_kernels]="--controls knobs --controls acf-pool:$PWD/.carry/pool-peer"
                     [FDTD3d_kernels]="--controls knobs --controls params")

baseline() {  # target: build with the defaults, run the benchmark 5 times, resource usage
    local t=$1 b=/tmp/base-$1
    cmake -S "${SRC[$t]}" -B "$b" -G Ninja -Dciq_build_DIR="$(python3 -m ciq_build --cmake-dir)" \
        -DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc -DCIQ_DISABLE=ON -DSAMPLE_EXTENSION_PYTHON=OFF >/dev/null \
        && cmake --build "$b" --target "${BENCH[$t]}" >/dev/null || { echo "baseline build of $t failed"; return 1; }
    for i in 1 2 3 4 5; do "$b/${BENCH[$t]}" ${ARGS[$t]}; done 2>&1 | tee "$res/baseline-$t.txt" | grep -E "CHECK|time_ms|gbps|gflops|mpixels|error"
    cuobjdump --dump-resource-usage "$b"/lib"$t".a 2>&1 | grep -E "Function|REG" | tee "$res/resources-$t.txt"
}

tune() {  # target: search for TUNE_S seconds, then finish (re-measure, pin) from the journal
    local t=$1 b=/tmp/tune-$1
    local common=(tune "$t" -S "${SRC[$t]}" -B "$b" --objective time --repeats "$REPEATS" --seed "$SEED"
                  --generations "$GENS" --pool-size "$POOL" --jobs "$JOBS" ${CONTROLS[$t]}
                  --cmake-arg=-DSAMPLE_EXTENSION_PYTHON=OFF --cmake-arg=-DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc)
    local start=$SECONDS
    timeout -s INT "$TUNE_S" python3 -m ciq_build "${common[@]}" --quiet 2>&1 | tee "$res/tune-$t.log" | tail -25
    local done_n
    done_n=$(cat "$b/ciq/journal/$t.jsonl" 2>/dev/null | grep -c '"kind": "evaluation"')  # 0 when none (grep -c || echo printed "0 0")
    echo "== $t: $done_n evaluations in $((SECONDS - start)) s; finishing from the journal"
    python3 -m ciq_build "${common[@]}" --max-evaluations "$done_n" 2>&1 | tee "$res/finish-$t.log" | tail -30
    echo "== $t: tune total $((SECONDS - start)) s"
    cp "$b/ciq/journal/$t.jsonl" "$res/" 2>/dev/null
    cp "${SRC[$t]}/ciq/$t.json" "${SRC[$t]}/ciq/"*.acf "$res/" 2>/dev/null
}

confirm_pins() {  # TARGETS' pins, from a copy of the tree at another path
    # A copy of the tree (pins and .acf files as committed here) at another path, no build
    # leftovers. Not `git clone`: the .git that travels to the device machine is not this
    # checkout's current history (on 2026-12-03 its HEAD was b3d9a0d, without the new pins).
    clone=/tmp/elsewhere/ciq-clean-clone
    rm -rf "$clone" && mkdir -p "$clone"
    tar --exclude=./.carry --exclude=./.git --exclude=./build -cf - . | tar -xf - -C "$clone" \
        && echo "copy of the working tree at $clone"
    use_package "$clone"
    cd "$clone" || exit 1
    for t in ${TARGETS:-stencil_kernels convolutionSeparable_kernels FDTD3d_kernels}; do
        [ -f "${SRC[$t]}/ciq/$t.json" ] || { echo "== $t: no pin to confirm"; continue; }
        python3 bench/public_kernels/confirm.py --source "${SRC[$t]}" --target "$t" --benchmark "${BENCH[$t]}" \
            --nvcc /tmp/hybrid/bin/nvcc --rounds "$ROUNDS" --json "$res/confirm-$t.json" \
            ${ARM[$t]:+--arm "${ARM[$t]}"} "$@" -- ${ARGS[$t]} \
            2>&1 | tee "$res/confirm-$t.log" | tail -12
    done
}

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$res/gpu.txt"
hybrid_toolkit
case $mode in
stencil)
    use_package "$PWD"
    nvcc -O3 -arch=sm_90a bench/public_kernels/copy_bw.cu -o /tmp/copy_bw && /tmp/copy_bw | tee "$res/copy_bw.txt"
    baseline stencil_kernels
    baseline convolutionSeparable_kernels
    tune stencil_kernels
    ;;
peer)
    use_package "$PWD"
    tune convolutionSeparable_kernels
    ;;
fdtd)
    use_package "$PWD"
    baseline FDTD3d_kernels
    for cap in 64 56; do  # the static screen's prediction, before any search
        b=/tmp/cap-$cap
        cmake -S "${SRC[FDTD3d_kernels]}" -B "$b" -G Ninja -Dciq_build_DIR="$(python3 -m ciq_build --cmake-dir)" \
            -DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc -DCIQ_DISABLE=ON "-DCMAKE_CUDA_FLAGS=-maxrregcount=$cap" >/dev/null \
            && cmake --build "$b" --target FDTD3d_bench >/dev/null || { echo "build with -maxrregcount=$cap failed"; continue; }
        echo "== -maxrregcount=$cap"
        for i in 1 2 3 4 5; do  # interleaved with the defaults
            "$b/FDTD3d_bench" ${ARGS[FDTD3d_kernels]} 2>&1 | sed "s/^/cap$cap: /"
            /tmp/base-FDTD3d_kernels/FDTD3d_bench ${ARGS[FDTD3d_kernels]} 2>&1 | sed "s/^/defaults: /"
        done | tee "$res/cap$cap-FDTD3d_kernels.txt" | grep -E "CHECK FAIL|time_ms|blocks_per_sm|waves|rror"
        cuobjdump --dump-resource-usage "$b/libFDTD3d_kernels.a" 2>&1 | grep REG | sed "s/^/cap$cap: /"
    done
    tune FDTD3d_kernels
    ;;
peeracf)  # evidence only: ptxas ACFs alone on the peer for TUNE_S seconds, nothing pinned
    use_package "$PWD"
    timeout -s INT "$TUNE_S" python3 -m ciq_build tune convolutionSeparable_kernels -S "${SRC[convolutionSeparable_kernels]}" \
        -B /tmp/acf-peer --objective time --repeats "$REPEATS" --seed 7 --generations "$GENS" --pool-size "$POOL" \
        --jobs "$JOBS" --controls acf-pool:"$PWD/.carry/pool-peer" --no-pin --quiet \
        --cmake-arg=-DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc 2>&1 | tail -5
    cp /tmp/acf-peer/ciq/journal/convolutionSeparable_kernels.jsonl "$res/acf-only.jsonl"
    ;;
readme)
    use_package "$PWD"
    # The README's command, with ptxas 13.3 as the README's PyPI toolkit has (this machine's nvcc is 13.0)
    first=(tune FDTD3d_kernels -S bench/peers/cuda-samples --objective spill_bytes --objective registers
           --generations 3 --pool-size 8 --cmake-arg=-DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc)
    pin=bench/peers/cuda-samples/ciq/FDTD3d_kernels.json
    python3 -m ciq_build "${first[@]}" -B /tmp/readme-ga --strategy ga 2>&1 | tee "$res/tune-ga.log" | tail -12
    cp "$pin" "$res/FDTD3d_kernels-ga.json" || exit 1
    controls_of() { python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["controls"]
print(" ".join(c["flags"] + [f"-D{k}={v}" for k, v in c["defines"].items()]))' "$1"; }
    ga_controls=$(controls_of "$pin")
    # The occupancy objective (the peer declares THREADS_PER_BLOCK): block size and register cap together
    python3 -m ciq_build tune FDTD3d_kernels -S bench/peers/cuda-samples --objective occupancy --objective spill_bytes \
        --generations 3 --pool-size 8 --cmake-arg=-DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc -B /tmp/readme-occupancy \
        2>&1 | tee "$res/tune-occupancy.log" | tail -12
    cp "$pin" "$res/FDTD3d_kernels-occupancy.json" || exit 1
    occupancy_controls=$(controls_of "$pin")
    python3 -m ciq_build "${first[@]}" -B /tmp/readme-default 2>&1 | tee "$res/tune-default.log" | tail -12
    cp "$pin" "$res/FDTD3d_kernels-default.json" || exit 1
    ARM[FDTD3d_kernels]="ga=-DCMAKE_CUDA_FLAGS=$ga_controls"
    TARGETS=FDTD3d_kernels confirm_pins --arm "occupancy=-DCMAKE_CUDA_FLAGS=$occupancy_controls"
    w=/tmp/ciq-confirm-ci/FDTD3d_kernels  # confirm.py's builds: -defaults, -pinned, -ga, -occupancy
    for side in pinned ga occupancy; do  # what each winner changed in the machine code
        python3 bench/public_kernels/sass_diff.py "$w-defaults/libFDTD3d_kernels.a" "$w-$side/libFDTD3d_kernels.a" \
            --kernel FiniteDifferences > "$res/sass_diff-$side.txt" 2>&1; head -12 "$res/sass_diff-$side.txt"
    done
    [ "${NCU:-1}" = 1 ] && for side in defaults pinned ga occupancy; do  # and in the counters (NCU=0: not)
        timeout 90 ncu --clock-control none -k regex:FiniteDifferences -s 1 -c 1 --section SpeedOfLight \
            --section Occupancy --section WarpStateStats --section LaunchStats "$w-$side/FDTD3d_bench" --dim 376 \
            --repeats 2 > "$res/ncu-$side.txt" 2>&1
        echo "== ncu $side exit $?: $(grep -m1 -E 'Duration|==ERROR==' "$res/ncu-$side.txt")"
    done
    ;;
occupancy)  # the occupancy tune alone (readme's third tune) and its pin against the defaults: a short device call
    use_package "$PWD"
    python3 -m ciq_build tune FDTD3d_kernels -S bench/peers/cuda-samples --objective occupancy --objective spill_bytes \
        --generations 3 --pool-size 8 --cmake-arg=-DCMAKE_CUDA_COMPILER=/tmp/hybrid/bin/nvcc -B /tmp/readme-occupancy \
        2>&1 | tee "$res/tune-occupancy.log" | tail -12
    TARGETS=FDTD3d_kernels confirm_pins
    ;;
confirm)
    confirm_pins
    ;;
esac
