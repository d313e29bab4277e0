"""Suggest, the column list's model, the step list's pass-through items and Run's output —
plain Python, checked against pandas and hand-written workflows."""

from __future__ import annotations

import html
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder._column_profile import numeric_stats, profile_table
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.views._column_list import ColumnChoice
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


def lost_by_pandas(frame: pd.DataFrame, name: str, threshold: int) -> float:
    """Share of the column's non-null rows whose value occurs fewer than ``threshold`` times."""
    counts = frame[name].value_counts()
    return float(counts[counts < threshold].sum() / counts.sum()) if threshold else 0.0


def suggest_and_fit(path, **suggest_kwargs):
    """Suggest on ``path``, then fit the suggested workflow on the whole data."""
    from interactive_recsys.ui.builder.suggest import lost_lookups

    model = BuilderModel(str(path))
    branches = model.suggest(**suggest_kwargs)
    thresholds = {c: b.steps[0].params.get("freq_threshold", 0) for b in branches
                  for c in b.columns if b.steps and b.steps[0].op == "Categorify"}
    wf = model.to_workflow()
    wf.fit(irs.Dataset(str(path)))
    return model, thresholds, wf, lost_lookups(wf)


def test_suggest_keeps_every_value_while_the_tables_fit_on_skewed_data(tmp_path):
    rows = 200_000
    frame = skewed_frame(rows)
    frame.to_parquet(tmp_path / "data.parquet", row_group_size=20_000)
    model, thresholds, _, lost = suggest_and_fit(tmp_path / "data.parquet")
    assert model.vocab_fits
    choices = {c.column: c for c in model.vocab_choices}
    for name in SKEWED_COLUMNS:
        assert thresholds[name] == 0 and lost[name][0] == 0.0, name  # everything fits
        assert choices[name].distinct == frame[name].nunique()  # counted, not guessed
        assert choices[name].exact and choices[name].counted_rows == rows
    # tiny tables are marked small (never thresholded), the wide ones are not
    assert choices["head"].small and choices["steep"].small
    assert not choices["wide"].small


def test_suggest_on_the_kaggle_profile_loses_nothing_when_the_vocabulary_fits(tmp_path):
    rows = 300_000
    path = irs.datasets.synthetic_criteo(rows=rows, profile="kaggle", path=tmp_path / "k")
    model, thresholds, _, lost = suggest_and_fit(path)
    frame = pd.read_parquet(path, columns=[f"C{i}" for i in range(1, 27)])
    assert model.vocab_fits
    for c in model.vocab_choices:
        assert lost[c.column][0] <= 0.01, (c.column, thresholds[c.column], lost[c.column])
        assert lost_by_pandas(frame, c.column, thresholds[c.column]) <= 0.01, c.column
        assert c.distinct == frame[c.column].nunique(), c.column
    small = [c.column for c in model.vocab_choices if frame[c.column].nunique() < 200]
    assert {"C6", "C9", "C14", "C20"} <= set(small)
    assert all(thresholds[c] == 0 for c in small)  # tiny columns are left alone
    assert model.oov_warnings == []


def test_suggest_over_budget_promises_the_lookups_the_run_loses(tmp_path):
    rows = 300_000
    path = irs.datasets.synthetic_criteo(rows=rows, profile="kaggle", path=tmp_path / "k")
    free = BuilderModel(str(path))
    free.suggest()
    total = sum(c.option.nbytes for c in free.vocab_choices)
    model, thresholds, wf, lost = suggest_and_fit(path, memory_budget=total // 2)
    assert model.vocab_fits
    assert sum(c.option.nbytes for c in model.vocab_choices) <= total // 2
    frame = pd.read_parquet(path, columns=[f"C{i}" for i in range(1, 27)])
    # thresholds within 1% of each column's lookups, then lower dimensions: none loses more
    assert model.vocab_dims
    for c in model.vocab_choices:  # what the card says is what the run loses, and pandas
        expected = lost_by_pandas(frame, c.column, thresholds[c.column])
        assert expected <= 0.01, c.column
        assert c.option.lost == pytest.approx(expected, abs=1e-12), c.column
        assert lost[c.column][0] == pytest.approx(expected, abs=1e-12), c.column
        if c.option.nbytes < 2**20 or frame[c.column].nunique() < 1000:
            assert thresholds[c.column] == 0, c.column  # small tables keep every value
    # after the run: no column over its lookup budget
    from interactive_recsys.ui.builder.suggest import check_oov

    assert check_oov(wf, model.vocab_choices, max_loss=0.01, measured=model.measured) == []
    # a larger lookup budget asked for, the promised losses above 1% are not flagged at 1%
    # as mistakes: they are what Suggest chose to fit the memory budget
    model.suggest(max_loss=0.2, memory_budget=total // 20)
    wf = model.to_workflow().fit(irs.Dataset(str(path)))
    flagged = check_oov(wf, model.vocab_choices, max_loss=0.01, measured=model.measured)
    over = {c.column for c in model.vocab_choices if c.option.lost > 0.01}
    assert over and {w.column for w in flagged} == over
    assert all(w.chosen and "as Suggest chose to fit the embeddings' memory budget" in w.text()
               for w in flagged)


def test_a_run_over_its_lookup_budget_is_flagged_with_the_fix(tmp_path):
    from interactive_recsys.ui.builder._builder import PipelineBuilder
    from interactive_recsys.ui.builder.suggest import check_oov

    frame = skewed_frame(20_000)
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    builder = PipelineBuilder(str(path), output="")
    builder.suggest_card.loss_percent.value = 15  # OOV <= 15%
    builder.suggest_button.click()
    builder.model.wait_suggest(60)  # Suggest counts in the background
    model = builder.model
    (k, j), = [(k, j) for k, b in enumerate(model.branches) for j, s in enumerate(b.steps)
               if "tail" in b.columns and s.op == "Categorify"]
    if model.branches[k].columns != ["tail"]:  # its own branch, so that only it changes
        model.remove_step(k, j)
        model.add_step(["tail"], "Categorify", {"freq_threshold": 50})
    else:
        model.update_step(k, j, params={"freq_threshold": 50})
    builder.output_text.value = ""
    builder.buttons["run"].click()
    model.wait_run(120)
    expected = lost_by_pandas(frame, "tail", 50)
    assert expected > 0.15
    (warning,) = model.oov_warnings
    assert warning.column == "tail" and warning.lost == pytest.approx(expected)
    assert not warning.chosen  # edited by hand: not what Suggest promised
    assert warning.allowed == pytest.approx(0.15)
    # the fix: the smallest table within 15%, checked with pandas
    counts = sorted(set(frame["tail"].value_counts()))
    fix = warning.fix_threshold
    assert fix >= 2 and lost_by_pandas(frame, "tail", fix) <= 0.15
    smaller = [k + 1 for k in counts if k + 1 > fix and (frame["tail"].value_counts() >= fix)
               .sum() > (frame["tail"].value_counts() >= k + 1).sum()]
    assert smaller and all(lost_by_pandas(frame, "tail", t) > 0.15 for t in smaller)
    alert = builder.oov_alert.value
    assert f"tail lost {expected:.2%} of its non-null lookups" in alert and f"freq_threshold={warning.fix_threshold}" \
        in alert and "irs-oov-alert" in alert
    assert builder.children.index(builder.oov_alert) == 1  # at the top of the Build tab
    assert check_oov(model.reuse_run, max_loss=0.5) == []
    model.update_step(*model.selected, params={"freq_threshold": warning.fix_threshold})
    builder.buttons["run"].click()  # the fix applied: the note goes
    model.wait_run(120)
    assert model.oov_warnings == [] and builder.oov_alert.value == ""
    # ... and the status line gives the real loss, the worst column's, within the budget
    lost = {c: lost_by_pandas(frame, c, s.params.get("freq_threshold", 0))
            for b in model.branches for s in b.steps if s.op == "Categorify" for c in b.columns}
    worst = max(lost, key=lost.get)
    deadline = time.monotonic() + 10  # the status is set by the run's end callback
    while "lookups lost" not in builder.status.value and time.monotonic() < deadline:
        time.sleep(0.1)
    status = html.unescape(builder.status.value)
    assert f"lookups lost: at most {lost[worst]:.2%} of non-null lookups ({worst}), within " \
        "the 15.0% budget" in status, status


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
    # thresholds within 1% of the lookups were not enough: smaller dimensions
    assert all(o.lost_bound <= 0.01 for o in tight.values()) and model.vocab_dims
    model.suggest(max_loss=0.5, memory_budget=total // 4)  # a loose lookup budget
    loose = {c.column: c.option for c in model.vocab_choices}
    assert model.vocab_fits and sum(o.nbytes for o in loose.values()) <= total // 4
    assert any(loose[c].freq_threshold > free[c].freq_threshold for c in free)
    assert all(loose[c].lost >= free[c].lost for c in free)  # smaller tables lose more
    model.suggest(memory_budget=1000)  # below even the smallest tables
    assert not model.vocab_fits
    model.suggest(max_loss=0.0)  # nothing may be lost: every value everywhere
    assert all(c.option.freq_threshold == 0 for c in model.vocab_choices)
    with pytest.raises(irs.errors.ParameterError, match="lookups that may be lost"):
        model.suggest(max_loss=1.5)


def test_suggest_card_shows_the_choice_per_column(tmp_path):
    from interactive_recsys.ui.builder._builder import PipelineBuilder

    frame = skewed_frame(20_000)
    builder = PipelineBuilder(frame)
    builder.suggest_card.loss_percent.value = 0.5
    builder.suggest_button.click()
    builder.model.wait_suggest(60)  # Suggest counts in the background
    table = builder.suggest_card.table.value
    choices = builder.model.vocab_choices
    assert [c.column for c in choices] == list(SKEWED_COLUMNS)
    for c in choices:
        assert f"<td>{c.column}</td><td>{c.distinct:,}</td>" in table  # counted: no ~
        assert c.distinct == frame[c.column].nunique()
        assert f"<td>{c.option.lost:.2%}</td><td>{c.option.dim}</td>" in table
        assert c.option.lost <= 0.005
    assert "within 16 GiB" in table and "every value counted over all 20,000 rows" in table


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
