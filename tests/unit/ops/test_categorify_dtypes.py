"""Categorify on odd dtypes: all-null columns, timestamps, decimals and dates by value.
"""

from __future__ import annotations

import decimal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from tests.helpers import expected_ids


# ---- clear errors: odd dtypes into categorical encoders ------------------------------------------
def test_all_null_column_encodes_as_null_ids(tmp_path):
    path = tmp_path / "data.parquet"
    pd.DataFrame({"c": [None, None, None], "h": [None, None, None]}).to_parquet(path)
    assert pq.read_schema(path).field("c").type == pa.null()  # what pandas writes
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["h"] >> ops.HashBucket(10)))
    out = wf.fit_transform(irs.Dataset(str(path))).to_ddf().compute()
    assert out["c"].tolist() == [1, 1, 1] and out["h"].tolist() == [1, 1, 1]
    assert wf.output_schema["c"].cardinality == 3  # padding, null, OOV: no vocabulary


@pytest.mark.parametrize("kind", ["timestamp", "decimal", "date"])
def test_timestamps_and_decimals_are_encoded_by_value(kind):
    raw = {"timestamp": [pd.Timestamp("2024-01-02"), pd.Timestamp("2024-01-01"),
                         pd.Timestamp("2024-01-02"), None, pd.Timestamp("2023-05-05")],
           "decimal": [decimal.Decimal("2.50"), decimal.Decimal("1.25"),
                       decimal.Decimal("2.50"), None, decimal.Decimal("0.10")],
           "date": [pd.Timestamp("2024-01-02").date(), pd.Timestamp("2024-01-01").date(),
                    pd.Timestamp("2024-01-02").date(), None, pd.Timestamp("2023-05-05").date()]}
    arrow = {"timestamp": pa.timestamp("us"), "decimal": pa.decimal128(6, 2),
             "date": pa.date32()}[kind]
    values = raw[kind]
    df = pd.DataFrame({"v": pd.array(values, dtype=pd.ArrowDtype(arrow))})
    out = irs.Workflow(["v"] >> ops.Categorify()).fit_transform(df)
    assert out["v"].tolist() == expected_ids(values)
    hashed = irs.Workflow(["v"] >> ops.HashBucket(1000)).fit_transform(df)["v"].tolist()
    assert hashed[0] == hashed[2] != hashed[1] and hashed[3] == 1
