"""``irs.vocabulary_diff`` against hand-computed cases and pandas: vocabularies value by value
(new, dropped, moved ids, the share of new values), and the shifts of fitted statistics."""

import math

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import NotFittedError, ParameterError
from interactive_recsys.stats._vocabulary_diff import FIELDS
from tests.conftest import partitioned

THRESHOLD = 3


def _vocabulary(values: pd.Series, threshold: int = 0) -> dict:
    """pandas: ``{value: id}`` as Categorify numbers it (by descending count, ties by value,
    from 3: padding, null and one out-of-vocabulary id first)."""
    counts = values.value_counts()
    counts = counts[counts >= max(threshold, 1)]
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {value: 3 + i for i, (value, _) in enumerate(order)}


def _expected(old_ids: dict, new_ids: dict, new_counts: pd.Series, lookups: int) -> dict:
    new = set(new_ids) - set(old_ids)
    return {"old_size": len(old_ids), "new_size": len(new_ids), "new_values": len(new),
            "dropped_values": len(set(old_ids) - set(new_ids)),
            "changed_ids": sum(old_ids[v] != new_ids[v] for v in set(old_ids) & set(new_ids)),
            "new_share": float(new_counts[list(new)].sum() / lookups)}


def _row(diff: pd.DataFrame, column: str, operator: str = "Categorify") -> dict:
    rows = diff[(diff["column"] == column) & (diff["operator"] == operator)]
    assert len(rows) == 1, diff
    return rows.iloc[0].to_dict()


def _days(seed: int, rows: int = 3000, shift: int = 0) -> pd.DataFrame:
    """Zipf-like ids (``shift`` moves the popular ones), a continuous column."""
    rng = np.random.default_rng(seed)
    ids = (rng.zipf(1.4, rows) + shift) % 400
    c = pd.Series([f"v{v}" for v in ids], dtype="string[pyarrow]")
    c[rng.random(rows) < 0.03] = None
    return pd.DataFrame({"c": c, "x": rng.normal(5.0 + shift / 10, 2.0 + shift / 50, rows)})


def test_a_hand_computed_case():
    old = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "a", "b", "c"]}))
    new = irs.Workflow(["c"] >> ops.Categorify()).fit(
        pd.DataFrame({"c": ["a", "b", "b", "d", "d", "d", None]}))
    # old: a 3, b 4, c 5; new: d 3, b 4, a 5: d new (3 of the 6 lookups), c dropped, a moved
    diff = irs.vocabulary_diff(old, new)
    assert list(diff.columns) == list(FIELDS)
    assert {k: _row(diff, "c")[k] for k in ("present", "old_size", "new_size", "new_values",
                                            "dropped_values", "changed_ids", "new_share")} == {
        "present": "both", "old_size": 3, "new_size": 3, "new_values": 1, "dropped_values": 1,
        "changed_ids": 1, "new_share": 0.5}
    assert math.isnan(_row(diff, "c")["mean_shift"])


def test_a_refit_from_scratch_on_shifted_data_moves_ids():
    day1, day2 = _days(1), _days(2, shift=37)
    make = lambda: irs.Workflow(["c"] >> ops.Categorify(freq_threshold=THRESHOLD))  # noqa: E731
    old, new = make().fit(partitioned(day1, 3)), make().fit(partitioned(day2, 4))
    got = _row(irs.vocabulary_diff(old, new), "c")
    expected = _expected(_vocabulary(day1["c"], THRESHOLD), _vocabulary(day2["c"], THRESHOLD),
                         day2["c"].value_counts(), int(day2["c"].notna().sum()))
    assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert got["changed_ids"] > 0 and got["new_values"] > 0 and got["dropped_values"] > 0
    assert 0 < got["new_share"] < 1


@pytest.mark.parametrize("threshold", [0, THRESHOLD])
def test_after_an_update_no_id_moves(threshold):
    day1, day2 = _days(3), _days(4, shift=37)
    wf = irs.Workflow(["c"] >> ops.Categorify(freq_threshold=threshold))
    old = wf.fit(partitioned(day1, 3))
    new = old.update(partitioned(day2, 2))
    got = _row(irs.vocabulary_diff(old, new), "c")
    both = pd.concat([day1["c"], day2["c"]])  # the update's counts: of both days
    old_ids = _vocabulary(day1["c"], threshold)
    new_values = set(_vocabulary(both, threshold)) - set(old_ids)
    counts = both.value_counts()
    assert got["changed_ids"] == 0 and got["dropped_values"] == 0
    assert got["new_values"] == len(new_values) > 0
    assert got["new_size"] == len(old_ids) + len(new_values)
    assert got["new_share"] == pytest.approx(counts[list(new_values)].sum()
                                             / both.notna().sum(), rel=1e-12)


def test_on_the_cluster_as_in_process(tmp_path, client):
    day1, day2 = _days(5), _days(6, shift=11)
    for name, frame in (("day1", day1), ("day2", day2)):
        (tmp_path / name).mkdir()
        for i, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
            frame.iloc[rows].to_parquet(tmp_path / name / f"part-{i}.parquet")
    wf = irs.Workflow(["c"] >> ops.Categorify())
    old = wf.fit(irs.Dataset(str(tmp_path / "day1")))
    new = old.update(irs.Dataset(str(tmp_path / "day2")))
    refit = irs.Workflow(["c"] >> ops.Categorify()).fit(irs.Dataset(str(tmp_path / "day2")))
    assert _row(irs.vocabulary_diff(old, new), "c")["changed_ids"] == 0
    got = _row(irs.vocabulary_diff(old, refit), "c")
    expected = _expected(_vocabulary(day1["c"]), _vocabulary(day2["c"]),
                         day2["c"].value_counts(), int(day2["c"].notna().sum()))
    assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)


def test_vocabularies_of_other_split_counts_and_saved_folders(tmp_path):
    """Compared whole when their splits differ; loaded workflows read their own folders."""
    day1, day2 = _days(7), _days(8, shift=5)
    old = irs.Workflow(["c"] >> ops.Categorify(split_out=3)).fit(day1)
    new = irs.Workflow(["c"] >> ops.Categorify()).fit(day2)
    old.save(tmp_path / "old")
    new.save(tmp_path / "new")
    expected = _expected(_vocabulary(day1["c"]), _vocabulary(day2["c"]),
                         day2["c"].value_counts(), int(day2["c"].notna().sum()))
    loaded = irs.vocabulary_diff(irs.Workflow.load(tmp_path / "old"),
                                 irs.Workflow.load(tmp_path / "new"))
    for diff in (irs.vocabulary_diff(old, new), loaded):
        got = _row(diff, "c")
        assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)


def test_a_step_adopted_by_a_refit_is_unchanged():
    day = _days(9)
    first = irs.Workflow(["c"] >> ops.Categorify()).fit(day)
    again = irs.Workflow(["c"] >> ops.Categorify()).fit(day, reuse=first)
    assert [s.reused for s in again.fitted_steps()] == [True]
    got = _row(irs.vocabulary_diff(first, again), "c")
    assert [got[k] for k in ("new_values", "dropped_values", "changed_ids", "new_share")] == \
        [0, 0, 0, 0.0]


def test_joint_groups_give_each_column_the_shared_numbers_and_combo_one_row():
    old_frame = pd.DataFrame({"a": ["x", "y", "x"], "b": ["y", "z", "y"]})
    new_frame = pd.DataFrame({"a": ["x", "w", "w"], "b": ["y", "y", None]})
    joint = lambda: irs.Workflow([["a", "b"]] >> ops.Categorify())  # noqa: E731
    diff = irs.vocabulary_diff(joint().fit(old_frame), joint().fit(new_frame))
    shared = pd.concat([new_frame["a"], new_frame["b"]])
    expected = _expected(_vocabulary(pd.concat([old_frame["a"], old_frame["b"]])),
                         _vocabulary(shared), shared.value_counts(), int(shared.notna().sum()))
    assert list(diff["column"]) == ["a", "b"]
    for column in ("a", "b"):
        got = _row(diff, column)
        assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    combo = lambda: irs.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo"))  # noqa
    diff = irs.vocabulary_diff(combo().fit(old_frame), combo().fit(new_frame))
    assert list(diff["column"]) == ["a_b"]  # new pairs: (w, y) and (w, null)
    assert _row(diff, "a_b")["new_values"] == 2 and _row(diff, "a_b")["dropped_values"] == 1


def test_columns_in_one_workflow_only_get_a_row_that_says_so():
    frame = pd.DataFrame({"a": ["x", "y"], "b": ["p", "q"], "n": [1.0, 2.0]})
    old = irs.Workflow((["a", "b"] >> ops.Categorify()) + (["n"] >> ops.Normalize())).fit(frame)
    new = irs.Workflow((["a"] >> ops.Categorify()) + (["n"] >> ops.FillMedian())).fit(frame)
    diff = irs.vocabulary_diff(old, new)
    assert diff[["column", "operator", "present"]].values.tolist() == [
        ["a", "Categorify", "both"], ["n", "FillMedian", "new only"],
        ["b", "Categorify", "old only"], ["n", "Normalize", "old only"]]
    b = _row(diff, "b")
    assert b["old_size"] == 2 and pd.isna(b["new_size"]) and pd.isna(b["new_values"])
    assert diff["new_size"].dtype == "Int64" and diff["new_size"].isna().tolist() == [
        False, True, True, True]
    assert diff.loc[1:, ["new_share", "mean_shift", "median_shift"]].isna().all().all()


def test_shifts_of_fitted_statistics_against_pandas():
    rng = np.random.default_rng(10)
    old_frame = pd.DataFrame({"x": rng.normal(3, 2, 501), "y": rng.uniform(0, 4, 501),
                              "z": rng.exponential(2, 501)})
    new_frame = pd.DataFrame({"x": rng.normal(4, 3, 401), "y": rng.uniform(-1, 5, 401),
                              "z": rng.exponential(3, 401)})
    make = lambda: irs.Workflow(  # noqa: E731
        (["x"] >> ops.DataStats() >> ops.Normalize()) + (["y"] >> ops.NormalizeMinMax())
        + (["z"] >> ops.FillMedian()))
    diff = irs.vocabulary_diff(make().fit(old_frame), make().fit(new_frame))
    x, y, z = old_frame["x"], old_frame["y"], old_frame["z"]
    x2, y2, z2 = new_frame["x"], new_frame["y"], new_frame["z"]
    normalize = _row(diff, "x", "Normalize")
    assert normalize["mean_shift"] == pytest.approx((x2.mean() - x.mean()) / x.std(ddof=0))
    assert normalize["std_shift"] == pytest.approx((x2.std(ddof=0) - x.std(ddof=0))
                                                   / x.std(ddof=0))
    stats = _row(diff, "x", "DataStats")  # DataStats' std is pandas' (ddof=1)
    assert stats["mean_shift"] == pytest.approx((x2.mean() - x.mean()) / x.std())
    assert stats["std_shift"] == pytest.approx((x2.std() - x.std()) / x.std())
    min_max = _row(diff, "y", "NormalizeMinMax")
    assert min_max["min_shift"] == pytest.approx((y2.min() - y.min()) / (y.max() - y.min()))
    assert min_max["max_shift"] == pytest.approx((y2.max() - y.max()) / (y.max() - y.min()))
    assert math.isnan(min_max["mean_shift"])
    assert _row(diff, "z", "FillMedian")["median_shift"] == pytest.approx(z2.median()
                                                                          - z.median())


def test_an_update_shifts_normalize_to_the_moments_of_both_days():
    day1, day2 = _days(11), _days(12, shift=30)
    old = irs.Workflow(["x"] >> ops.Normalize()).fit(day1)
    both = pd.concat([day1["x"], day2["x"]])
    got = _row(irs.vocabulary_diff(old, old.update(day2)), "x", "Normalize")
    assert got["mean_shift"] == pytest.approx((both.mean() - day1["x"].mean())
                                              / day1["x"].std(ddof=0))
    assert got["std_shift"] == pytest.approx((both.std(ddof=0) - day1["x"].std(ddof=0))
                                             / day1["x"].std(ddof=0))


def test_a_constant_column_shifts_in_its_own_units():
    old = irs.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [2.0, 2.0]}))
    new = irs.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [3.0, 5.0]}))
    got = _row(irs.vocabulary_diff(old, new), "x", "Normalize")
    assert (got["mean_shift"], got["std_shift"]) == (2.0, 1.0)  # std 0: divided by 1


def test_unfitted_or_other_objects_are_refused():
    frame = pd.DataFrame({"c": ["a"]})
    fitted = irs.Workflow(["c"] >> ops.Categorify()).fit(frame)
    with pytest.raises(NotFittedError, match="the 'new' workflow is not fitted"):
        irs.vocabulary_diff(fitted, irs.Workflow(["c"] >> ops.Categorify()))
    with pytest.raises(ParameterError, match="its 'old' argument is a DataFrame"):
        irs.vocabulary_diff(frame, fitted)
