"""`irs run` and `irs update` read raw Criteo day files with `--input-format criteo`, as
`irs.datasets.read_criteo` reads them in Python, and without it name that option as the fix."""

from __future__ import annotations

import gzip
import os
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli
from interactive_recsys.datasets import CRITEO_COLUMNS, read_criteo

#: Categorical columns the test workflow encodes (few, to keep it quick), and its counts.
CATS = ["C1", "C2", "C7", "C26"]
CONTS = ["I1", "I5"]


def criteo_lines(rows: int, seed: int) -> list[str]:
    """Raw Criteo lines: a 0/1 label, 13 counts and 26 hex ids, about a fifth of the counts
    and a tenth of the ids empty (missing)."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(rows):
        fields = [str(rng.integers(0, 2))]
        fields += ["" if rng.random() < 0.2 else str(rng.integers(-1, 60)) for _ in range(13)]
        ids = [int(rng.integers(0, 4 + 3 * j)) * 2654435761 % 2**32 for j in range(26)]
        fields += ["" if rng.random() < 0.1 else f"{i:08x}" for i in ids]
        lines.append("\t".join(fields))
    return lines


def raw_frame(paths: list[str]) -> pd.DataFrame:
    """The TSV as pandas reads it by hand: every field a string, an empty field None."""
    frames = [pd.read_csv(p, sep="\t", header=None, names=CRITEO_COLUMNS, dtype=str,
                          keep_default_na=False, compression="infer") for p in paths]
    return pd.concat(frames, ignore_index=True).replace("", None)


@pytest.fixture
def days(tmp_path):
    """A folder of two gzipped day files (400 and 300 rows) and a plain copy of day 0."""
    folder = tmp_path / "criteo"
    folder.mkdir()
    for day, rows in ((0, 400), (1, 300)):
        with gzip.open(folder / f"day_{day}.gz", "wt") as f:
            f.write("\n".join(criteo_lines(rows, seed=day)) + "\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    with gzip.open(folder / "day_0.gz", "rt") as src, open(plain / "day_0", "w") as dst:
        shutil.copyfileobj(src, dst)
    return folder, plain / "day_0"


def small_workflow(root) -> irs.Workflow:
    graph = CATS >> ops.Categorify()
    graph = graph + (CONTS >> ops.FillMissing(0)) + ["label"]
    return irs.Workflow(graph, artifacts_dir=str(root / "artifacts"))


def saved_workflow(tmp_path, data) -> str:
    wf = small_workflow(tmp_path)
    wf.fit(data)
    wf.save(tmp_path / "wf")
    return str(tmp_path / "wf")


def irs_main(*args: str) -> int:
    return cli.main([*args, "--quiet"])


@pytest.mark.parametrize("cluster", [["--local"], ["--workers", "1"]])
def test_run_reads_a_folder_of_day_files_as_read_criteo_does(tmp_path, days, cluster):
    folder, _ = days
    files = [str(folder / "day_0.gz"), str(folder / "day_1.gz")]
    workflow = saved_workflow(tmp_path, read_criteo(files))
    assert irs_main("run", "--workflow", workflow, "--input", str(folder), "--input-format",
                    "criteo", "--output", str(tmp_path / "out"), *cluster) == 0

    got = pq.read_table(tmp_path / "out")
    in_python = irs.Workflow.load(workflow).transform(read_criteo(files)).to_parquet(
        tmp_path / "py")
    assert in_python["num_rows"] == got.num_rows == 700
    assert got.equals(pq.read_table(tmp_path / "py"))

    # what the output holds, against the raw text read with pandas
    out, raw = got.to_pandas(), raw_frame(files)
    assert out["label"].tolist() == raw["label"].astype(int).tolist()
    for name in CONTS:  # FillMissing(0): the counts, 0 where the field was empty
        assert out[name].tolist() == raw[name].fillna("0").astype(int).tolist()
    for name in CATS:  # Categorify fitted on these rows: one id per hex value, null apart
        pairs = pd.DataFrame({"raw": raw[name].fillna("<null>"), "id": out[name]})
        assert raw[name].isna().any() and raw[name].nunique() > 3
        assert pairs.groupby("raw")["id"].nunique().eq(1).all(), name
        assert pairs.groupby("id")["raw"].nunique().eq(1).all(), name


def test_run_reads_one_plain_day_file(tmp_path, days):
    folder, plain = days
    workflow = saved_workflow(tmp_path, read_criteo(str(folder / "day_*.gz")))
    assert irs_main("run", "--workflow", workflow, "--input", str(plain), "--input-format",
                    "criteo", "--output", str(tmp_path / "out"), "--local") == 0
    got = pq.read_table(tmp_path / "out")
    irs.Workflow.load(workflow).transform(read_criteo(str(plain))).to_parquet(tmp_path / "py")
    assert got.num_rows == 400 and got.equals(pq.read_table(tmp_path / "py"))
    raw = raw_frame([str(plain)])
    assert got.to_pandas()["label"].tolist() == raw["label"].astype(int).tolist()
    assert got.to_pandas()["I1"].tolist() == raw["I1"].fillna("0").astype(int).tolist()


def test_raw_day_files_without_the_option_name_it(tmp_path, days, capsys):
    folder, plain = days
    workflow = saved_workflow(tmp_path, read_criteo(str(plain)))
    for command in ("run", "update"):
        for source in (str(plain), str(folder / "day_0.gz")):
            assert irs_main(command, "--workflow", workflow, "--input", source, "--output",
                            str(tmp_path / "out"), "--local") == 2
            err = capsys.readouterr().err
            assert "looks like raw Criteo data" in err and os.path.basename(source) in err
            assert "pass --input-format criteo" in err and "Traceback" not in err
        # a folder of day_N files has no parquet/csv file: the option is named too
        assert irs_main(command, "--workflow", workflow, "--input", str(folder), "--output",
                        str(tmp_path / "out"), "--local") == 2
        err = capsys.readouterr().err
        assert "'day_0.gz' is raw Criteo data: pass --input-format criteo" in err
    assert not (tmp_path / "out").exists()
    # a folder of other files gets no Criteo advice
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.md").write_text("hello\n")
    assert irs_main("run", "--workflow", workflow, "--input", str(other), "--output",
                    str(tmp_path / "out"), "--local") == 2
    assert "--input-format criteo" not in capsys.readouterr().err


def test_a_folder_of_plain_and_gzipped_days_is_refused_before_a_read(tmp_path, days, capsys):
    folder, plain = days
    workflow = saved_workflow(tmp_path, read_criteo(str(plain)))
    shutil.copy(plain, folder / "day_2")
    assert irs_main("run", "--workflow", workflow, "--input", str(folder), "--input-format",
                    "criteo", "--output", str(tmp_path / "out"), "--local") == 2
    err = capsys.readouterr().err
    assert "mixes gzip-compressed and plain" in err and "day_2' is plain" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_update_with_a_new_day_matches_python_and_keeps_ids(tmp_path, days, capsys):
    folder, _ = days
    day0, day1 = str(folder / "day_0.gz"), str(folder / "day_1.gz")
    workflow = saved_workflow(tmp_path, read_criteo(day0))
    assert irs_main("update", "--workflow", workflow, "--input", day1, "--input-format",
                    "criteo", "--output", str(tmp_path / "wf2"), "--local") == 0
    assert f"Updated {workflow} with the file {day1!r}" in capsys.readouterr().out
    irs.Workflow.load(workflow).update(read_criteo(day1)).save(tmp_path / "wf2-py")

    both = read_criteo([day0, day1])
    by_cli = irs.Workflow.load(tmp_path / "wf2").transform(both).compute()
    by_python = irs.Workflow.load(tmp_path / "wf2-py").transform(both).compute()
    pd.testing.assert_frame_equal(by_cli, by_python)
    before = irs.Workflow.load(workflow).transform(read_criteo(day0)).compute()
    raw = raw_frame([day0, day1])
    for name in CATS:
        # the ids day 0 had are kept, and every value of day 1 now has an id of its own
        assert by_cli[name].iloc[:400].tolist() == before[name].tolist(), name
        pairs = pd.DataFrame({"raw": raw[name].fillna("<null>"), "id": by_cli[name]})
        assert pairs.groupby("raw")["id"].nunique().eq(1).all(), name
        assert pairs.groupby("id")["raw"].nunique().eq(1).all(), name
    new_values = set(raw["C26"].iloc[400:].dropna()) - set(raw["C26"].iloc[:400].dropna())
    assert new_values, "day 1 should bring values day 0 did not have"


def test_kaggle_train_txt_folder_leaves_test_txt_out(tmp_path):
    folder = tmp_path / "kaggle"
    folder.mkdir()
    (folder / "train.txt").write_text("\n".join(criteo_lines(120, seed=5)) + "\n")
    # Kaggle's test.txt has no label column: it cannot be read as labelled days
    (folder / "test.txt").write_text("\n".join(line.split("\t", 1)[1]
                                               for line in criteo_lines(50, seed=6)) + "\n")
    workflow = saved_workflow(tmp_path, read_criteo(str(folder / "train.txt")))
    assert irs_main("run", "--workflow", workflow, "--input", str(folder), "--input-format",
                    "criteo", "--output", str(tmp_path / "out"), "--local") == 0
    got = pq.read_table(tmp_path / "out").to_pandas()
    assert len(got) == 120
    assert got["label"].tolist() == raw_frame([str(folder / "train.txt")])["label"].astype(
        int).tolist()
    assert sorted(got.columns) == sorted([*CATS, *CONTS, "label"])
