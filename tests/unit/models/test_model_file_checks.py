"""Saved model arrays are checked at load: a weights file changed since the save is refused by
the SHA-256 that model.json records (as a workflow's artifacts are), arrays that are consistent
with their record but unusable by their contents, and EASE's l2 is checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ChecksumWarning, ParameterError
from interactive_recsys.models import EASE, ModelFormatError, Popularity
from tests.helpers import digest


# ---- 8. tampered model arrays -----------------------------------------------------------------
@pytest.fixture
def interactions():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"user_id": np.repeat(np.arange(30), 4),
                         "item_id": rng.integers(0, 12, 120)})


def _tamper(folder, **changes):
    """Rewrite arrays.npz with ``changes`` and record its new SHA-256, as a save would: the
    contents checks, not the checksum, must refuse it."""
    path = os.path.join(folder, "arrays.npz")
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays.update(changes)
    np.savez(path, **arrays)
    _edit_meta(folder, lambda meta: meta["sha256"].update({"arrays.npz": _sha256(path)}))


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _edit_meta(folder, change):
    path = os.path.join(folder, "model.json")
    with open(path) as f:
        meta = json.load(f)
    change(meta)
    with open(path, "w") as f:
        json.dump(meta, f)


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


# ---- issue 50, item 6: model folders are SHA-256 checked, as workflow folders are ------------
def _change_one_weight(folder):
    """A valid npz of the same size, one weight changed (its zip CRC is right)."""
    path = os.path.join(folder, "arrays.npz")
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["B"][0, 1] += 0.5
    np.savez(path, **arrays)


def _flip_one_byte(folder):
    """One byte of a weight flipped in place (the zip's CRC no longer matches)."""
    path = os.path.join(folder, "arrays.npz")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    with np.load(path) as npz:  # a weight's byte: inside the data of B, not zip metadata
        weights = npz["B"].tobytes()
    data[data.find(weights) + len(weights) // 2] ^= 0x01
    with open(path, "wb") as f:
        f.write(data)


def _truncate(folder):
    path = os.path.join(folder, "arrays.npz")
    os.truncate(path, os.path.getsize(path) // 2)


CHANGED = "changed after the model was saved"
DAMAGED = {  # how the folder is damaged: what the error says
    "one weight changed, same size": (_change_one_weight, CHANGED),
    "one byte flipped, same size": (_flip_one_byte, CHANGED),
    "arrays.npz truncated": (_truncate, CHANGED),
    "arrays.npz deleted": (lambda d: os.remove(os.path.join(d, "arrays.npz")),
                           "'arrays.npz' is missing from"),
    "record of another digest": (lambda d: _edit_meta(d, lambda m: m["sha256"].update(
        {"arrays.npz": hashlib.sha256(b"other").hexdigest()})), CHANGED),
    "record not a digest": (lambda d: _edit_meta(d, lambda m: m["sha256"].update(
        {"arrays.npz": "abc"})), "the field 'sha256' must record the SHA-256 of arrays.npz"),
    "record of another file": (lambda d: _edit_meta(d, lambda m: m.update(
        {"sha256": {"../arrays.npz": "0" * 64}})), "the field 'sha256' must record"),
    "record a list": (lambda d: _edit_meta(d, lambda m: m.update({"sha256": ["x"]})),
                      "the field 'sha256' must record"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_model_folder_changed_since_its_save_is_refused_naming_the_file(case, interactions,
                                                                          tmp_path):
    model = EASE(l2=10.0).fit(interactions)
    folder = model.save(tmp_path / "model")
    size = os.path.getsize(os.path.join(folder, "arrays.npz"))
    damage, message = DAMAGED[case]
    damage(folder)
    if "same size" in case:
        assert os.path.getsize(os.path.join(folder, "arrays.npz")) == size
    if case.startswith("one weight"):  # the npz reads, other weights: only the record tells
        with np.load(os.path.join(folder, "arrays.npz")) as npz:
            assert not np.array_equal(npz["B"], model.arrays_["B"])
    before = digest(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused, not loaded with a warning
        with pytest.raises(ModelFormatError) as info:
            irs.models.load(folder)
    text = str(info.value)
    assert message in text and "arrays.npz" in text and "model.json" in text
    assert "save the model again" in text
    assert not isinstance(info.value, zipfile.BadZipFile) and info.value.__cause__ is None
    assert digest(tmp_path) == before  # a load only reads


def test_the_record_is_the_sha256_of_the_saved_weights_file(interactions, tmp_path):
    folder = Popularity().fit(interactions).save(tmp_path / "model")
    with open(os.path.join(folder, "model.json")) as f:
        record = json.load(f)["sha256"]
    assert record == {"arrays.npz": _sha256(os.path.join(folder, "arrays.npz"))}


def test_a_model_saved_without_a_record_loads_with_a_warning_naming_the_fix(interactions,
                                                                            tmp_path):
    """As a workflow folder saved by an older version: accepted, its files unchecked, said."""
    model = EASE(l2=10.0).fit(interactions)
    folder = model.save(tmp_path / "model")
    _edit_meta(folder, lambda meta: meta.pop("sha256"))
    with pytest.warns(ChecksumWarning) as caught:
        loaded = irs.models.load(folder)
    text = str(caught[0].message)
    assert os.path.join(folder, "model.json") in text and "'arrays.npz'" in text
    assert "older version" in text and "save the model again" in text
    assert caught[0].filename == __file__  # points at the caller's load
    np.testing.assert_array_equal(loaded.score_frame(interactions)[1],
                                  model.score_frame(interactions)[1])


def test_a_truncated_model_saved_without_a_record_is_a_format_error_not_bad_zip(interactions,
                                                                              tmp_path):
    folder = EASE(l2=10.0).fit(interactions).save(tmp_path / "model")
    _edit_meta(folder, lambda meta: meta.pop("sha256"))
    _truncate(folder)
    with pytest.warns(ChecksumWarning), pytest.raises(
            ModelFormatError, match=r"arrays\.npz' cannot be read .*save the model again"):
        irs.models.load(folder)
