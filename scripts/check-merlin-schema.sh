#!/usr/bin/env bash
# Check that Merlin's own Schema reader (merlin-core 23.08) reads the schema.pbtxt we write.
#
# merlin-core 23.08 cannot share a venv with this project (it needs pandas < 1.6), so it gets a
# venv of its own, built once and cached at $IRS_MERLIN_VENV (default ~/.cache/interactive-recsys/
# merlin-venv). The test tests/unit/io/test_merlin_core_reader.py then runs that venv's Python on our output.
#
# Usage: scripts/check-merlin-schema.sh            (run from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
export IRS_MERLIN_VENV="${IRS_MERLIN_VENV:-$HOME/.cache/interactive-recsys/merlin-venv}"
PY="${PYTHON:-python3.11}"
if [ ! -x "$IRS_MERLIN_VENV/bin/python" ] || ! "$IRS_MERLIN_VENV/bin/python" -c "import merlin.schema" 2>/dev/null; then
  echo "building the merlin-core 23.08 venv at $IRS_MERLIN_VENV"
  "$PY" -m venv "$IRS_MERLIN_VENV"
  # Versions that install together on Python 3.11 (see GUIDE: NVTabular 23.08 as a CPU baseline).
  "$IRS_MERLIN_VENV/bin/python" -m pip install -q merlin-core==23.8.0 dask-cuda==23.4.0 \
    dask==2023.3.2 distributed==2023.3.2.1 pandas==1.5.3 numpy==1.24.4 numba==0.57.1 \
    pyarrow==12.0.1 scipy==1.11.4 pynvml==11.4.1 npy-append-array==0.9.16
fi
"$IRS_MERLIN_VENV/bin/python" -c "import merlin.core, importlib.metadata as m; print('merlin-core', m.version('merlin-core'))"
PYTHONPATH="$PWD" "${IRS_PYTHON:-python}" -m pytest -p no:randomly -q tests/unit/io/test_merlin_core_reader.py "$@"
