#!/usr/bin/env bash
# Packs Ray (the version in .venv) and the one thing it needs that a CUDA image with PyTorch lacks
# (jsonschema and its helpers) for a GPU machine that has no Ray and cannot reach a package index,
# for tests/test_gpu.py's Ray test:
#
#   bench/multi_gpu/carry_ray.sh [OUT=.carry/ray-site.tar.xz] [PYTHON_VERSION=3.12]
#
# then, on the GPU machine (from the checkout's root):
#
#   mkdir -p /tmp/site && tar xJf .carry/ray-site.tar.xz -C /tmp/site
#   PYTHONPATH=/tmp/site python3 -m pytest tests/test_gpu.py
#
# The wheel is 79 MB; what a local cluster does not use (Java jars, the dashboard's web client, RLlib,
# Data, Serve, Train, Tune, LLM, tests) is left out and the rest xz-compressed: ~28 MB, under the
# 64 MiB a device call may carry.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.carry/ray-site.tar.xz}
python_version=${2:-3.12}
ray_version=$(.venv/bin/python -c 'import ray; print(ray.__version__)')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$work/wheels" "ray==$ray_version" jsonschema jsonschema-specifications referencing rpds-py
mkdir -p "$work/site"
# Unpacked keeping each file's mode (python -m zipfile drops it: Ray's raylet and gcs_server must stay executable).
python3 - "$work/site" "$work"/wheels/*.whl <<'PY'
import os
import sys
import zipfile

for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            path = archive.extract(info, sys.argv[1])
            if info.external_attr >> 16:
                os.chmod(path, (info.external_attr >> 16) & 0o777)
PY
(cd "$work/site/ray" && rm -rf jars dashboard/client rllib data serve train tune llm)
find "$work/site" -type d -name tests -prune -exec rm -rf {} +
mkdir -p "$(dirname "$out")"
tar cf - -C "$work/site" . | xz -6 -T0 > "$out"
echo "carry_ray: Ray $ray_version for Python $python_version in $out ($(du -h "$out" | cut -f1))"
