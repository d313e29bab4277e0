"""``Categorify(max_frequency=N)``: values seen more than N times are out of vocabulary, in a
fit and exactly under ``Workflow.update`` (pandas' ``value_counts`` of both days is the
expectation); kept values keep their ids; the parameter is checked; a refit that changes only
it reads no data."""

from __future__ import annotations

from typing import Any

import dask.dataframe as dd
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import NotMergeableError, ParameterError
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX

SETTINGS = settings(max_examples=15, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow])
KEYS = st.one_of(st.sampled_from(list("abcdefgh")), st.none())


def _dataset(values: list[Any], parts: int) -> irs.Dataset:
    df = pd.DataFrame({"k": pd.array(values, dtype="string")})
    return irs.Dataset(dd.from_pandas(df, npartitions=min(parts, len(df)), sort=False))


def _ids(wf: irs.Workflow, values: list[str]) -> dict[str, int]:
    out = wf.transform(pd.DataFrame({"k": pd.array(values, dtype="string")}))["k"]
    return dict(zip(values, out.tolist(), strict=True))


def _kept(counts: pd.Series, threshold: int, limit: int) -> set[str]:
    return set(counts[(counts >= max(threshold, 1)) & (counts <= limit)].index)


def test_a_fit_cuts_the_values_seen_more_than_n_times():
    df = pd.DataFrame({"c": ["spam"] * 6 + ["a"] * 3 + ["b"] * 2 + [None, "c"]})
    wf = irs.Workflow(["c"] >> ops.Categorify(max_frequency=3))
    out = wf.fit_transform(df)["c"].tolist()
    # spam (6 > 3) out of vocabulary; a (3), b (2), c (1) kept by descending count
    assert out == [2] * 6 + [3] * 3 + [4] * 2 + [NULL_INDEX, 5]
    info = next(wf.fitted_steps()).state["vocabs"]["c"]
    assert (info["cut_values"], info["cut_count"], info["oov_count"]) == (1, 6, 6)
    assert wf.output_schema["c"].cardinality == 6


def test_with_num_buckets_a_cut_value_lands_in_its_hash_bucket():
    df = pd.DataFrame({"c": ["spam"] * 6 + ["a", "a"]})
    cut = irs.Workflow(["c"] >> ops.Categorify(max_frequency=3, num_buckets=4))
    hashed = irs.Workflow(["c"] >> ops.HashBucket(4))
    spam_id = cut.fit_transform(df)["c"].tolist()[0]
    assert spam_id == hashed.fit_transform(df)["c"].tolist()[0]  # the same hash as HashBucket
    assert FIRST_FREE_INDEX <= spam_id < FIRST_FREE_INDEX + 4


@SETTINGS
@given(st.lists(KEYS, min_size=1, max_size=30), st.lists(KEYS, min_size=1, max_size=30),
       st.integers(0, 3), st.integers(1, 6), st.integers(1, 3), st.integers(1, 3))
def test_update_cuts_exactly_the_values_whose_combined_count_exceeds_n(
        day1: list, day2: list, threshold: int, extra: int, parts1: int, parts2: int) -> None:
    limit = max(threshold, 1) + extra - 1  # max_frequency >= freq_threshold
    op = ops.Categorify(freq_threshold=threshold, max_frequency=limit)
    wf = irs.Workflow(["k"] >> op).fit(_dataset(day1, parts1))
    before = _ids(wf, list("abcdefgh"))
    updated = wf.update(_dataset(day2, parts2))
    both = pd.Series(day1 + day2, dtype="string").value_counts()
    kept = _kept(both, threshold, limit)
    after = _ids(updated, list("abcdefgh"))
    assert {v for v, i in after.items() if i >= op.first_vocab_index} == kept
    assert {v for v, i in after.items() if i == FIRST_FREE_INDEX} == set("abcdefgh") - kept
    for value in kept:  # a value with an id before keeps it
        if before[value] >= op.first_vocab_index:
            assert after[value] == before[value]
    # and a fit on both days keeps the same values
    refit = irs.Workflow(["k"] >> op).fit(_dataset(day1 + day2, 1))
    assert {v for v, i in _ids(refit, list("abcdefgh")).items()
            if i >= op.first_vocab_index} == kept
    info = next(updated.fitted_steps()).state["vocabs"]["k"]
    cut = both[both > limit]
    assert (info["cut_values"], info["cut_count"]) == (len(cut), int(cut.sum()))
    assert updated.output_schema["k"].cardinality == op.first_vocab_index + len(kept) \
        + info["retired"]


def test_a_value_that_crosses_n_in_an_update_loses_its_id_and_others_keep_theirs():
    op = ops.Categorify(max_frequency=3)
    wf = irs.Workflow(["k"] >> op).fit(pd.DataFrame({"k": ["a", "a", "b", "c"]}))
    assert _ids(wf, ["a", "b", "c"]) == {"a": 3, "b": 4, "c": 5}
    day2 = wf.update(pd.DataFrame({"k": ["a", "a", "d"]}))  # a: 4 in all, over 3
    assert _ids(day2, ["a", "b", "c", "d"]) == {"a": 2, "b": 4, "c": 5, "d": 6}
    info = next(day2.fitted_steps()).state["vocabs"]["k"]
    assert (info["retired"], info["size"], info["cardinality"]) == (1, 3, 7)
    assert op.update_changes_seen_rows(next(wf.fitted_steps()).state,
                                       next(day2.fitted_steps()).state)
    again = day2.update(pd.DataFrame({"k": ["e"]}))  # retired ids stay retired
    assert _ids(again, ["a", "b", "c", "d", "e"]) == {"a": 2, "b": 4, "c": 5, "d": 6, "e": 7}


def test_an_updated_vocabulary_with_retired_ids_saves_and_loads(tmp_path):
    wf = irs.Workflow(["k"] >> ops.Categorify(max_frequency=2)).fit(
        pd.DataFrame({"k": ["a", "a", "b"]}))
    day2 = wf.update(pd.DataFrame({"k": ["a", "c"]}))
    day2.save(tmp_path / "wf")
    loaded = irs.Workflow.load(tmp_path / "wf")
    assert _ids(loaded, ["a", "b", "c"]) == {"a": 2, "b": 4, "c": 5}
    assert _ids(loaded.update(pd.DataFrame({"k": ["d"]})), ["b", "c", "d"]) == \
        {"b": 4, "c": 5, "d": 6}


def test_a_refit_that_changes_only_max_frequency_reads_no_data():
    df = pd.DataFrame({"k": ["a"] * 5 + ["b"] * 3 + ["c"]})
    first = irs.Workflow(["k"] >> ops.Categorify()).fit(df)
    again = irs.Workflow(["k"] >> ops.Categorify(max_frequency=4)).fit(df, reuse=first)
    assert again.fit_stats["refinished"] == ["categorify-1"] and again.fit_stats["phases"] == []
    assert _ids(again, ["a", "b", "c"]) == {"a": 2, "b": 3, "c": 4}
    back = irs.Workflow(["k"] >> ops.Categorify()).fit(df, reuse=again)  # the cut counted
    assert back.fit_stats["refinished"] == ["categorify-1"]
    assert _ids(back, ["a", "b", "c"]) == {"a": 3, "b": 4, "c": 5}


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3", True])
def test_max_frequency_must_be_a_positive_integer(bad):
    with pytest.raises(ParameterError, match="'max_frequency' parameter of Categorify"):
        ops.Categorify(max_frequency=bad)


def test_max_frequency_below_freq_threshold_is_refused():
    with pytest.raises(ParameterError, match=r"at least freq_threshold \(5\).*Got 4"):
        ops.Categorify(freq_threshold=5, max_frequency=4)
    assert ops.Categorify(freq_threshold=5, max_frequency=5).max_frequency == 5


def test_an_update_with_max_frequency_of_a_vocabulary_fitted_without_is_refused():
    wf = irs.Workflow(["k"] >> ops.Categorify()).fit(pd.DataFrame({"k": ["a"]}))
    step = next(wf.fitted_steps())
    capped = irs.Workflow(["k"] >> ops.Categorify(max_frequency=3))
    capped._state = wf._state  # the same step id, a state without the cut counts
    with pytest.raises(NotMergeableError, match="fitted without max_frequency"):
        capped.update(pd.DataFrame({"k": ["a"]}))
    assert step.op.max_frequency is None


def test_max_frequency_saves_and_shows():
    op = ops.Categorify(max_frequency=1000)
    assert repr(op) == "Categorify(max_frequency=1000)"
    assert ops.Operator.from_config(op.to_config()) == op



def test_fit_and_update_on_the_cluster(client, tmp_path):
    day1 = pd.Series(list("aaabbbbbcd") * 3, dtype="string")
    day2 = pd.Series(list("ccccccde"), dtype="string")
    op = ops.Categorify(max_frequency=12)
    wf = irs.Workflow(["k"] >> op, artifacts_dir=str(tmp_path / "art"))
    wf.fit(_dataset(day1.tolist(), 3))
    first = _ids(wf, list("abcde"))
    assert first["b"] == FIRST_FREE_INDEX  # 15 > 12
    updated = wf.update(_dataset(day2.tolist(), 2))
    both = pd.concat([day1, day2]).value_counts()
    after = _ids(updated, list("abcde"))
    assert {v for v, i in after.items() if i >= op.first_vocab_index} == \
        set(both[both <= 12].index)  # c: 3 + 6 = 9 kept, a 9, d 4, e 1
    assert all(after[v] == first[v] for v in "acd")


def test_vocabulary_diff_counts_a_value_cut_by_an_update_as_dropped():
    wf = irs.Workflow(["k"] >> ops.Categorify(max_frequency=2)).fit(
        pd.DataFrame({"k": ["a", "a", "b"]}))
    day2 = wf.update(pd.DataFrame({"k": ["a", "c"]}))
    row = irs.vocabulary_diff(wf, day2).iloc[0]
    assert (row["new_values"], row["dropped_values"], row["changed_ids"]) == (1, 1, 0)
