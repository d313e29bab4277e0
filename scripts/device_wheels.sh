#!/usr/bin/env bash
# Download the wheels that scripts/device_check.sh installs on the GPU machine, into .whl/
# (git-ignored; carried to that machine with the working tree). That machine has Python 3.12,
# PyTorch, pandas, pyarrow, numpy, fsspec and the small pure-Python libraries Dask shares with
# others (cloudpickle, toolz, msgpack, psutil, pyyaml, click, jinja2, packaging,
# sortedcontainers), but no Dask and no network. `import interactive_recsys` needs Dask and
# distributed; these are they and their remaining dependencies (about 4 MB), pinned to the
# versions the project is tested with (pyproject: dask[dataframe,distributed]>=2026.7.1).
#
#   scripts/device_wheels.sh          # once, on a machine with network access
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .whl && mkdir -p .whl
WHEELS=(
  dask==2026.8.0
  distributed==2026.8.0
  partd==1.4.2
  locket==1.0.0
  tblib==3.2.2
  zict==3.0.0
  tornado==6.6.1
)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl "${WHEELS[@]}"
ls -l .whl
du -sh .whl
