"""EmbeddingReport and EmbeddingView against independent computations: pandas value_counts,
numpy cumulative sums and percentiles on generated power-law data, a real Categorify fit,
and the real Criteo sample when it is present (it is not in CI)."""

from __future__ import annotations

import json
import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import NotFittedError, ParameterError, SchemaError
from interactive_recsys.stats._embedding_report import EmbeddingReport
from interactive_recsys.stats._frequency import CountHistogram
from interactive_recsys.stats._list_lengths import LengthStats
from interactive_recsys.stats._table_stats import dataset_tables
from tests.conftest import LIST_STRING, STRING, new_workflow

CRITEO_SAMPLE = "/work/shared/data/criteo_kaggle_head10k/train.txt"
EXPONENT = 1.2


def power_law_frame(rows: int = 30_000, vocab: int = 3000, seed: int = 7) -> pd.DataFrame:
    """``c``: values v0, v1, ... drawn with P(rank k) proportional to k**-EXPONENT, 5% null;
    ``u``: uniform over 50 values; ``tags``: lists of 0-5 values, some rows null."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, vocab + 1, dtype=float) ** -EXPONENT
    ids = rng.choice(vocab, size=rows, p=p / p.sum())
    c = [f"v{i}" for i in ids]
    c = [None if m else v for v, m in zip(c, rng.random(rows) < 0.05, strict=True)]
    u = [f"u{i}" for i in rng.integers(0, 50, rows)]
    lengths = rng.integers(0, 6, rows)
    tags = [None if rng.random() < 0.03 else [f"t{j}" for j in rng.integers(0, 20, n)]
            for n in lengths]
    return pd.DataFrame({"c": pd.Series(c, dtype=STRING), "u": pd.Series(u, dtype=STRING),
                         "tags": pd.Series(tags, dtype=LIST_STRING)})


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return power_law_frame()


@pytest.fixture(scope="module")
def dataset(frame: pd.DataFrame) -> irs.Dataset:
    return irs.Dataset(dd.from_pandas(frame, npartitions=5, sort=False))


@pytest.fixture(scope="module")
def report(dataset: irs.Dataset) -> EmbeddingReport:
    return EmbeddingReport(dataset)


def irs_local_scheduler() -> object:
    """Dask's in-process scheduler even while a distributed client is current."""
    import dask

    return dask.config.set(scheduler="sync")


def sorted_counts(series: pd.Series) -> np.ndarray:
    return np.sort(series.dropna().value_counts().to_numpy())[::-1]


# ---- statistics from data --------------------------------------------------------------------
def test_cardinality_nulls_and_frequencies_equal_pandas(frame: pd.DataFrame,
                                                        report: EmbeddingReport) -> None:
    assert list(report.tables) == ["c", "u", "tags"]
    for name in ("c", "u"):
        t = report.tables[name]
        counts = sorted_counts(frame[name])
        assert t.cardinality == 2 + 1 + frame[name].nunique()
        assert t.vocab_size == len(counts)
        assert t.lookups == len(frame)
        assert t.null_count == int(frame[name].isna().sum())
        assert t.oov_count == 0
        ranks = np.arange(1, len(counts) + 1)
        assert np.array_equal(t.frequency.frequency_at_rank(ranks), counts)
        d = report.table_dict(name)
        assert d["rank_frequency"]["frequency"] == counts[
            np.asarray(d["rank_frequency"]["rank"]) - 1].tolist()
        assert d["null_rate"] == pytest.approx(frame[name].isna().mean())


def test_coverage_equals_numpy_cumulative_sums(frame: pd.DataFrame,
                                               report: EmbeddingReport) -> None:
    # every row of the table that serves lookups: the vocabulary ids and the null row
    counts = np.sort(np.append(sorted_counts(frame["c"]), frame["c"].isna().sum()))[::-1]
    share = np.cumsum(counts) / counts.sum()
    d = report.table_dict("c")
    ks = np.asarray(d["coverage"]["ids"])
    assert np.allclose(d["coverage"]["share"], share[ks - 1])
    assert d["coverage"]["ids"][-1] == len(counts) and d["coverage"]["share"][-1] == 1.0
    for q in (0.5, 0.9, 0.99):
        assert d["ids_for_share"][str(q)] == int(np.argmax(share >= q)) + 1
    assert len(ks) <= report.max_points


def test_rank_frequency_follows_the_generating_power_law(report: EmbeddingReport) -> None:
    ranks = np.arange(1, 41)
    freq = report.tables["c"].frequency.frequency_at_rank(ranks)
    slope = np.polyfit(np.log(ranks), np.log(freq), 1)[0]
    assert slope == pytest.approx(-EXPONENT, abs=0.12)
    # the uniform column is flat: its hottest and coldest values differ by little
    u = report.tables["u"].frequency
    assert u.counts[0] / u.counts[-1] < 1.6


def test_list_lengths_and_padding_waste_equal_numpy(frame: pd.DataFrame,
                                                    report: EmbeddingReport) -> None:
    lengths = np.array([len(v) if isinstance(v, list | np.ndarray) else 0
                        for v in frame["tags"].tolist()])
    t = report.tables["tags"]
    assert t.is_list and t.lookups == lengths.sum()
    s = t.lengths
    assert s.rows == len(frame) and s.total == lengths.sum() and s.max == lengths.max()
    assert s.mean == pytest.approx(lengths.mean())
    for q in (0.5, 0.99):
        assert s.quantile(q) == np.percentile(lengths, 100 * q, method="inverted_cdf")
    assert s.padding_waste == pytest.approx(1 - lengths.sum() / (len(lengths) * lengths.max()))
    assert s.padded_bytes == len(lengths) * lengths.max() * 8
    assert s.jagged_bytes == lengths.sum() * 8 + (len(lengths) + 1) * 4
    flat = frame["tags"].dropna().explode().dropna()
    assert np.array_equal(t.frequency.counts, np.unique(sorted_counts(flat))[::-1])
    d = report.table_dict("tags")["list_lengths"]
    assert (d["p50"], d["p99"], d["max"]) == (s.quantile(0.5), s.quantile(0.99), s.max)


def test_hash_splits_give_the_same_histograms(dataset: irs.Dataset,
                                              report: EmbeddingReport) -> None:
    for split in dataset_tables(dataset, ["c", "tags"], splits=3):
        one = report.tables[split.name]
        assert np.array_equal(split.frequency.counts, one.frequency.counts)
        assert np.array_equal(split.frequency.ids, one.frequency.ids)
        assert split.null_count == one.null_count


def test_frequency_threshold_and_max_size_match_pandas(frame: pd.DataFrame,
                                                       dataset: irs.Dataset) -> None:
    counts = sorted_counts(frame["c"])
    r = EmbeddingReport(dataset, columns=["c"], freq_threshold=5, num_buckets=4)
    t = r.tables["c"]
    assert t.vocab_size == (counts >= 5).sum()
    assert t.cardinality == 2 + 4 + (counts >= 5).sum()
    assert t.oov_count == counts[counts < 5].sum()
    assert r.table_dict("c")["oov_rate"] == pytest.approx(counts[counts < 5].sum() / len(frame))
    r = EmbeddingReport(dataset, columns=["c"], max_size=100)
    assert r.tables["c"].vocab_size == 100
    assert r.tables["c"].oov_count == counts[100:].sum()


def test_runs_on_a_real_cluster(client: object) -> None:
    small = irs.Dataset(dd.from_pandas(power_law_frame(rows=4000), npartitions=3, sort=False))
    with irs_local_scheduler():
        local = EmbeddingReport(small).to_dict()
    assert EmbeddingReport(small).to_dict() == local


# ---- statistics from a fitted workflow -------------------------------------------------------
def test_workflow_report_equals_the_data_report(tmp_path: object, dataset: irs.Dataset) -> None:
    wf = new_workflow((["c", "u"] >> ops.Categorify(freq_threshold=3, num_buckets=2))
                      + (["tags"] >> ops.Categorify()), tmp_path)
    wf.fit(dataset)
    from_wf = EmbeddingReport(wf, dataset=dataset)
    from_data = EmbeddingReport(dataset, freq_threshold=3, num_buckets=2, columns=["c", "u"])
    plain = EmbeddingReport(dataset, columns=["tags"])
    for name, other in (("c", from_data), ("u", from_data), ("tags", plain)):
        a, b = from_wf.tables[name], other.tables[name]
        assert a.cardinality == b.cardinality == wf.output_schema[name].cardinality
        assert (a.lookups, a.null_count, a.oov_count) == (b.lookups, b.null_count, b.oov_count)
        assert np.array_equal(a.frequency.counts, b.frequency.counts)
        assert np.array_equal(a.frequency.ids, b.frequency.ids)
    assert from_wf.tables["tags"].lengths.to_dict() == plain.tables["tags"].lengths.to_dict()
    # the ids the transform gives are served in the proportions the report says
    out = wf.transform(dataset).compute()
    ids = pd.Series(out["c"].to_numpy())
    share_null = (ids == 1).mean()
    share_oov = ids.between(2, 3).mean()
    assert from_wf.table_dict("c")["null_rate"] == pytest.approx(share_null)
    assert from_wf.table_dict("c")["oov_rate"] == pytest.approx(share_oov)


def test_a_saved_and_loaded_workflow_gives_the_same_report(tmp_path: object,
                                                           dataset: irs.Dataset) -> None:
    wf = new_workflow(["c", "tags"] >> ops.Categorify(max_size=500), tmp_path)
    wf.fit(dataset)
    path = os.path.join(str(tmp_path), "saved")
    wf.save(path)
    loaded = irs.Workflow.load(path)
    assert EmbeddingReport(loaded).to_dict() == EmbeddingReport(wf).to_dict()


def test_joint_groups_share_a_table_and_hashed_columns_have_only_a_size(tmp_path: object) -> None:
    df = pd.DataFrame({"a": pd.Series(["x", "y", "x", None], dtype=STRING),
                       "b": pd.Series(["y", "z", "z", "z"], dtype=STRING),
                       "h": pd.Series(["p", "q", "r", "s"], dtype=STRING)})
    wf = new_workflow(([["a", "b"]] >> ops.Categorify()) + (["h"] >> ops.HashBucket(1000)),
                      tmp_path)
    wf.fit(df)
    r = EmbeddingReport(wf)
    assert list(r.tables) == ["a_b", "h"]
    joint = r.tables["a_b"]
    assert joint.columns == ["a", "b"]
    assert joint.lookups == 8 and joint.null_count == 1
    assert joint.frequency.frequency_at_rank([1, 2, 3]).tolist() == [3, 2, 2]  # z, x, y
    assert r.tables["h"].cardinality == 1002 and r.tables["h"].frequency is None
    assert "h" in repr(r) and r.table_dict("h")["notes"]


def test_renamed_outputs_keep_their_counts(tmp_path: object) -> None:
    df = pd.DataFrame({"a": pd.Series(["x", "y", "x", "z"], dtype=STRING)})
    wf = new_workflow((["a"] >> ops.Categorify() >> ops.Rename(postfix="_id"))
                      + (["a"] >> ops.Categorify(num_buckets=5) >> ops.Rename(postfix="_h")),
                      tmp_path)
    wf.fit(df)
    r = EmbeddingReport(wf)
    assert list(r.tables) == ["a_id", "a_h"]
    assert r.tables["a_id"].cardinality == 2 + 1 + 3 and r.tables["a_h"].cardinality == 2 + 5 + 3
    for t in r.tables.values():
        assert t.source == "vocabulary" and t.frequency.counts.tolist() == [2, 1]


def test_unfitted_workflow_and_unknown_columns_raise_clear_errors(dataset: irs.Dataset) -> None:
    with pytest.raises(NotFittedError, match="call wf.fit"):
        EmbeddingReport(irs.Workflow(["c"] >> ops.Categorify()))
    with pytest.raises(SchemaError, match=r"columns \['nope'\] are not in the dataset"):
        EmbeddingReport(dataset, columns=["nope"])
    with pytest.raises(SchemaError, match="no categorical column"):
        EmbeddingReport(pd.DataFrame({"x": [1.0, 2.0]}))


# ---- dims, memory plan, rendering ------------------------------------------------------------
@pytest.mark.parametrize(("n", "dim"), [(1, 16), (100, 21), (1000, 77), (10**6, 512)])
def test_dims_rule(n: int, dim: int) -> None:
    assert irs.embedding_dim(n) == dim == min(512, max(16, round(1.6 * n**0.56)))


def test_dims_follow_the_rule_and_can_be_overridden(report: EmbeddingReport) -> None:
    r = EmbeddingReport(pd.DataFrame({"c": [f"v{i}" for i in range(5000)]}), dims={"c": 32})
    assert r.recommended_dim("c") == round(1.6 * 5003**0.56) and r.dim("c") == 32
    assert r.table_dict("c")["dim_overridden"] is True
    assert "32*" in repr(r)
    r.set_dim("c", None)
    assert r.dim("c") == r.recommended_dim("c")
    with pytest.raises(ParameterError, match=r"No embedding table named 'x'; the tables are"):
        r.set_dim("x", 8)
    with pytest.raises(ParameterError, match="must be an integer >= 1. Got 0"):
        r.set_dim("c", 0)


def test_plan_uses_cardinality_dims_and_settings(report: EmbeddingReport) -> None:
    r = EmbeddingReport(pd.DataFrame({"c": list("aabbc")}), dims={"c": 10}, dtype="fp16",
                        optimizer="adam", num_gpus=2, gpu_memory=1000)
    plan = r.plan()
    assert plan.table_bytes == {"c": 6 * 10 * 2 * 3}   # 2 reserved + 1 OOV + 3 values
    assert plan.row_wise.gpu_bytes == [180, 180]
    assert r.plan(optimizer="sgd").total_bytes == 120
    r.configure(num_gpus=3)
    assert r.to_dict()["plan"]["num_gpus"] == 3
    with pytest.raises(ParameterError, match="'optimizer' parameter must be one of"):
        r.configure(optimizer="lion")
    assert r.settings["optimizer"] == "adam"   # unchanged after the error
    with pytest.raises(ParameterError, match="Unknown memory plan settings"):
        r.configure(gpus=2)


def test_json_text_and_html(tmp_path: object, report: EmbeddingReport) -> None:
    path = os.path.join(str(tmp_path), "report.json")
    text = report.to_json(path)
    assert json.loads(text) == report.to_dict()
    with open(path) as f:
        assert f.read() == text
    d = report.to_dict()
    assert d["dims_rule"].startswith("dim = min(512, max(16, round(1.6 * cardinality ** 0.56)))")
    assert set(d["tables"]["tags"]["list_lengths"]) >= {"mean", "p50", "p99", "max",
                                                         "padding_waste"}
    text = repr(report)
    assert text.splitlines()[0] == "EmbeddingReport: 3 embedding tables from the data"
    assert "memory plan: fp32, optimizer sgd" in text and "table-wise" in text
    page = report._repr_html_()
    assert "class='irs-embedding-report'" in page and "class='irs-embedding-table'" in page


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=60), st.integers(0, 70),
       st.floats(0.01, 1.0), st.integers(0, 30), st.one_of(st.none(), st.integers(0, 70)))
def test_count_histogram_equals_numpy(counts: list[int], k: int, share: float,
                                      min_count: int, max_ids: int | None) -> None:
    h = CountHistogram.from_counts(counts)
    desc = np.sort(np.array(counts))[::-1]
    cum = np.cumsum(desc)
    assert h.n_ids == len(desc) and h.total == cum[-1]
    assert h.frequency_at_rank(np.arange(1, len(desc) + 1)).tolist() == desc.tolist()
    assert h.served(k) == (cum[min(k, len(desc)) - 1] if k else 0)
    assert h.ids_for_share(share) == int(np.argmax(cum / cum[-1] >= share)) + 1
    kept = desc[desc >= min_count][:max_ids]
    t = h.truncate(min_count, max_ids)
    assert t.n_ids == len(kept) and t.total == kept.sum()
    # combining the histograms of two halves gives the histogram of the whole
    half = len(counts) // 2
    both = CountHistogram.combine([CountHistogram.from_counts(counts[:half]),
                                   CountHistogram.from_counts(counts[half:])])
    assert both.counts.tolist() == h.counts.tolist() and both.ids.tolist() == h.ids.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80), st.floats(0.01, 1.0))
def test_length_stats_equal_numpy(lengths: list[int], q: float) -> None:
    s = LengthStats(np.bincount(lengths), index_bytes=4)
    arr = np.array(lengths)
    assert s.quantile(q) == np.percentile(arr, 100 * q, method="inverted_cdf")
    assert s.mean == pytest.approx(arr.mean()) and s.max == arr.max()
    assert s.padded_bytes == len(arr) * arr.max() * 4
    if arr.max():
        assert s.padding_waste == pytest.approx(1 - arr.sum() / (len(arr) * arr.max()))


def test_count_histogram_truncate_and_shares() -> None:
    h = CountHistogram.from_counts([9, 5, 5, 5, 1, 1])
    assert h.truncate(min_count=5).n_ids == 4
    kept = h.truncate(max_ids=2)
    assert kept.counts.tolist() == [9, 5] and kept.ids.tolist() == [1, 1]
    assert h.served([0, 1, 2, 6, 10]).tolist() == [0, 9, 14, 26, 26]
    assert h.ids_for_share(0.5) == 2 and h.ids_for_share(1.0) == 6


# ---- the widget ------------------------------------------------------------------------------
def test_view_controls_update_the_plan_live(report: EmbeddingReport) -> None:
    view = irs.ui.EmbeddingView(EmbeddingReport(pd.DataFrame(
        {"a": [f"a{i}" for i in range(3000)], "b": list("xy") * 1500})))
    assert view.plan_source.name == "irs-embedding-plan"
    assert view.plan_source.data["x"] == [("GPU 0", "table-wise"), ("GPU 0", "row-wise")]
    bytes_a = 3003 * view.report.dim("a") * 4
    assert view.plan_source.data["gib"][0] * 2**30 == pytest.approx(bytes_a + 5 * 16 * 4)
    view.num_gpus.value = 2
    assert len(view.plan_source.data["gib"]) == 4
    assert view.plan_figure.x_range.factors[-1] == ("GPU 1", "row-wise")
    assert view.plan_source.data["tables"][:2] == ["a", "b"]
    view.optimizer.value = "adam"
    assert view.report.plan().optimizer == "adam"
    assert view.plan_source.data["gib"][0] * 2**30 == pytest.approx(3 * bytes_a)
    view.dtype.value = "fp16"
    assert view.plan_source.data["gib"][0] * 2**30 == pytest.approx(3 * bytes_a / 2)
    view.gpu_gib.value = 0.001   # 1.07 MB: table a (2.6 MB) no longer fits on one GPU
    assert view.capacity.location == pytest.approx(0.001)
    data = view.plan_source.data
    assert data["tables"][:2] == ["b", ""]          # table-wise: a is left out
    assert data["color"][2:] == ["#d62728"] * 2     # row-wise: half of a is still too much
    assert "Too large for one GPU: a" in view.summary.value


def test_view_dim_override_and_curves(report: EmbeddingReport) -> None:
    view = irs.ui.EmbeddingView(report)
    assert view.frequency_source.data["name"] == ["c", "u", "tags"]
    assert view.coverage_source.data["ys"][0] == report.table_dict("c")["coverage"]["share"]
    view.table.value = "u"
    assert view.dim.value == report.recommended_dim("u")
    before = report.plan().table_bytes["u"]
    view.dim.value = 64
    view.set_dim_button.click()
    assert report.dim("u") == 64 and report.plan().table_bytes["u"] == 4 * before
    assert "64*" in view.summary.value
    view.reset_dim_button.click()
    assert report.dim("u") == view.dim.value == report.recommended_dim("u")
    assert view._repr_mimebundle_()["text/plain"] == repr(report)


def test_view_shows_errors_in_its_message_area() -> None:
    view = irs.ui.EmbeddingView(pd.DataFrame({"c": list("ab")}))
    assert view.message.layout.display == "none"
    view._set_dim(0)   # what a caller (e.g. the Studio) could pass: refused, shown, unchanged
    assert view.message.layout.display != "none"
    assert "must be an integer &gt;= 1. Got 0" in view.message.value
    assert view.report.dim("c") == 16
    view.set_dim_button.click()   # a valid action clears the message
    assert view.message.layout.display == "none"


# ---- the real Criteo sample (absent in CI) ---------------------------------------------------
@pytest.mark.skipif(not os.path.exists(CRITEO_SAMPLE), reason="Criteo sample not present")
def test_real_criteo_sample(tmp_path: object) -> None:
    raw = pd.read_csv(CRITEO_SAMPLE, sep="\t", header=None, dtype=str, keep_default_na=False)
    ds = irs.datasets.read_criteo(CRITEO_SAMPLE)
    cats = [f"C{i}" for i in range(1, 27)]
    report = EmbeddingReport(ds, columns=cats)
    for i, name in enumerate(cats):
        values = raw[14 + i].replace("", None)
        counts = sorted_counts(values)
        t = report.tables[name]
        assert t.cardinality == 3 + len(counts), name
        assert t.null_count == values.isna().sum(), name
        assert np.array_equal(t.frequency.frequency_at_rank(np.arange(1, len(counts) + 1)),
                              counts), name
    wf = new_workflow(cats >> ops.Categorify(), tmp_path)
    wf.fit(ds)
    from_wf = EmbeddingReport(wf)
    assert {n: t.cardinality for n, t in from_wf.tables.items()} == {
        n: t.cardinality for n, t in report.tables.items()}
    assert from_wf.to_dict()["tables"] == report.to_dict()["tables"] | {
        n: {**d, "source": "vocabulary"} for n, d in report.to_dict()["tables"].items()}


# ---- GPU (cuDF) ------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_dataset_gives_the_same_report(frame: pd.DataFrame) -> None:
    cpu = EmbeddingReport(irs.Dataset(frame, backend="cpu")).to_dict()
    gpu = EmbeddingReport(irs.Dataset(frame, backend="gpu")).to_dict()
    assert gpu == cpu
