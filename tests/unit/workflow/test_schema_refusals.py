"""Refused at compute_schema: output name collisions, struct columns, reserved names.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import SchemaError

# ---- 4. output name collisions --------------------------------------------------------------------
COLLISIONS = [
    ([["a", "b"], "a_b"], ops.Categorify(), "['a', 'b']", "['a_b']"),
    ([["a", "b"], "a_b"], ops.Categorify(encode_type="combo"), "['a', 'b']", "['a_b']"),
    ([["a", "b_c"], ["a_b", "c"]], ops.Categorify(encode_type="combo"), "['a', 'b_c']",
     "['a_b', 'c']"),
    ([["a", "b_c"], ["a_b", "c"]], ops.Categorify(), "['a', 'b_c']", "['a_b', 'c']"),
    ([["a", "b"], ["a", "c"]], ops.Categorify(), "['a', 'b']", "['a', 'c']"),
    ([["a", "b"], "a_b", "y"], ops.TargetEncoding("y"), "['a', 'b']", "['a_b']"),
    ([["a", "b"], "a_b", "y"], ops.JoinGroupby(cont_cols=["y"]), "['a', 'b']", "['a_b']"),
    ([["a", "b"], "a", "p", "b_p"], ops.JoinGroupby(cont_cols=["p", "b_p"], stats=["mean"]),
     "['a', 'b']", "['a']"),
    ([["a", "b_X_c"], ["a_X_b", "c"]], ops.HashedCross(10), "['a', 'b_X_c']",
     "['a_X_b', 'c']"),
]


@pytest.mark.parametrize(("selection", "op", "one", "other"), COLLISIONS,
                         ids=[f"{type(c[1]).__name__}-{i}" for i, c in enumerate(COLLISIONS)])
def test_output_name_collisions_are_refused_at_compute_schema(selection, op, one, other):
    names = ["a", "b", "c", "a_b", "b_c", "b_X_c", "a_X_b", "y", "p", "b_p"]
    schema = irs.Dataset(pd.DataFrame({n: [1.0, 0.0] if n in ("y", "p", "b_p") else ["u", "v"]
                                       for n in names})).schema
    with pytest.raises(SchemaError) as info:
        irs.Workflow(selection >> op).compute_schema(schema)
    message = str(info.value)
    assert one in message and other in message and type(op).__name__ in message


def test_struct_column_is_refused_at_compute_schema_naming_column_and_dtype():
    df = pd.DataFrame({"s": pd.array([{"a": 1}], dtype=pd.ArrowDtype(
        pa.struct([("a", pa.int64())])))})
    for op in (ops.Categorify(), ops.HashBucket(5)):
        with pytest.raises(SchemaError, match=r"column 's' of dtype struct<a: int64>"):
            irs.Workflow(["s"] >> op).compute_schema(irs.Dataset(df).schema)


@pytest.mark.parametrize("name", ["__irs_shuffle_key__", "__irs_order"])
def test_reserved_column_names_are_refused(name):
    df = pd.DataFrame({name: ["a"], "ok": [1]})
    with pytest.raises(irs.IRSError, match=f"{name}.*reserved") as info:  # read or workflow
        irs.Workflow([name] >> ops.Categorify()).fit(df)
    assert "rename" in str(info.value).lower()
    schema = irs.Schema([irs.ColumnSchema(name, "string"), irs.ColumnSchema("ok", "int64")])
    with pytest.raises(SchemaError, match=f"{name}.*reserves"):  # a schema holding one
        irs.Workflow([name] >> ops.Categorify()).compute_schema(schema)
    with pytest.raises(SchemaError, match=name):  # renamed into one
        irs.Workflow(["ok"] >> ops.Rename({"ok": name})).compute_schema(schema)
