"""Saved statistics are checked for consistency at load; consistent ones size the tables.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.embedding import embedding_sizes
from interactive_recsys.errors import WorkflowFormatError
from tests.helpers import digest


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
