"""``irs.torchrec.embedding_configs``: real TorchRec tables from the output schema."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError, SchemaError

torch = pytest.importorskip("torch")
torchrec = pytest.importorskip("torchrec")


def _fitted(tmp_path):
    rng = np.random.default_rng(5)
    rows = 400
    df = pd.DataFrame({
        "user": rng.choice([f"u{k}" for k in range(50)], rows),
        "src": rng.choice([f"p{k}" for k in range(9)], rows),
        "dst": rng.choice([f"p{k}" for k in range(12)], rows),
        "x": rng.random(rows),
        "label": rng.integers(0, 2, rows),
    })
    wf = irs.Workflow((["user"] >> ops.Categorify())
                      + ([["src", "dst"]] >> ops.Categorify(encode_type="joint"))
                      + ["x", "label"], artifacts_dir=str(tmp_path / "wf"))
    out = wf.fit_transform(irs.Dataset(df, tags={"label": ["target"], "x": ["continuous"]}))
    return df, wf, out


def test_configs_follow_the_schema_and_the_report(tmp_path):
    df, wf, out = _fitted(tmp_path)
    report = irs.stats.EmbeddingReport(wf)
    joint = next(name for name, t in report.tables.items() if "src" in t.columns)
    report.set_dim(joint, 6)
    configs = irs.torchrec.embedding_configs(wf, dims=report)
    assert all(isinstance(c, torchrec.EmbeddingBagConfig) for c in configs)
    by_features = {tuple(c.feature_names): c for c in configs}
    assert set(by_features) == {("user",), ("src", "dst")}
    # 2 reserved rows + 1 out-of-vocabulary row + the distinct values (the joint table: both)
    assert by_features[("user",)].num_embeddings == 3 + df["user"].nunique()
    assert by_features[("src", "dst")].num_embeddings == 3 + len(set(df["src"]) | set(df["dst"]))
    assert by_features[("src", "dst")].embedding_dim == 6  # the report's override
    assert by_features[("user",)].embedding_dim == report.dim("user") == 16
    # the same from the written output directory and its _schema.json
    out.to_parquet(tmp_path / "out")
    again = irs.torchrec.embedding_configs(tmp_path / "out", dims=report)
    assert [(c.name, c.num_embeddings, c.embedding_dim, c.feature_names) for c in again] == [
        (c.name, c.num_embeddings, c.embedding_dim, c.feature_names) for c in configs]


def test_an_embedding_bag_collection_runs_on_loader_batches(tmp_path):
    _, _, out = _fitted(tmp_path)
    out.to_parquet(tmp_path / "out")
    configs = irs.torchrec.embedding_configs(tmp_path / "out", dims=4)
    ebc = torchrec.EmbeddingBagCollection(tables=configs, device=torch.device("cpu"))
    batch = next(iter(irs.Loader(str(tmp_path / "out"), batch_size=32, shuffle=False)))
    kjt = batch.sparse.to_torchrec()
    pooled = ebc(kjt)
    assert pooled.keys() == ["user", "src", "dst"]
    assert tuple(pooled.values().shape) == (32, 12)
    # one id per row and key: the pooled vector is that id's row of the table's weights
    weights = {c.name: ebc.embedding_bags[c.name].weight.detach() for c in configs}
    frame = out.compute()
    table_of = {f: c.name for c in configs for f in c.feature_names}
    for key in ("user", "src", "dst"):
        ids = torch.tensor(np.array(frame[key].to_numpy()[:32]))
        torch.testing.assert_close(pooled[key].detach(), weights[table_of[key]][ids])


def test_bad_dims_and_missing_cardinality_are_clear():
    schema = irs.Schema([irs.ColumnSchema("c", "int64", {"categorical"})])
    with pytest.raises(SchemaError, match="'c' is categorical but has no cardinality"):
        irs.torchrec.embedding_configs(schema)
    ok = irs.Schema([irs.ColumnSchema("c", "int64", {"categorical"}, {"cardinality": 4})])
    with pytest.raises(ParameterError, match="'dims' parameter"):
        irs.torchrec.embedding_configs(ok, dims="big")
    with pytest.raises(ParameterError, match="'pooling' parameter"):
        irs.torchrec.embedding_configs(ok, pooling="MAX")
