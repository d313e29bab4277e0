"""Suggest, the column list's model, the step list's pass-through items and Run's output —
plain Python, checked against pandas and hand-written workflows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder_model import BuilderModel
from interactive_recsys.ui.column_list import ColumnChoice
from interactive_recsys.ui.column_profile import numeric_stats, profile_table
from tests.conftest import assert_frames_equal

ROWS = 4000


def suggest_frame(rows: int = ROWS, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    counts = np.floor(rng.pareto(1.5, rows) * 3)                       # heavy tail, >= 0
    sentinel = np.floor(rng.pareto(1.5, rows) * 5)
    sentinel[rng.random(rows) < 0.1] = -1                              # -1 = "unknown"
    frame = pd.DataFrame({
        "label": rng.integers(0, 2, rows),
        "counts": pd.array(counts.astype("int64"), dtype="int64[pyarrow]"),
        "sentinel": sentinel.astype("int64"),
        "gauss": rng.normal(0, 1, rows),                               # real negatives
        "flat": rng.integers(0, 10, rows).astype("int64"),             # not skewed
        "city": [f"c{v}" for v in rng.integers(0, 20, rows)],          # no tail
        "user": [f"u{v}" for v in rng.integers(0, rows * 5, rows)],    # mostly seen once
        "tags": [[f"t{v}" for v in rng.integers(0, 6, rng.integers(1, 4))] for _ in range(rows)],
    })
    frame.loc[rng.random(rows) < 0.2, "counts"] = None
    return frame


def expected_steps(frame: pd.DataFrame, name: str, scale: float) -> list[str]:
    """The module's rules, decided here from pandas' own statistics."""
    s = frame[name]
    if name == "label":
        return ["AddTags"]
    if name == "tags":
        return ["Categorify", "ValueCount"]
    if s.dtype == object or str(s.dtype).startswith("str"):
        return ["Categorify"]
    values = s.dropna().astype(float)
    negatives = values[values < 0]
    count = negatives.nunique() <= 3 and len(negatives) < len(values) / 2
    steps = ["FillMissing"]
    if count:
        steps.append("Clip")
        if values.skew() > 1:
            steps.append("LogOp")
    return [*steps, "Normalize"]


def test_numeric_stats_match_pandas():
    s = pd.Series([3.0, -1.0, None, 10.0, 0.0, -1.0, 100.0])
    stats = numeric_stats(pa.array(s, from_pandas=True))
    clean = s.dropna()
    assert stats["minimum"] == clean.min() and stats["negative_distinct"] == 1
    assert stats["negative_fraction"] == pytest.approx((clean < 0).mean())
    n = len(clean)  # population skewness from pandas' bias-corrected one
    assert stats["skew"] == pytest.approx(clean.skew() * (n - 2) / np.sqrt(n * (n - 1)))


@pytest.mark.parametrize("sample_rows", [ROWS, ROWS // 4])
def test_suggest_follows_the_rules_on_every_column(tmp_path, sample_rows):
    frame = suggest_frame()
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    model = BuilderModel(str(path), sample_rows=sample_rows)
    branches = model.suggest()
    steps = {c: [s.op for s in b.steps] for b in branches for c in b.columns}
    sample = frame.head(sample_rows)
    for name in frame.columns:
        assert steps[name] == expected_steps(sample, name, ROWS / sample_rows), name
    params = {c: b.steps[0].params for b in branches for c in b.columns}
    for name in ("city", "user"):  # the tail: more than half the sampled values seen once
        counts = sample[name].value_counts()
        tail = (counts == 1).sum() * 2 > len(counts)
        want = max(2, round(ROWS / sample_rows)) if tail else 0
        assert params[name].get("freq_threshold", 0) == want, name
    assert params["user"]["freq_threshold"] >= 2 and "freq_threshold" not in params["city"]
    assert params["sentinel"] == {} and [s.params for b in branches if "sentinel" in b.columns
                                         for s in b.steps if s.op == "Clip"] == [{"min_value": 0}]
    # grouped: one branch per kind of chain; undoable
    assert sum(len(b.columns) for b in branches) == len(frame.columns)
    assert model.can_undo


def test_suggested_workflow_equals_the_hand_written_one():
    frame = suggest_frame(600).drop(columns=["user", "tags"])
    model = BuilderModel(frame)
    model.suggest()
    by_hand = irs.Workflow(
        (["city"] >> ops.Categorify())
        + (["counts", "sentinel"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp()
           >> ops.Normalize())
        + (["gauss"] >> ops.FillMissing() >> ops.Normalize())
        + (["flat"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.Normalize())
        + (["label"] >> ops.AddTags(tags=["target"])))
    suggested = model.to_workflow()
    out = suggested.fit_transform(frame)
    assert_frames_equal(out[sorted(out.columns)], by_hand.fit_transform(frame)[sorted(out.columns)])
    assert "target" in suggested.output_schema["label"].tags
    assert model.output_schema().names == suggested.output_schema.names


def test_suggest_on_criteo_gives_the_standard_workflow():
    path = irs.datasets.synthetic_criteo(rows=20_000, seed=1)
    model = BuilderModel(str(path))
    branches = model.suggest()
    chains = {c: [s.op for s in b.steps] for b in branches for c in b.columns}
    assert all(chains[f"C{i}"] == ["Categorify"] for i in range(1, 27))
    assert all(chains[f"I{i}"] == ["FillMissing", "Clip", "LogOp", "Normalize"]
               for i in range(1, 14))  # I2's -1..-3 are sentinels: clipped too
    assert chains["label"] == ["AddTags"]


# ---- the column list's model ----------------------------------------------------------------
def test_column_choice_clicks_ranges_roles_and_filter():
    frame = suggest_frame(50)
    choice = ColumnChoice(profile_table(pa.Table.from_pandas(frame, preserve_index=False)))
    seen = []
    choice.observe(lambda: seen.append(choice.selected))
    choice.click("counts")
    choice.click("city", shift=True)
    assert choice.selected == ["counts", "sentinel", "gauss", "flat", "city"]
    choice.click("gauss", shift=True)  # unticks city..gauss
    assert choice.selected == ["counts", "sentinel"]
    assert choice.summary() == "2 of 8 selected" and len(seen) == 3
    choice.pattern = "S"  # contains "s" (any case)
    assert choice.shown == ["counts", "sentinel", "gauss", "user", "tags"]
    assert choice.summary() == "2 of 8 selected · 5 shown"
    choice.click("tags", shift=True)  # the range runs over shown columns only
    assert choice.selected == ["counts", "sentinel", "gauss", "user", "tags"]
    assert choice.select_role("continuous") == ["counts", "sentinel", "gauss", "flat"]
    assert choice.role_counts() == {"categorical": 2, "continuous": 4, "list": 1, "label": 1}
    choice.pattern = "c*, label"
    assert choice.select_shown() == ["label", "counts", "city"]
    with pytest.raises(irs.ParameterError, match="'nope' is not in the dataset"):
        choice.select(["nope"])
    with pytest.raises(irs.ParameterError, match="Unknown role 'x'"):
        choice.select_role("x")


# ---- step list items, removal, output ------------------------------------------------------
def test_pass_through_branches_are_items_that_can_be_removed():
    frame = suggest_frame(50)
    model = BuilderModel(frame)
    model.add_step(["city"], "Categorify")
    model.new_branch(["label"])
    assert model.items() == [("branch 1 · step 1: ['city'] >> Categorify()", (0, 0)),
                             ("branch 2 · pass through: ['label']", (1, -1))]
    assert model.selected_item == (1, -1)
    model.select(0, 0)
    assert model.selected_item == (0, 0)
    model.select(1, -1)
    assert model.selected_item == (1, -1) and model.remove_selected() == \
        "the pass-through branch 2"
    assert model.output_schema().names == ["city"] and model.selected_item is None
    with pytest.raises(irs.ParameterError, match="No step is selected"):
        model.remove_selected()
    model.select(0, 0)
    assert model.remove_selected() == "step 1 of branch 1"
    # a branch without steps passes its columns through: it is listed as such
    assert model.items() == [("branch 1 · pass through: ['city']", (0, -1))]
    assert model.remove_selected() == "the pass-through branch 1"
    assert model.items() == []


def test_default_output_is_next_to_the_input(tmp_path):
    data = tmp_path / "clicks"
    data.mkdir()
    suggest_frame(20).to_parquet(data / "part-0.parquet")
    assert BuilderModel(str(data)).default_output() == str(data) + "-processed"
    assert BuilderModel(str(data) + "/").default_output() == str(data) + "-processed"
    assert BuilderModel(irs.Dataset(str(data))).default_output() == str(data) + "-processed"
    assert BuilderModel(str(data / "part-0.parquet")).default_output() == \
        str(data / "part-0-processed")
    assert BuilderModel(suggest_frame(20)).default_output() is None


def test_run_writes_the_output_and_refuses_to_replace_it_unasked(tmp_path):
    frame = suggest_frame(300).drop(columns=["tags"])
    model = BuilderModel(frame)
    model.suggest()
    out = tmp_path / "out"
    job = model.run(out)
    job.result(timeout=120)
    model.wait_run(30)
    written = pd.read_parquet(out)
    expected = model.to_workflow().fit_transform(frame)
    assert_frames_equal(written.reset_index(drop=True), expected)
    assert (out / "_SUCCESS").exists()
    with pytest.raises(irs.DatasetError, match="already exists.*replace"):
        model.run(out)
    model.run(out, overwrite=True).result(timeout=120)
    model.wait_run(30)
    with pytest.raises(irs.ParameterError, match="output path is empty"):
        model.run("  ")
