"""predict_topk's grouping of users: files sorted by user need no shuffle (parquet
statistics prove it), anything else is shuffled; and the output guard sees the input files."""

from __future__ import annotations

import os
from collections import Counter

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import DatasetError
from interactive_recsys.models import Popularity
from interactive_recsys.models._predict import user_partitions
from tests.interactions_data import make_interactions


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return make_interactions(n_users=60, n_items=40, per_user=10, seed=3)


def _write(frame: pd.DataFrame, folder: str, cuts: list[int]) -> str:
    """``frame``'s rows cut at the row positions ``cuts``, one parquet file per piece."""
    os.makedirs(folder)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for i, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(frame)], strict=True)):
        pq.write_table(table.slice(lo, hi - lo), os.path.join(folder, f"part-{i}.parquet"))
    return folder


def _sorted_with_split_users(data: pd.DataFrame) -> tuple[pd.DataFrame, list[int]]:
    """Rows sorted by user, cut inside users; one user's rows span three files, one file
    holds that user only."""
    frame = data.sort_values(["user_id", "item_id"], kind="stable").reset_index(drop=True)
    starts = frame.index[frame["user_id"] != frame["user_id"].shift()].tolist()
    big = starts[20]  # a user cut twice: files 1..3 all hold some of its rows
    return frame, [starts[7] + 2, big + 1, big + 3, starts[40] + 1]


def _groups(parts: list) -> list[pd.DataFrame]:
    return [irs.backend.get_backend("cpu").to_pandas(p) for p in dask.compute(*parts)]


def test_sorted_files_are_grouped_without_a_shuffle(data: pd.DataFrame, tmp_path: object) -> None:
    frame, cuts = _sorted_with_split_users(data)
    ds = irs.Dataset(_write(frame, str(tmp_path / "users"), cuts), backend="cpu")
    assert ds.npartitions == len(cuts) + 1
    parts = user_partitions(ds, ["user_id", "item_id"], "user_id")
    graph = dict(dask.delayed(list)(parts).__dask_graph__())
    assert not [k for k in graph if "shuffle" in str(k)]
    groups = _groups(parts)
    owners = Counter(u for g in groups for u in set(g["user_id"]))
    assert set(owners) == set(frame["user_id"]) and set(owners.values()) == {1}
    rows = sorted(r for g in groups for r in zip(g["user_id"], g["item_id"], strict=True))
    assert rows == sorted(zip(frame["user_id"], frame["item_id"], strict=True))


def test_unsorted_files_are_shuffled(data: pd.DataFrame, tmp_path: object) -> None:
    frame = data.sample(frac=1, random_state=0).reset_index(drop=True)  # ranges overlap
    ds = irs.Dataset(_write(frame, str(tmp_path / "users"), [100, 250, 400]), backend="cpu")
    parts = user_partitions(ds, ["user_id", "item_id"], "user_id")
    graph = dict(dask.delayed(list)(parts).__dask_graph__())
    assert [k for k in graph if "shuffle" in str(k)]
    owners = Counter(u for g in _groups(parts) for u in set(g["user_id"]))
    assert set(owners) == set(frame["user_id"]) and set(owners.values()) == {1}


def test_predictions_from_sorted_files_equal_those_from_a_frame(data: pd.DataFrame,
                                                                 tmp_path: object) -> None:
    frame, cuts = _sorted_with_split_users(data)
    ds = irs.Dataset(_write(frame, str(tmp_path / "users"), cuts), backend="cpu")
    model = Popularity().fit(data)
    got = irs.backend.get_backend("cpu").to_pandas(irs.predict_topk(model, ds, k=5).compute())
    want = irs.predict_topk(model, data.sample(frac=1, random_state=2), k=5).compute()
    key = ["user_id", "rank"]
    got, want = (t.sort_values(key).reset_index(drop=True) for t in (got, want))
    assert (got.groupby("user_id").size() == 5).all()  # each user once, not once per file
    np.testing.assert_array_equal(got[["user_id", "rank", "item_id"]].to_numpy(),
                                  want[["user_id", "rank", "item_id"]].to_numpy())


def test_output_may_not_replace_the_users_files(data: pd.DataFrame, tmp_path: object) -> None:
    folder = _write(data, str(tmp_path / "users"), [200])
    model = Popularity().fit(data)
    for target in (folder, str(tmp_path)):  # the input folder, or a folder holding it
        with pytest.raises(DatasetError, match="Refusing to write.*the input"):
            irs.predict_topk(model, irs.Dataset(folder), k=3, output=target, overwrite=True)
    assert sorted(os.listdir(folder)) == ["part-0.parquet", "part-1.parquet"]
    summary = irs.predict_topk(model, irs.Dataset(folder), k=3, output=tmp_path / "top")
    assert summary["num_rows"] == 3 * data["user_id"].nunique()
