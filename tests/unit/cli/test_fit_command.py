"""``irs fit``: a workflow saved before its fit (the Studio's Save) fitted from the command
line, then applied with ``irs run``; ``irs run`` and ``irs update`` name ``irs fit`` for an
unfitted folder, before any cluster starts."""

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli


@pytest.fixture
def unfitted(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "item": rng.choice(["a", "b", "c", "d", None], size=400, p=[.4, .3, .15, .05, .1]),
        "price": rng.gamma(2.0, 3.0, size=400),
        "label": rng.integers(0, 2, size=400),
    })
    frame.to_parquet(tmp_path / "data.parquet", index=False)
    workflow = irs.Workflow((["item"] >> ops.Categorify(freq_threshold=30))
                            + (["price"] >> ops.Normalize()) + ["label"])
    workflow.save(tmp_path / "unfitted")
    return tmp_path / "unfitted", tmp_path / "data.parquet", frame


def test_fit_then_run_gives_the_api_s_output(tmp_path, unfitted, capsys):
    folder, data, frame = unfitted
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert cli.main(["fit", "--workflow", str(folder), "--input", str(data),
                     "--output", str(tmp_path / "fitted"), "--local", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"Fitted {folder} on 400 rows" in printed
    assert cli.main(["run", "--workflow", str(tmp_path / "fitted"), "--input", str(data),
                     "--output", str(tmp_path / "out"), "--local", "--quiet"]) == 0
    out = pq.read_table(tmp_path / "out").to_pandas()

    # independent expectation: ids by descending count from 3 (0 pad, 1 null, 2 rare),
    # values seen fewer than 30 times go to 2; z-score with the population std
    counts = frame["item"].value_counts()
    kept = counts[counts >= 30].sort_index().sort_values(ascending=False, kind="stable")
    ids = {value: 3 + i for i, value in enumerate(kept.index)}
    expected = [1 if pd.isna(v) else ids.get(v, 2) for v in frame["item"]]
    assert out["item"].tolist() == expected
    z = (frame["price"] - frame["price"].mean()) / frame["price"].std(ddof=0)
    np.testing.assert_allclose(out["price"], z, rtol=1e-5, atol=1e-6)
    line = f"  item: {max(expected) + 1:,} embedding rows"
    assert line in printed or line in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # only read


@pytest.mark.parametrize("command", ["run", "update"])
def test_an_unfitted_folder_names_irs_fit(tmp_path, unfitted, capsys, command):
    folder, data, _ = unfitted
    code = cli.main([command, "--workflow", str(folder), "--input", str(data), "--output",
                     str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_ERROR
    assert "was saved before it was fitted" in err
    assert f"irs fit --workflow {folder}" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_fit_refuses_its_output_over_the_workflow_folder(tmp_path, unfitted, capsys):
    folder, data, _ = unfitted
    before = sorted(p.name for p in folder.iterdir())
    code = cli.main(["fit", "--workflow", str(folder), "--input", str(data), "--output",
                     str(folder), "--overwrite", "--local"])
    assert code == cli.EXIT_ERROR and "workflow folder" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == before
