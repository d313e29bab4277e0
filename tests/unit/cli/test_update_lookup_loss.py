"""``irs update`` reports the new data's lookups that still go out of vocabulary after the
update, one line per column over ``--oov-budget``, as ``irs run`` does for its output."""

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli

THRESHOLD = 3


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(11)
    fit = pd.DataFrame({"a": rng.choice(list("abcd"), 400), "b": rng.choice(list("xyz"), 400)})
    fit.to_parquet(tmp_path / "fit.parquet")
    # a: new values, some frequent enough for an id of their own, some rare (one row each)
    rare = [f"rare{i}" for i in range(40)]
    day = pd.DataFrame({"a": [*rng.choice(list("abcdef"), 560), *rare],
                        "b": rng.choice([*"xyz", None], 600)})
    day.to_parquet(tmp_path / "day.parquet")
    irs.Workflow(["a", "b"] >> ops.Categorify(freq_threshold=THRESHOLD)).fit(
        irs.Dataset(str(tmp_path / "fit.parquet"))).save(tmp_path / "wf")
    return tmp_path, fit, day


def _update(tmp_path, *extra):
    return cli.main(["update", "--workflow", str(tmp_path / "wf"), "--input",
                     str(tmp_path / "day.parquet"), "--output", str(tmp_path / "wf2"),
                     "--local", "--quiet", *extra])


def _lost(fit: pd.DataFrame, day: pd.DataFrame, column: str) -> tuple[int, int]:
    """pandas: the day's non-null rows whose value has fewer than THRESHOLD rows in the
    fit and the day together (the update's counts), and the day's non-null rows."""
    counts = pd.concat([fit[column], day[column]]).value_counts()
    values = day[column].dropna()
    return int((values.map(counts) < THRESHOLD).sum()), len(values)


def test_a_column_over_the_budget_gets_its_line(saved, capsys):
    tmp_path, fit, day = saved
    assert _update(tmp_path) == 0
    out = capsys.readouterr().out
    lost, lookups = _lost(fit, day, "a")
    assert lost == 40  # the rare values only: e and f reached the threshold with the day
    assert ("Lookups of the new data still out of vocabulary: 1 of 2 Categorify columns "
            "over the 1.00% budget") in out
    assert f"a: {lost / lookups:.2%} of its {lookups:,} non-null lookups ({lost:,})" in out
    assert "Lower the freq_threshold (or raise max_size)" in out
    assert "\n  b:" not in out.split("out of vocabulary:")[1]
    assert "b: vocabulary version 2, no new rows" in out  # not "0 new rows (ids 6..5)"
    # the same count as irs run of the updated workflow on the same day
    assert cli.main(["run", "--workflow", str(tmp_path / "wf2"), "--input",
                     str(tmp_path / "day.parquet"), "--output", str(tmp_path / "out"),
                     "--local", "--quiet"]) == 0
    assert f"a: {lost / lookups:.2%} of its {lookups:,}" in capsys.readouterr().out


def test_within_the_budget_one_line(saved, capsys):
    tmp_path, _, _ = saved
    assert _update(tmp_path, "--oov-budget", "50%") == 0
    assert ("Lookups of the new data still out of vocabulary: every one of the 2 Categorify "
            "columns within the 50.00% budget (most: a,") in capsys.readouterr().out


def test_a_bad_budget_is_refused_before_anything_runs(saved, capsys):
    tmp_path, _, _ = saved
    with pytest.raises(SystemExit) as stop:
        _update(tmp_path, "--oov-budget", "1.5")
    assert stop.value.code == 2 and "--oov-budget" in capsys.readouterr().err
    assert not (tmp_path / "wf2").exists()
