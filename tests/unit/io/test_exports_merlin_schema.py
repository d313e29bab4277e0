"""Merlin's schema (``.merlin/schema.json`` + ``.merlin/schema.pbtxt``) next to every parquet
output, parsed with protobuf's own text-format and JSON parsers into tensorflow_metadata's
``Schema`` message (the message Merlin reads)."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
from google.protobuf import json_format, struct_pb2, text_format
from tensorflow_metadata.proto.v0 import schema_pb2

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.io._merlin_schema import to_json, to_pbtxt
from interactive_recsys.schema import ColumnSchema, Schema


def _parse(text: str) -> schema_pb2.Schema:
    return text_format.Parse(text, schema_pb2.Schema())


def _same(a: schema_pb2.Schema, b: schema_pb2.Schema) -> bool:
    """Equal messages; the packed Structs compared as data (their map entries may serialize in
    any order, so their bytes can differ)."""
    return json_format.MessageToDict(a) == json_format.MessageToDict(b)


def _properties(feature: schema_pb2.Feature) -> dict:
    assert len(feature.annotation.extra_metadata) == 1  # Merlin raises on more than one
    s = struct_pb2.Struct()
    assert feature.annotation.extra_metadata[0].Unpack(s)
    return dict(s.items())


def _output(tmp_path):
    rng = np.random.default_rng(3)
    rows = 240
    df = pd.DataFrame({
        "item": rng.choice([f"i{k}" for k in range(30)], rows),
        "genres": pd.Series([list(rng.choice(list("abcdef"), rng.integers(1, 5)))
                             for _ in range(rows)], dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "price": rng.gamma(2.0, 3.0, rows),
        "click": rng.integers(0, 2, rows).astype("int8"),
    })
    ds = irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False),
                     tags={"click": ["target"], "item": ["item", "id"]})
    wf = irs.Workflow((["item", "genres"] >> ops.Categorify()) + (["price"] >> ops.Normalize())
                      + ["click"], artifacts_dir=str(tmp_path / "wf"))
    summary = wf.fit_transform(ds).to_parquet(tmp_path / "out")
    return df, wf, summary


def test_every_parquet_output_has_a_merlin_schema_protobuf_parses(tmp_path):
    df, wf, _ = _output(tmp_path)
    text = (tmp_path / "out" / ".merlin" / "schema.pbtxt").read_text()
    proto = _parse(text)
    # byte for byte what protobuf itself prints for that message
    assert text_format.MessageToString(proto) == text
    # the JSON form is the same message
    as_json = (tmp_path / "out" / ".merlin" / "schema.json").read_text()
    assert _same(json_format.Parse(as_json, schema_pb2.Schema()), proto)
    # and the output directory still reads as plain parquet
    assert pd.read_parquet(tmp_path / "out").shape == (len(df), 4)
    features = {f.name: f for f in proto.feature}
    assert list(features) == wf.output_schema.names == ["item", "genres", "price", "click"]
    schema = wf.output_schema
    for name in ("item", "genres"):
        f = features[name]
        assert f.type == schema_pb2.INT
        assert f.int_domain.min == 0 and f.int_domain.is_categorical
        assert f.int_domain.max == schema[name].cardinality - 1
        props = _properties(f)
        assert props["embedding_sizes"]["cardinality"] == schema[name].cardinality
        assert props["dtype_item_size"] == 64
    # 30 items and 6 genres seen, plus padding, null and out-of-vocabulary rows
    assert features["item"].int_domain.max == 3 + df["item"].nunique() - 1
    assert features["genres"].int_domain.max == 3 + 6 - 1
    assert set(features["item"].annotation.tag) == {"categorical", "item", "id"}
    assert set(features["genres"].annotation.tag) == {"categorical", "list"}
    lengths = df["genres"].map(len)
    assert features["genres"].HasField("value_count")
    assert (features["genres"].value_count.min, features["genres"].value_count.max) == (
        lengths.min(), lengths.max())
    assert _properties(features["genres"])["is_ragged"] is True
    assert not features["item"].HasField("value_count")
    assert features["price"].type == schema_pb2.FLOAT
    assert list(features["price"].annotation.tag) == ["continuous"]
    assert not features["price"].HasField("int_domain")
    assert _properties(features["click"])["dtype_item_size"] == 8
    assert list(features["click"].annotation.tag) == ["target"]


def test_names_and_values_that_need_escaping_survive_protobuf():
    name = 'say "hi"\\ \u00e9\n'
    schema = Schema([ColumnSchema(name, "float64", {"continuous"}),
                     ColumnSchema("c", "int32", {"categorical"},
                                  {"cardinality": 5, "domain": "shared\tvocab"})])
    proto = _parse(to_pbtxt(schema))
    assert [f.name for f in proto.feature] == [name, "c"]
    assert proto.feature[1].int_domain.name == "shared\tvocab"
    assert _properties(proto.feature[1])["dtype_item_size"] == 32
    assert text_format.MessageToString(proto) == to_pbtxt(schema)
    assert _same(json_format.Parse(to_json(schema), schema_pb2.Schema()), proto)


def test_fixed_length_lists_are_not_ragged():
    schema = Schema([ColumnSchema("h", "list<int64>", {"list"},
                                  {"value_count": {"min": 3, "max": 3}})])
    f = _parse(to_pbtxt(schema)).feature[0]
    assert (f.value_count.min, f.value_count.max) == (3, 3)
    assert _properties(f)["is_ragged"] is False and _properties(f)["is_list"] is True
