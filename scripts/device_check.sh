#!/usr/bin/env bash
# The GPU device check: one command for a machine with a CUDA GPU and PyTorch but no Dask and
# no network (the wheels it lacks travel in .whl/, made by scripts/device_wheels.sh).
#
#   scripts/device_wheels.sh                      # once, where there is network
#   OUT=/some/folder scripts/device_check.sh      # on the GPU machine, from the repo root
#
# 1. installs .whl/*.whl into /tmp/site (no index, no dependencies);
# 2. runs the PyTorch-backed GPU tests (marker cuda: an epoch under
#    torch.cuda.set_sync_debug_mode("error"), the online transform equal to the offline
#    output, the hash kernels bit for bit) and the cuDF tests (marker gpu; they skip where
#    cuDF is missing);
# 3. runs the loader benchmark on the GPU (benchmarks/loader_online.py): samples/s of the
#    pre-processed loader, of the online transform and of the loader with no preprocessing;
# 4. prints PASS or FAIL. Files written to $OUT (default benchmarks/results):
#    loader-online-cuda.json, loader-online-cuda.md (copy them into benchmarks/results/),
#    device-check-pytest.txt, device-check-summary.txt.
#
# Settings: ROWS (default 4000000), REPEATS (9), BATCH (65536), DEVICE (cuda; DEVICE=cpu
# runs the same steps without a GPU, to check the script itself). Each step has a time
# limit (tests 200 s, benchmark 270 s): at most 8 minutes in all, about 3-4 on one H100 with
# 16 cores.
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD \
  || echo "device check: no wheels installed from .whl/ (run scripts/device_wheels.sh first?)"
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=${PYTHONPATH:-$PWD}
OUT=${OUT:-benchmarks/results}
ROWS=${ROWS:-4000000}
REPEATS=${REPEATS:-9}
BATCH=${BATCH:-65536}
DEVICE=${DEVICE:-cuda}
WORK=${WORK:-/tmp/irs-device-check}
mkdir -p "$OUT" "$WORK"
started=$(date +%s)
echo "== environment"
python3 - <<'PY'
import platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda",
      torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0))
import interactive_recsys, dask, distributed, pandas, pyarrow, numpy
print("dask", dask.__version__, "pandas", pandas.__version__, "pyarrow", pyarrow.__version__,
      "numpy", numpy.__version__)
PY
env_rc=$?

echo "== tests (pytest -m 'cuda or gpu')"
timeout 200 python3 -m pytest -o addopts="-p no:cacheprovider --import-mode=importlib" \
  -o timeout=180 -m "cuda or gpu" -q -rs tests/unit/loader/test_online_gpu.py tests/unit/backend/test_gpu.py \
  2>&1 | tee "$OUT/device-check-pytest.txt"
test_rc=${PIPESTATUS[0]}
passed=$(grep -Eo '[0-9]+ passed' "$OUT/device-check-pytest.txt" | tail -1 | cut -d' ' -f1)

echo "== benchmark (python -m benchmarks loader --online --device $DEVICE --rows $ROWS)"
timeout 270 python3 -m benchmarks loader --online --device "$DEVICE" --rows "$ROWS" \
  --repeats "$REPEATS" --batch-sizes "$BATCH" --out "$OUT" --work "$WORK"
bench_rc=$?

kind=${DEVICE%%:*}
python3 - "$OUT/loader-online-$kind.json" "$env_rc" "$test_rc" "${passed:-0}" "$bench_rc" \
  "$kind" "$(( $(date +%s) - started ))" <<'PY' | tee "$OUT/device-check-summary.txt"
import json, sys
path, env_rc, test_rc, passed, bench_rc, kind, seconds = sys.argv[1:]
problems = []
if env_rc != "0":
    problems.append("the environment check failed (imports)")
if test_rc != "0":
    problems.append(f"pytest exited with {test_rc}")
if kind == "cuda" and int(passed) == 0:
    problems.append("no cuda test ran (all skipped?)")
result = None
if bench_rc != "0":
    problems.append(f"the benchmark exited with {bench_rc}")
else:
    result = json.load(open(path))
    check = result["first_batch_check"]
    if not (check["ids_identical"] and check["labels_identical"] and check["nan_identical"]
            and check["max_ulp"] <= 1):
        problems.append(f"online and pre-processed batches differ: {check}")
print(f"device check: {seconds} s")
if result:
    print("device:", result["device"])
    for name, rate in result["samples_per_s"].items():
        print(f"  {name:<32} {rate:>14,.0f} samples/s")
    for name, ratio in result["ratios"].items():
        print(f"  {name:<32} {ratio:.3f}x")
    target = 0.95 if kind == "cuda" else 0.8
    met = result["ratios"]["online / pre-processed"] >= target
    print(f"  target online >= {target}x pre-processed: {'met' if met else 'NOT met'}")
print("PASS" if not problems else "FAIL: " + "; ".join(problems))
PY
grep -q '^PASS' "$OUT/device-check-summary.txt"
