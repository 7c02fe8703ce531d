#!/usr/bin/env bash
# What bench/compileiq_side_by_side/run.sh needs on a GPU machine that has no compileiq, no ptxas 13.3 and no
# network, gathered on this machine (none of it committed: .carry/ is ignored):
#
#   bench/compileiq_side_by_side/carry.sh COMPILEIQ_REPO [CARRY_DIR=.carry]
#
#   CARRY_DIR/compileiq/wheels/             compileiq (the .venv's version) and what it needs that the GPU machine's
#                                           image lacks (/work/.library/device/KINDS.md lists what it has), for
#                                           Python 3.12, ~12 MB
#   CARRY_DIR/compileiq/compileiq-example/  examples/compilers/nvcc_example/ of COMPILEIQ_REPO (a checkout, or a
#                                           bare git directory: its HEAD), and the commit it came from; none when
#                                           COMPILEIQ_REPO is `none` (a campaign that runs compileiq through ciq_build
#                                           alone: bench/public_kernels/tensor_cores.sh)
#   CARRY_DIR/compileiq/search-spaces/      $CIQ_SEARCH_SPACES_DIR (CompileIQ's offline manifest and .bin spaces)
#   CARRY_DIR/cuda133/ptxas-13.3.gz         the .venv's ptxas 13.3, gzipped (~16 MB), unless already there
#                                           (shared with other GPU campaigns; written whole or not at all)
#   CARRY_DIR/cuda133/cccl-13.3.tar.xz      the .venv's CCCL headers of 13.3 (~1.2 MB), unless already there: the GPU
#                                           machine's nvcc 13.0 lacks what FlashInfer includes (cuda::fast_mod_div, new
#                                           in 13.1; bench/public_kernels/campaign_call.sh swaps them in)
#   CARRY_DIR/ray-site.tar.xz               Ray (compileiq imports it), by bench/multi_gpu/carry_ray.sh, unless already there
#
# A device call carries .carry/compileiq, .carry/cuda133 and .carry/ray-site.tar.xz: ~57 MB.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=${1:?usage: bench/compileiq_side_by_side/carry.sh COMPILEIQ_REPO [CARRY_DIR]}
carry=${2:-.carry}
spaces=${CIQ_SEARCH_SPACES_DIR:?set CIQ_SEARCH_SPACES_DIR to the folder of the offline search spaces}
python_version=3.12
mkdir -p "$carry"
work=$(mktemp -d "$carry/.compileiq.XXXXXX")  # beside the result, so that each mv below is a rename
trap 'rm -rf "$work"' EXIT

# compileiq's own requirements and theirs, at the .venv's versions, less what the GPU image has.
site() { .venv/bin/python -c "import importlib.metadata as m; print(m.version('$1'))"; }
wheels=(compileiq pymoo pydantic pydantic_core dill json5 loguru annotated_types typing_inspection
        typing_extensions autograd cma alive_progress about_time graphemeu deprecated moocore cffi pycparser
        platformdirs)
pins=()
for name in "${wheels[@]}"; do pins+=("$name==$(site "$name")"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" --implementation cp \
    --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$work/compileiq/wheels" "${pins[@]}"

mkdir -p "$work/compileiq/compileiq-example"
[ "$repo" = none ] || for file in README.md optimize_reduction.py reduction.cu; do
    if [ -d "$repo/examples" ]; then
        cp "$repo/examples/compilers/nvcc_example/$file" "$work/compileiq/compileiq-example/"
    else
        git --git-dir "$repo" show "HEAD:examples/compilers/nvcc_example/$file" > "$work/compileiq/compileiq-example/$file"
    fi
done
[ "$repo" = none ] || if [ -d "$repo/examples" ]; then git -C "$repo" log -1 --format='%H %cd'; else
    git --git-dir "$repo" log -1 --format='%H %cd'; fi > "$work/compileiq/compileiq-example/COMMIT" \
    || echo unknown > "$work/compileiq/compileiq-example/COMMIT"
mkdir -p "$work/compileiq/search-spaces"
cp "$spaces"/manifest.json "$spaces"/*.bin "$work/compileiq/search-spaces/"
rm -rf "$carry/compileiq" && mv "$work/compileiq" "$carry/compileiq"

if [ ! -f "$carry/cuda133/ptxas-13.3.gz" ]; then
    ptxas=$(.venv/bin/python -c 'import nvidia, pathlib; print(pathlib.Path(list(nvidia.__path__)[0]) / "cu13/bin/ptxas")')
    "$ptxas" --version | grep "release 13.3" >/dev/null || { echo "$ptxas is not ptxas 13.3"; exit 1; }
    gzip -9 -c "$ptxas" > "$work/ptxas-13.3.gz"
    mkdir -p "$carry/cuda133" && mv "$work/ptxas-13.3.gz" "$carry/cuda133/ptxas-13.3.gz"
fi
if [ ! -f "$carry/cuda133/cccl-13.3.tar.xz" ]; then
    include=$(.venv/bin/python -c 'import nvidia, pathlib; print(pathlib.Path(list(nvidia.__path__)[0]) / "cu13/include")')
    tar -cJf "$work/cccl-13.3.tar.xz" -C "$include" cccl
    mv "$work/cccl-13.3.tar.xz" "$carry/cuda133/cccl-13.3.tar.xz"
fi
[ -f "$carry/ray-site.tar.xz" ] || bench/multi_gpu/carry_ray.sh "$carry/ray-site.tar.xz"
du -sh "$carry/compileiq" "$carry/cuda133/ptxas-13.3.gz" "$carry/cuda133/cccl-13.3.tar.xz" "$carry/ray-site.tar.xz"
