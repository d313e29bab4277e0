"""irs.ui.Experiments (JSON lines, table, Bokeh curves) and the `irs predict` command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.cli._main import main
from interactive_recsys.models import EASE, Popularity
from tests.interactions_data import make_interactions


@pytest.fixture(scope="module")
def split() -> tuple[pd.DataFrame, pd.DataFrame]:
    data = make_interactions(n_users=60, n_items=40, per_user=10, seed=2)
    train, test = irs.eval.split(data, seed=0)
    return train.compute(), test.compute()


def test_experiments_record_table_and_curves(tmp_path: Path, split: tuple) -> None:
    train, test = split
    exp = irs.ui.Experiments(tmp_path / "nb" / "runs.jsonl")
    pop = exp.evaluate(Popularity().fit(train), train, test, ks=(1, 5, 10), data="gen")
    ease = exp.evaluate(EASE(l2=5.0).fit(train), train, test, ks=(1, 5, 10), data="gen",
                        name="ease small l2")
    lines = (tmp_path / "nb" / "runs.jsonl").read_text().splitlines()
    assert [json.loads(line)["run"] for line in lines] == [0, 1]
    again = irs.ui.Experiments(tmp_path / "nb" / "runs.jsonl").runs()  # a new session
    assert again[1]["params"] == {"l2": 5.0} and again[1]["name"] == "ease small l2"
    assert again[0]["metrics"] == pop["metrics"] and again[1]["info"]["users"] == 60
    want = irs.eval.ranking_metrics(irs.predict_topk(EASE(l2=5.0).fit(train), train,
                                                     k=10), test, ks=(1, 5, 10))
    assert ease["metrics"]["precision@5"] == pytest.approx(want["precision@5"])
    table = exp.table(["precision@5", "recall@10"])
    assert table.columns.tolist() == ["run", "name", "data", "fit_s", "precision@5",
                                      "recall@10"]
    assert table["recall@10"].tolist() == [pop["metrics"]["recall@10"],
                                          ease["metrics"]["recall@10"]]
    layout = exp.curves()
    assert [f.name for f in layout.children] == ["experiments-precision", "experiments-recall"]
    recall = layout.children[1]
    sources = {r.data_source.name: r.data_source.data for r in recall.renderers}
    assert sources["experiments-recall-run1"]["k"] == [1, 5, 10]
    assert sources["experiments-recall-run1"]["value"] == [ease["metrics"][f"recall@{k}"]
                                                           for k in (1, 5, 10)]
    assert len(exp.curves(runs=[1]).children[0].renderers) == 2  # line + markers of run 1
    # the legend is outside the data, what differs between the runs first
    [legend] = recall.below[-1:] if recall.below else [None]
    assert legend is not None and type(legend).__name__ == "Legend"
    assert not [m for m in recall.center if type(m).__name__ == "Legend"]  # none inside
    assert [item.label.value for item in legend.items] == ["0: Popularity()",
                                                          "1: ease small l2"]
    small = exp.evaluate(EASE(l2=50.0).fit(train), train, test, ks=(1, 5, 10), data="gen")
    labels = [i.label.value for i in exp.curves().children[1].below[-1].items]
    assert labels == ["0: Popularity()", "1: l2=5.0 · ease small l2", "2: l2=50.0 · EASE"]
    assert small["run"] == 2
    assert legend.click_policy == "hide"


def test_a_data_url_is_recorded_without_its_password(tmp_path: Path, split: tuple) -> None:
    train, _ = split
    exp = irs.ui.Experiments(tmp_path / "runs.jsonl")
    exp.record(Popularity().fit(train), data="https://ann:S3CR3T-PW@data.example/day1/")
    text = (tmp_path / "runs.jsonl").read_text()
    assert "S3CR3T-PW" not in text
    assert exp.runs()[0]["data"] == "https://***@data.example/day1/"


def test_cli_predict(tmp_path: Path, split: tuple) -> None:
    train, _ = split
    model = EASE(l2=5.0).fit(train)
    model.save(tmp_path / "model")
    users = tmp_path / "users.parquet"
    train.to_parquet(users)
    code = main(["predict", "--model", str(tmp_path / "model"), "--users", str(users),
                 "--k", "7", "--output", str(tmp_path / "top"), "--local"])
    assert code == 0
    got = irs.Dataset(str(tmp_path / "top")).compute()
    want = irs.predict_topk(model, train, k=7).compute()
    key = ["user_id", "rank"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  want.sort_values(key).reset_index(drop=True))
    assert np.all(got.groupby("user_id").size() == 7)
    assert main(["predict", "--model", str(tmp_path / "nothing"), "--users", str(users),
                 "--output", str(tmp_path / "x"), "--local"]) == 2
