"""Saved model arrays are checked at load: tampered arrays and counts refused, EASE's l2
checked.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ParameterError
from interactive_recsys.models import EASE, ModelFormatError, Popularity
from tests.helpers import digest


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
