"""Regenerate the test modules of this folder from NVIDIA-Merlin/NVTabular (Apache-2.0).

``python tests/vendored/nvtabular/ops/port.py /path/to/NVTabular`` copies ``tests/unit/ops/*.py``
at :data:`COMMIT` with only their import lines replaced (:data:`IMPORTS`, exact lines), and
a header naming the source. The fixtures they use (``df``, ``dataset``, ``engine``...)
come from this folder's ``conftest.py``; the tests it skips are listed there with the
reason (``EXCLUDED``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COMMIT = "08e06339fbb8d5ccc20a6bc99f8aa350c82c6204"
NVT = "interactive_recsys.compat.nvtabular"
MERLIN = "tests.vendored.nvtabular.ops._merlin"
IMPORTS = {
    "import nvtabular as nvt": f"import {NVT} as nvt",
    "import nvtabular": f"import {NVT} as nvtabular",
    "from nvtabular import ColumnSelector, ops": f"from {NVT} import ColumnSelector, ops",
    "from nvtabular import ops": f"from {NVT} import ops",
    "from nvtabular import Workflow": f"from {NVT} import Workflow",
    "from nvtabular import ColumnSelector, Schema, Workflow, ops":
        f"from {NVT} import ColumnSelector, Schema, Workflow, ops",
    "from nvtabular import ColumnSchema, ColumnSelector, Schema, ops":
        f"from {NVT} import ColumnSchema, ColumnSelector, Schema, ops",
    "from nvtabular.ops import ValueCount": f"from {NVT}.ops import ValueCount",
    "from nvtabular.ops.categorify import get_embedding_sizes":
        f"from {NVT}.ops import get_embedding_sizes",
    "from nvtabular.ops.column_similarity import ColumnSimilarity":
        f"from {NVT}.column_similarity import ColumnSimilarity",
    "from merlin.io import Dataset": f"from {NVT}.io import Dataset",
    "from merlin.schema import ColumnSchema": f"from {NVT} import ColumnSchema",
    "from merlin.schema import Tags, TagSet": f"from {NVT}.tags import Tags, TagSet",
    "from merlin.core import dispatch": f"from {MERLIN} import dispatch",
    "import merlin.dtypes as md": f"from {MERLIN} import dtypes as md",
}
PREFIXES = {  # import lines starting so: the names come from the test shim
    "from merlin.core.dispatch import ": f"from {MERLIN}.dispatch import ",
    "from merlin.core.compat import ": f"from {MERLIN}.compat import ",
    "from tests.conftest import ": "from tests.vendored.nvtabular.ops.helpers import ",
}


def port(text: str) -> str:
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        new = IMPORTS.get(stripped)
        if new is None:
            for old, prefix in PREFIXES.items():
                if stripped.startswith(old):
                    new = prefix + stripped[len(old):]
        out.append(line if new is None else line[:len(line) - len(line.lstrip())] + new)
    return "\n".join(out) + "\n"


def main(repo: str) -> None:
    here = Path(__file__).parent
    names = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", COMMIT,
                            "tests/unit/ops/"], check=True, capture_output=True,
                           text=True).stdout.split()
    for path in names:
        if not path.endswith(".py") or not Path(path).name.startswith("test_"):
            continue
        text = subprocess.run(["git", "-C", repo, "show", f"{COMMIT}:{path}"], check=True,
                              capture_output=True, text=True).stdout
        header = (f"# Ported from NVIDIA-Merlin/NVTabular {path} at commit {COMMIT}\n"
                  "# (Apache License 2.0, copyright NVIDIA Corporation, notice below): only\n"
                  "# the import lines are changed, by tests/vendored/nvtabular/ops/port.py.\n"
                  "# ruff: noqa\n")
        (here / Path(path).name).write_text(header + port(text))


if __name__ == "__main__":
    main(sys.argv[1])
