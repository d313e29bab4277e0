"""``irs run`` reports the lookups that went out of vocabulary on the data it applied the
workflow to, one line per column over ``--oov-budget``."""

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(7)
    pd.DataFrame({"a": rng.choice(list("abcd"), 1000), "b": rng.choice(list("xyz"), 1000)}
                 ).to_parquet(tmp_path / "fit.parquet")
    day = pd.DataFrame({"a": rng.choice(list("abcdefgh"), 800),  # half unseen
                        "b": rng.choice([*"xyz", None], 800)})
    day.to_parquet(tmp_path / "day.parquet")
    irs.Workflow(["a", "b"] >> ops.Categorify()).fit(irs.Dataset(str(tmp_path / "fit.parquet"))
                                                     ).save(tmp_path / "wf")
    return tmp_path, day


def _run(tmp_path, *extra):
    return cli.main(["run", "--workflow", str(tmp_path / "wf"), "--input",
                     str(tmp_path / "day.parquet"), "--output", str(tmp_path / "out"),
                     "--local", "--quiet", "--overwrite", *extra])


def test_a_column_over_the_budget_gets_its_line(saved, capsys):
    tmp_path, day = saved
    assert _run(tmp_path) == 0
    out = capsys.readouterr().out
    lost = int((~day["a"].isin(list("abcd"))).sum())
    assert f"a: {lost / 800:.2%} of its 800 non-null lookups ({lost:,})" in out
    assert "1 of 2 Categorify columns over the 1.00% budget" in out
    assert "\n  b:" not in out  # b's values were all seen in the fit


def test_within_the_budget_one_line(saved, capsys):
    tmp_path, _ = saved
    assert _run(tmp_path, "--oov-budget", "90%") == 0
    assert "every one of the 2 Categorify columns within the 90.00% budget (most: a," \
        in capsys.readouterr().out


@pytest.mark.parametrize("value", ["2", "-0.1", "nan", "lots"])
def test_a_bad_budget_is_refused_before_anything_runs(saved, capsys, value):
    tmp_path, _ = saved
    with pytest.raises(SystemExit) as stop:
        _run(tmp_path, "--oov-budget", value)
    assert stop.value.code == 2 and "--oov-budget" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
