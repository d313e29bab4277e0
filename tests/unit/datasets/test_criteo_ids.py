"""``irs criteo --to torchrec`` and ``--to parquet`` on the same days: the documented relation
of their ids (``_criteo_ids``), row by row on both real outputs."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.datasets import (
    CRITEO_CATEGORICAL,
    criteo_to_torchrec,
    parquet_ids_from_torchrec,
    synthetic_criteo,
    torchrec_ids_from_parquet,
)
from interactive_recsys.datasets._criteo_tsv import write_criteo_tsv
from interactive_recsys.errors import ParameterError

DAYS = 2


def _days(root: str, rows: int) -> str:
    """Day files of the kaggle profile (8 lower-case hex digits per id, missing ids in 11 of
    the 26 columns), plus one row whose C1 is missing: C1 has no other missing id, so with a
    threshold its missing id is infrequent (1 in TorchRec's numbering)."""
    folder = os.path.join(root, "in")
    os.makedirs(folder)
    for d in range(DAYS):
        path = os.path.join(folder, f"day_{d}")
        write_criteo_tsv(
            synthetic_criteo(rows, seed=10 + d, path=os.path.join(root, f"p{d}"), profile="kaggle"),
            path,
        )
        if d == 0:
            with open(path) as f:
                first = f.readline().rstrip("\n").split("\t")
            with open(path, "a") as f:
                f.write("\t".join([*first[:14], "", *first[15:]]) + "\n")
    return folder


def _want_missing_id(sparse: np.ndarray, threshold: int) -> int:
    """Where TorchRec's numbering puts the id 0 (a missing id), from the counts: 2 + the
    kept ids before it (more frequent, or as frequent and smaller: none is smaller than 0)."""
    values, counts = np.unique(sparse, return_counts=True)
    if not len(values) or values[0] != 0 or counts[0] < threshold:
        return 1
    kept = counts >= threshold
    return 2 + int(np.sum(kept & (counts > counts[0])))


@pytest.mark.parametrize("threshold", [0, 3])
def test_torchrec_and_parquet_ids_relate_row_by_row(tmp_path, threshold):
    folder = _days(str(tmp_path), rows=700)
    summary = criteo_to_torchrec(
        folder, tmp_path / "t", frequency_threshold=threshold, progress=False
    )
    criteo_to_torchrec(
        folder, tmp_path / "p", to="parquet", frequency_threshold=threshold, progress=False
    )
    out = tmp_path / "t"
    sparse = [np.load(out / f"day_{d}_sparse.npy") for d in range(DAYS)]
    contig = [np.load(out / f"day_{d}_sparse_contig_freq.npy") for d in range(DAYS)]
    parquet = irs.Dataset(str(tmp_path / "p" / "data")).compute()[CRITEO_CATEGORICAL]
    parquet = parquet.to_numpy(np.int64)
    assert len(parquet) == sum(len(s) for s in sparse)  # one row per line, in file order

    # the summary says where a missing id went, as the counts say
    missing = json.loads((out / "_summary.json").read_text())["missing_ids"]
    assert missing == summary["missing_ids"]
    every = np.concatenate(sparse)
    assert missing == {
        f"cat_{j}": _want_missing_id(every[:, j], threshold) for j in range(len(CRITEO_CATEGORICAL))
    }
    z = np.array(list(missing.values()))
    assert (z >= 3).any()  # kept ids on both sides of the missing id: both offsets occur
    assert ((z == 1) & (every == 0).any(axis=0)).any() == (threshold > 1)  # C1's single one

    # the relation, file by file: the function, and the guide's table written out here
    start = 0
    for s, c in zip(sparse, contig, strict=True):
        rows = parquet[start : start + len(s)]
        start += len(s)
        np.testing.assert_array_equal(parquet_ids_from_torchrec(s, c, missing), rows)
        np.testing.assert_array_equal(torchrec_ids_from_parquet(rows, missing), c)
        np.testing.assert_array_equal(torchrec_ids_from_parquet(rows, list(missing.values())), c)
        want = np.where(s == 0, 1, np.where(c == 1, 2, np.where((z == 1) | (c < z), c + 1, c)))
        np.testing.assert_array_equal(rows, want)
    # the ids differ by column and row (the offsets): no single shift relates them
    offsets = {int(v) for v in np.unique(parquet - np.concatenate(contig))}
    assert {1, 0} <= offsets and min(offsets) < 0


def test_the_relation_by_hand_and_bad_arguments():
    # one column: ids 7 (most frequent), then the missing id (contiguous 3), then 9; 5 rare
    sparse = np.array([[0], [7], [9], [5], [0]])
    contig = np.array([[3], [2], [4], [1], [3]])
    assert parquet_ids_from_torchrec(sparse, contig, [3]).ravel().tolist() == [1, 3, 4, 2, 1]
    # the missing id infrequent (1, as the rare 5): the sparse ids tell them apart
    contig = np.array([[1], [2], [3], [1], [1]])
    got = parquet_ids_from_torchrec(sparse, contig, {"cat_0": 1})
    assert got.ravel().tolist() == [1, 3, 4, 2, 1]
    assert torchrec_ids_from_parquet(got, [1]).ravel().tolist() == [1, 2, 3, 1, 1]
    with pytest.raises(ParameterError, match="missing_ids has no 'cat_1'"):
        parquet_ids_from_torchrec(np.ones((2, 2), int), np.ones((2, 2), int), {"cat_0": 1})
    with pytest.raises(ParameterError, match="one id >= 1 per column"):
        torchrec_ids_from_parquet(np.ones((2, 2), int), [0, 2])
    with pytest.raises(ParameterError, match="same shape"):
        parquet_ids_from_torchrec(np.ones((2, 1), int), np.ones((3, 1), int), [1])
    with pytest.raises(ParameterError, match="2-D integer array"):
        torchrec_ids_from_parquet(pd.Series([1.5]).to_numpy(), [1])
    with pytest.raises(ParameterError, match="holds 0, below 1"):
        torchrec_ids_from_parquet(np.zeros((1, 1), int), [1])
