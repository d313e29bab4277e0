"""Silent wrong results found in the second round of bad input (issue 23): each now gives
the right result, or a clear error naming the column / file / field and the fix, checked
against an independent expectation (pandas, a hand count, the saved file's own numbers).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.embedding import embedding_sizes
from interactive_recsys.errors import DatasetError, ParameterError, WorkflowFormatError
from interactive_recsys.models import EASE, ModelFormatError, Popularity
from tests.test_bad_inputs import digest, expected_ids


# ---- 5. -0.0 and 0.0 are one value ----------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_categorify_counts_minus_zero_as_zero_like_pandas(dtype):
    values = [0.0, -0.0, -0.0, 1.5, -0.0, 1.5, 2.0]
    df = pd.DataFrame({"f": np.array(values, dtype=dtype)})
    out = irs.Workflow(["f"] >> ops.Categorify()).fit_transform(df)["f"].tolist()
    assert df["f"].value_counts()[0.0] == 4  # pandas: one value, 4 times
    assert out == expected_ids([v + 0.0 for v in values])  # -0.0 + 0.0 == 0.0
    hashed = irs.Workflow(["f"] >> ops.HashBucket(1000)).fit_transform(df)["f"].tolist()
    assert len({o for o, v in zip(out, values, strict=True) if v == 0}) == 1
    assert len({h for h, v in zip(hashed, values, strict=True) if v == 0}) == 1


# ---- 6. a header-only csv beside a data csv -------------------------------------------------
@pytest.mark.parametrize("empty_first", [True, False])
def test_header_only_csv_beside_a_data_csv_keeps_the_types(tmp_path, empty_first):
    (tmp_path / "a.csv").write_text("n,s\n" if empty_first else "n,s\n1,x\n2,y\n")
    (tmp_path / "b.csv").write_text("n,s\n1,x\n2,y\n" if empty_first else "n,s\n")
    ds = irs.Dataset(str(tmp_path))
    assert ds.schema["n"].dtype == "int64" and ds.schema["s"].dtype == "string"
    got = irs.Workflow(["n"] >> ops.Normalize()).fit_transform(ds).compute()
    assert got["n"].tolist() == [-1.0, 1.0]  # (n - 1.5) / 0.5
    assert len(ds.files) == 2  # the empty file is still an input (output guards)


# ---- 7. stored statistics are checked for consistency at load --------------------------------
def _saved(tmp_path, num_buckets=None):
    df = pd.DataFrame({"c": ["a", "b", "a", "c", "d", None], "x": [1.0, 2, 3, 4, 5, 6]})
    wf = irs.Workflow((["c"] >> ops.Categorify(num_buckets=num_buckets))
                      + (["x"] >> ops.Normalize()))
    return wf.fit(df).save(tmp_path / "saved"), wf


def _edit(saved, change):
    path = os.path.join(saved, "workflow.json")
    with open(path) as f:
        config = json.load(f)
    change(config["states"])
    with open(path, "w") as f:
        json.dump(config, f)


def _categorify_state(states):
    return next(s for s in states.values() if "vocabs" in s)["vocabs"]["c"]


def _normalize_state(states):
    return next(s for s in states.values() if "stds" in s)


STATE_EDITS = {
    "cardinality below the ids": (lambda s: _categorify_state(s).update(cardinality=2),
                                  r"cardinality is 2, but 3 reserved rows .* 4 values need 7"),
    "cardinality above the ids": (lambda s: _categorify_state(s).update(cardinality=70),
                                  r"cardinality is 70, .* need 7"),
    "negative std": (lambda s: _normalize_state(s)["stds"].update(x=-1.5),
                     r"stds\['x'\] must be >= 0 or null.*-1\.5"),
    "negative null count": (lambda s: _categorify_state(s).update(null_count=-1),
                            r"null_count must be a whole number >= 0"),
    "counts that do not add up": (lambda s: _categorify_state(s).update(oov_count=99),
                                  r"null_count \+ oov_count exceed value_count"),
}


@pytest.mark.parametrize("case", list(STATE_EDITS))
def test_inconsistent_statistics_are_refused_at_load(case, tmp_path):
    saved, _ = _saved(tmp_path)
    change, message = STATE_EDITS[case]
    _edit(saved, change)
    before = digest(tmp_path)
    with pytest.raises(WorkflowFormatError, match=message) as info:
        irs.Workflow.load(saved)
    assert "workflow.json" in str(info.value) and "states." in str(info.value)
    assert digest(tmp_path) == before


@pytest.mark.parametrize("num_buckets", [None, 3])
def test_saved_statistics_still_load_and_size_the_tables(tmp_path, num_buckets):
    saved, _ = _saved(tmp_path, num_buckets)
    loaded = irs.Workflow.load(saved)
    ids = loaded.transform(pd.DataFrame({"c": ["a", "d"], "x": [1.0, 2.0]}))["c"]
    cardinality = embedding_sizes(loaded)["c"][0]
    assert cardinality == 2 + (num_buckets or 1) + 4 and ids.max() < cardinality
    _edit(saved, lambda s: _normalize_state(s)["stds"].update(x=0.0))  # a constant column
    assert irs.Workflow.load(saved).transform(
        pd.DataFrame({"c": ["a"], "x": [7.0]}))["x"].tolist() == [7.0 - 3.5]


# ---- 8. tampered model arrays -----------------------------------------------------------------
@pytest.fixture
def interactions():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"user_id": np.repeat(np.arange(30), 4),
                         "item_id": rng.integers(0, 12, 120)})


def _tamper(folder, **changes):
    path = os.path.join(folder, "arrays.npz")
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays.update(changes)
    np.savez(path, **arrays)


def _items(folder):
    with np.load(os.path.join(folder, "arrays.npz")) as npz:
        return npz["__items__"]


TAMPERED = {
    "items all 0": (lambda f, n: {"__items__": np.zeros(n, np.int64)}, r"repeats item ids"),
    "weights (n, n+3)": (lambda f, n: {"B": np.zeros((n, n + 3))},
                         r"'B' has shape \(\d+, \d+\); \d+ items need \(\d+, \d+\)"),
    "NaN weights": (lambda f, n: {"B": np.full((n, n), np.nan)}, r"'B' holds \d+ NaN/inf"),
    "inf weights": (lambda f, n: {"B": np.where(np.eye(n) > 0, np.inf, 0.0)}, r"'B' holds \d+ NaN/inf"),
    "string weights": (lambda f, n: {"B": np.full((n, n), "x")}, r"'B' has dtype <U1"),
    "weights missing": (lambda f, n: {"B": np.zeros(0)}, r"'B' has shape \(0,\)"),
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_tampered_model_arrays_are_refused_at_load(case, interactions, tmp_path):
    folder = EASE(l2=10.0).fit(interactions).save(tmp_path / "model")
    make, message = TAMPERED[case]
    _tamper(folder, **make(folder, len(_items(folder))))
    before = digest(tmp_path)
    with pytest.raises(ModelFormatError, match=message) as info:
        irs.models.load(folder)
    assert "arrays.npz" in str(info.value) and "save the model again" in str(info.value)
    assert digest(tmp_path) == before


def test_tampered_popularity_counts_are_refused(interactions, tmp_path):
    folder = Popularity().fit(interactions).save(tmp_path / "model")
    _tamper(folder, counts=np.ones(3))
    with pytest.raises(ModelFormatError, match=r"'counts' has shape \(3,\)"):
        irs.models.load(folder)


def test_untampered_model_still_loads_and_scores_alike(interactions, tmp_path):
    model = EASE(l2=10.0).fit(interactions)
    loaded = irs.models.load(model.save(tmp_path / "model"))
    np.testing.assert_array_equal(loaded.score_frame(interactions)[1],
                                  model.score_frame(interactions)[1])


@pytest.mark.parametrize("l2", [float("inf"), float("nan"), -1.0])
def test_ease_refuses_a_regularization_that_is_not_finite_and_positive(l2):
    with pytest.raises(ParameterError, match=rf"'l2' parameter of EASE .*Got {l2!r}"):
        EASE(l2=l2)


# ---- 10. HugeCTR output without a label ---------------------------------------------------------
def test_hugectr_output_without_a_target_is_refused_naming_the_fix(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", "a"], "label": [1, 0, 1]})
    wf = irs.Workflow((["c"] >> ops.Categorify()) + ["label"])
    out = wf.fit_transform(irs.Dataset(df))
    with pytest.raises(DatasetError, match=re.escape("ops.AddTags(['target'])")) as info:
        out.to_parquet(tmp_path / "out", hugectr=True)
    assert "tagged 'target'" in str(info.value) and os.listdir(tmp_path) == []
    tagged = irs.Workflow((["c"] >> ops.Categorify()) + (["label"] >> ops.AddTags(["target"])))
    written = tagged.fit_transform(irs.Dataset(df)).to_parquet(tmp_path / "ok", hugectr=True)
    assert written["hugectr"]["labels"] == ["label"]
