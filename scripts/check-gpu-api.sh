#!/usr/bin/env bash
# Check the GPU path without a GPU: install the project's [gpu,test] extras from the public
# index into a fresh temporary venv (about 5 GB) and run tests/unit/backend/test_gpu_api.py (marker
# gpu_api), which checks every cuDF / dask-cudf / dask-cuda / rmm / NVML name and keyword the
# GPU backend uses against the installed releases. Then dry-run the resolution of the three
# GPU extras from the public index (pip --isolated: no local wheel folders or mirrors).
#
#   scripts/check-gpu-api.sh            # temporary venv, removed afterwards
#   KEEP_VENV=/tmp/irs-gpu scripts/check-gpu-api.sh   # keep (or reuse) the venv there
#
# Not part of the default CI (size); run it on every change to the GPU path and record the
# releases it checked in docs/guide/backends-and-gpus.md ("GPU: install and checks").
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ -n "${KEEP_VENV:-}" ]; then
  VENV=$KEEP_VENV
else
  VENV=$(mktemp -d "${TMPDIR:-/tmp}/irs-gpu-api.XXXXXX")
fi
# the project is installed from a copy, so that no build/ or egg-info lands in the checkout
SRC=$(mktemp -d "${TMPDIR:-/tmp}/irs-gpu-src.XXXXXX")
trap 'rm -rf "$SRC"; [ -n "${KEEP_VENV:-}" ] || rm -rf "$VENV"' EXIT
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$SRC"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip --isolated install -q --upgrade pip
  "$VENV/bin/python" -m pip --isolated install -q "$SRC[gpu,test]"
fi
"$VENV/bin/python" -m pip list 2>/dev/null | grep -Ei '^(cudf|dask-cudf|dask-cuda|rmm|pylibcudf|nvidia-ml-py|dask|distributed|pandas|pyarrow)(-cu1[23])? ' || true
# the installed project is replaced by this checkout (PYTHONPATH first) so edits are checked
PYTHONPATH=$PWD "$VENV/bin/python" -m pytest -p no:randomly -o addopts="" -m gpu_api \
  tests/unit/backend/test_gpu_api.py -q -rs
for extras in gpu gpu,torch gpu,test,torchrec; do
  "$VENV/bin/python" -m pip --isolated install -q --dry-run --ignore-installed \
    "$SRC[$extras]" >/dev/null
  echo "resolves from the public index: .[$extras]"
done
