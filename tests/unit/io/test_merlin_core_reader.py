"""Merlin's own Schema readers (merlin-core 23.08) read the ``.merlin/schema.pbtxt`` and
``.merlin/schema.json`` we write, and ``merlin.io.Dataset`` picks the schema up by itself.

merlin-core 23.08 needs pandas < 1.6, so it lives in a venv of its own: set
``IRS_MERLIN_VENV`` to it, or run ``scripts/check-merlin-schema.sh``, which builds that venv
once (cached) and runs this file. Without ``IRS_MERLIN_VENV`` the test is skipped; the
always-running check of the same file is ``tests/unit/io/test_exports_merlin_schema.py``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops

VENV = os.environ.get("IRS_MERLIN_VENV")
SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "scripts" / "merlin_read_schema.py"

pytestmark = pytest.mark.skipif(not VENV, reason="IRS_MERLIN_VENV is not set (run "
                                                 "scripts/check-merlin-schema.sh)")


def test_merlin_core_reads_our_schema_pbtxt(tmp_path):
    python = pathlib.Path(VENV) / "bin" / "python"
    assert python.exists(), f"IRS_MERLIN_VENV={VENV} has no bin/python"
    rng = np.random.default_rng(11)
    rows = 200
    df = pd.DataFrame({
        "user": rng.choice([f"u{k}" for k in range(17)], rows),
        "tags": pd.Series([list(rng.choice(list("abcde"), rng.integers(0, 4)))
                           for _ in range(rows)], dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "age": rng.integers(18, 70, rows).astype("float32"),
        "label": rng.integers(0, 2, rows),
    })
    ds = irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False),
                     tags={"label": ["target"], "user": ["user", "id"]})
    wf = irs.Workflow((["user", "tags"] >> ops.Categorify()) + (["age"] >> ops.Normalize())
                      + ["label"], artifacts_dir=str(tmp_path / "wf"))
    wf.fit_transform(ds).to_parquet(tmp_path / "out")
    done = subprocess.run([str(python), str(SCRIPT), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    schema = wf.output_schema
    assert [n for n in got if not n.startswith("__")] == schema.names
    for name in ("user", "tags"):
        card = schema[name].cardinality
        assert got[name]["int_domain"] == {"min": 0, "max": card - 1}
        assert got[name]["embedding_sizes"]["cardinality"] == card
        assert got[name]["dtype"] == "int64"
    assert got["user"]["tags"] == ["categorical", "id", "user"]
    assert got["tags"]["tags"] == ["categorical", "list"]
    assert got["tags"]["is_list"] and got["tags"]["is_ragged"]
    lengths = df["tags"].map(len)
    assert got["tags"]["value_count"] == {"min": int(lengths.min()), "max": int(lengths.max())}
    assert not got["user"]["is_list"]
    assert got["age"] == {**got["age"], "tags": ["continuous"], "dtype": "float32",
                          "int_domain": None}
    assert got["label"]["tags"] == ["target"] and got["label"]["dtype"] == "int64"
    # merlin.io.Dataset (what NVTabular and the Merlin dataloader open) takes the same tags
    assert got["__dataset__"]["user"] == ["categorical", "id", "user"]
    assert got["__dataset__"]["tags"] == ["categorical", "list"]
