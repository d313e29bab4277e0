"""Regenerate the cell files of this folder from NVIDIA-Merlin/NVTabular (Apache-2.0).

``python tests/vendored/nvtabular/examples/extract.py /path/to/NVTabular`` (a git checkout) writes
one ``<name>.py`` per notebook: its code cells unchanged, each after a ``# %% cell N``
line (N: the cell's index in the notebook), the cells the test leaves out listed in the
header with the reason. The test (``tests/vendored/nvtabular/test_nvtabular_examples.py``) changes only the
imports, as listed there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: name -> (commit, path, {left-out cell: reason}); the movielens and criteo ETL notebooks
#: were moved out of NVTabular in 0f3a9b8d7 (to NVIDIA-Merlin/Merlin): read before it.
NOTEBOOKS = {
    "getting_started": ("08e06339f", "examples/01-Getting-started.ipynb", {
        3: "downloads MovieLens-1M: the test writes data of the same schema instead",
        5: "a shell command (ls)", 8: "display only", 25: "a shell command (ls)", 32: "trains a TensorFlow model",
        33: "empty"}),
    "advanced_workflow": ("08e06339f", "examples/02-Advanced-NVTabular-workflow.ipynb", {
        3: "downloads MovieLens-1M: the test writes data of the same schema instead",
        7: "display only", 9: "display only", 21: "display only",
        43: "trains a TensorFlow model", 45: "trains a TensorFlow model"}),
    "running_on_cpu": ("08e06339f", "examples/03-Running-on-multiple-GPUs-or-on-CPU.ipynb", {
        3: "downloads MovieLens-1M: the test passes Datasets of the same schema instead",
        9: "sizes a GPU cluster with numba.cuda (GPU only; sets cluster = None without one)",
        11: "starts a dask_cuda LocalCUDACluster (GPU only; skipped there without GPUs)",
        18: "a shell command (nvidia-smi)"}),
    "movielens_etl": ("0f3a9b8d7^",
                      "examples/getting-started-movielens/02-ETL-with-NVTabular.ipynb", {}),
    "criteo_etl": ("0f3a9b8d7^", "examples/scaling-criteo/02-ETL-with-NVTabular.ipynb", {
        12: "starts a dask_cuda LocalCUDACluster on every GPU (GPU only); the test defines "
            "NUM_GPUS = [] and part_size from device_mem_size as this cell does"}),
}


def main(repo: str) -> None:
    here = Path(__file__).parent
    for name, (commit, path, left_out) in NOTEBOOKS.items():
        sha = subprocess.run(["git", "-C", repo, "rev-parse", commit], check=True,
                             capture_output=True, text=True).stdout.strip()
        raw = subprocess.run(["git", "-C", repo, "show", f"{sha}:{path}"], check=True,
                             capture_output=True, text=True).stdout
        cells = json.loads(raw)["cells"]
        lines = [f"# Code cells of NVIDIA-Merlin/NVTabular {path} at commit {sha},",
                 "# unchanged. Copyright NVIDIA Corporation, licensed under the Apache License,",
                 "# Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0); the notebook's own",
                 "# license cell (cell 0) is kept below. Regenerate with extract.py.",
                 "# Cells left out by the test:"]
        lines += [f"#   {i}: {why}" for i, why in sorted(left_out.items())] or ["#   none"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] != "code":
                continue
            lines.append(f"# %% cell {i}")
            lines.append("".join(cell["source"]).rstrip("\n"))
        (here / f"{name}.py.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
