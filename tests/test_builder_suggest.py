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
    for name in ("city", "user"):  # the threshold keeps 99% of the whole data's lookups
        counts = frame[name].value_counts()
        t = params[name].get("freq_threshold", 0)
        assert counts[counts < t].sum() <= 0.01 * counts.sum(), name
    assert "freq_threshold" not in params["city"]  # 20 values, all frequent: all kept
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


# ---- Suggest by effect: lookups kept, table size, memory budget ---------------------------------
#: (exponent, vocabulary) of the skewed columns: a wide long tail, mid-size tails, a steep head
SKEWED_COLUMNS = {"wide": (1.05, 10**9), "tail": (1.3, 50_000), "mid": (1.6, 5_000),
                  "head": (2.5, 300), "steep": (3.5, 40)}


def skewed_frame(rows: int, seed: int = 0) -> pd.DataFrame:
    """Power-law ids (``numpy.random.zipf``, folded into the vocabulary), 3% nulls each."""
    rng = np.random.default_rng(seed)
    frame = {}
    for name, (s, vocab) in SKEWED_COLUMNS.items():
        ids = (rng.zipf(s, rows) % vocab).astype("float64")
        ids[rng.random(rows) < 0.03] = np.nan
        frame[name] = pd.array(ids, dtype="Int64")
    frame["label"] = rng.integers(0, 2, rows)
    return pd.DataFrame(frame).astype({n: "string" for n in SKEWED_COLUMNS})


def test_suggest_keeps_99_percent_of_every_columns_lookups_on_skewed_data(tmp_path):
    rows, sample = 200_000, 10_000
    frame = skewed_frame(rows)
    frame.to_parquet(tmp_path / "data.parquet", row_group_size=20_000)
    model = BuilderModel(str(tmp_path / "data.parquet"), sample_rows=sample)
    branches = model.suggest()
    assert model.vocab_fits
    thresholds = {c: b.steps[0].params.get("freq_threshold", 0) for b in branches
                  for c in b.columns if c in SKEWED_COLUMNS}
    # the real effect: fit Categorify with the suggested thresholds, count OOV lookups (id 2)
    nodes = [[c] >> (ops.Categorify(freq_threshold=t) if t else ops.Categorify())
             for c, t in thresholds.items()]
    graph = nodes[0]
    for node in nodes[1:]:
        graph = graph + node
    out = irs.Workflow(graph).fit_transform(frame)
    choices = {c.column: c for c in model.vocab_choices}
    for name in SKEWED_COLUMNS:
        nonnull = frame[name].notna()
        lost = float((out[name][nonnull] == 2).mean())
        assert lost <= 0.01, (name, thresholds[name], lost)
        counts = frame[name].value_counts()
        expected_lost = counts[counts < thresholds[name]].sum() / counts.sum()
        assert lost == pytest.approx(expected_lost), name  # Categorify drops what we think
        assert choices[name].option.lost <= 0.01
    # not "keep everything": the columns with a head get a threshold and a much smaller table
    for name in ("head", "steep"):
        assert thresholds[name] >= 2, name
        assert choices[name].option.table_rows < 0.8 * frame[name].nunique(), name
    # the widest column keeps every value: its table is extrapolated from the sample
    assert thresholds["wide"] == 0
    true_distinct = frame["wide"].nunique()
    assert 0.7 < choices["wide"].distinct / true_distinct < 1.4, (choices["wide"], true_distinct)
    sample_distinct = frame["wide"].head(sample).nunique()
    assert choices["wide"].distinct > 5 * sample_distinct  # far more than the sample shows
    # the table sizes the workflow really gets, next to the estimates
    for name in ("head", "steep"):
        real = out[name].max() + 1
        assert 0.5 < choices[name].option.table_rows / real < 2, (name, real)


def test_suggest_within_a_small_memory_budget_raises_thresholds_and_says_when_it_cannot(
        tmp_path):
    frame = skewed_frame(50_000, seed=1)
    model = BuilderModel(frame, sample_rows=5_000)
    model.suggest()
    free = {c.column: c.option for c in model.vocab_choices}
    total = sum(o.nbytes for o in free.values())
    model.suggest(memory_budget=total // 4)
    tight = {c.column: c.option for c in model.vocab_choices}
    assert model.vocab_fits and sum(o.nbytes for o in tight.values()) <= total // 4
    assert any(tight[c].freq_threshold > free[c].freq_threshold for c in free)
    assert all(tight[c].lost >= free[c].lost for c in free)  # smaller tables lose more
    model.suggest(memory_budget=1000)  # below even the smallest tables
    assert not model.vocab_fits
    model.suggest(max_loss=0.0)  # nothing may be lost: every value everywhere
    assert all(c.option.freq_threshold == 0 for c in model.vocab_choices)
    with pytest.raises(irs.errors.ParameterError, match="lookups that may be lost"):
        model.suggest(max_loss=1.5)


def test_suggest_card_shows_the_choice_per_column(tmp_path):
    from interactive_recsys.ui.builder import PipelineBuilder

    frame = skewed_frame(20_000)
    builder = PipelineBuilder(frame)
    builder.suggest_card.loss_percent.value = 0.5
    builder.suggest_button.click()
    table = builder.suggest_card.table.value
    choices = builder.model.vocab_choices
    assert [c.column for c in choices] == list(SKEWED_COLUMNS)
    for c in choices:
        assert f"<td>{c.column}</td><td>~{c.distinct:,}</td>" in table
        assert f"{1 - c.option.lost:.1%}" in table and c.option.lost <= 0.005
    assert "within 16 GiB" in table


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
