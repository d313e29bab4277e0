"""Merlin's schema: the output schema as NVIDIA Merlin (NVTabular, the Merlin dataloader,
Merlin Models) reads it, in ``.merlin/`` next to the parquet files.

Merlin keeps a dataset's schema as a ``tensorflow_metadata`` ``Schema`` message
(merlin-core's ``merlin/schema/io/tensorflow_metadata.py``). NVTabular 23.08's ``to_parquet``
writes it twice: ``.merlin/schema.json`` (protobuf's JSON mapping), which
``merlin.io.Dataset`` reads first, and ``schema.pbtxt`` (protobuf text) at the top of the
output. Here both go into ``.merlin/``: a ``schema.pbtxt`` at the top makes
``pandas.read_parquet(output_dir)`` and ``pyarrow.parquet.read_table(output_dir)`` fail
("Parquet magic bytes not found"), since pyarrow skips only names starting with ``.``/``_``.
``TensorflowMetadata.from_proto_text_file(out / ".merlin")`` reads the text form.

One ``feature`` per column:

* ``type``: ``INT`` for integer columns, ``FLOAT`` for floating ones (others none, as Merlin);
* ``int_domain`` for categorical columns of known cardinality: ``min: 0``,
  ``max: cardinality - 1``, ``is_categorical: true``, ``name``: the shared vocabulary;
* ``value_count`` (``min``/``max`` list lengths) for list columns;
* ``annotation``: the tags, and one ``extra_metadata`` (a ``google.protobuf.Struct``, written
  in the expanded ``Any`` form protobuf itself prints) holding ``dtype_item_size`` (bits),
  ``is_list``, ``is_ragged`` and, for categoricals, ``embedding_sizes``
  (``cardinality``, ``dimension``), the properties Merlin Models reads; after
  ``Workflow.update``, ``vocabulary_version`` and ``new_rows`` (``start``, ``stop``: the ids
  appended by the last update) too.

The text is written without protobuf; it is byte for byte what protobuf's
``text_format.MessageToString`` prints for the same message (the tests check that, and that
the JSON parses to the same message).

Examples
--------
>>> from interactive_recsys.schema import ColumnSchema, Schema
>>> s = Schema([ColumnSchema("C1", "int64", {"categorical"}, {"cardinality": 10})])
>>> print(to_pbtxt(s).splitlines()[3:8])
['  int_domain {', '    name: "C1"', '    min: 0', '    max: 9', '    is_categorical: true']
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from interactive_recsys.embedding import embedding_dim
from interactive_recsys.schema import (
    ColumnSchema,
    Schema,
    Tags,
    element_dtype,
    is_float_dtype,
    is_integer_dtype,
)

FILE_NAME = "schema.pbtxt"
JSON_FILE_NAME = "schema.json"
#: Merlin's metadata folder (``merlin.io.dataset.MERLIN_METADATA_DIR_NAME``)
METADATA_DIR = ".merlin"
STRUCT_URL = "type.googleapis.com/google.protobuf.Struct"


def _escape(text: str) -> str:
    """A string literal as protobuf's text format writes it (``as_utf8``: ASCII control
    characters escaped, other characters kept)."""
    return '"' + text.translate(_ESCAPES) + '"'


_ESCAPES = {**{i: f"\\{i:03o}" for i in [*range(32), 127]},
            9: r"\t", 10: r"\n", 13: r"\r", 34: r'\"', 39: r"\'", 92: r"\\"}


def _item_bits(dtype: str) -> int | None:
    base = element_dtype(dtype)
    digits = "".join(ch for ch in base if ch.isdigit())
    return int(digits) if digits and (is_integer_dtype(base) or is_float_dtype(base)) else None


def _value(v: Any, pad: str) -> list[str]:
    """A ``google.protobuf.Value`` body."""
    if isinstance(v, bool):
        return [f"{pad}bool_value: {'true' if v else 'false'}"]
    if isinstance(v, int | float):
        return [f"{pad}number_value: {float(v)!r}"]
    if isinstance(v, str):
        return [f"{pad}string_value: {_escape(v)}"]
    if isinstance(v, Mapping):
        return [f"{pad}struct_value {{", *_struct(v, pad + "  "), f"{pad}}}"]
    if isinstance(v, list | tuple):
        lines = [f"{pad}list_value {{"]
        for item in v:
            lines += [f"{pad}  values {{", *_value(item, pad + "    "), f"{pad}  }}"]
        return [*lines, f"{pad}}}"]
    raise TypeError(f"Cannot store {v!r} in a protobuf Struct.")


def _struct(d: Mapping[str, Any], pad: str) -> list[str]:
    """The ``fields`` of a ``google.protobuf.Struct`` (a map: protobuf prints keys sorted)."""
    lines = []
    for key in sorted(d):
        lines += [f"{pad}fields {{", f"{pad}  key: {_escape(key)}", f"{pad}  value {{",
                  *_value(d[key], pad + "    "), f"{pad}  }}", f"{pad}}}"]
    return lines


def column_properties(col: ColumnSchema, value_count: tuple[int, int] | None) -> dict[str, Any]:
    """The ``extra_metadata`` Struct of one column (what Merlin keeps in ``properties``)."""
    ragged = col.is_list and (value_count is None or value_count[0] != value_count[1])
    props: dict[str, Any] = {"is_list": col.is_list, "is_ragged": bool(ragged)}
    bits = _item_bits(col.dtype)
    if bits:
        props["dtype_item_size"] = bits
    if Tags.CATEGORICAL.value in col.tags and col.cardinality is not None:
        props["embedding_sizes"] = {"cardinality": int(col.cardinality),
                                    "dimension": embedding_dim(int(col.cardinality))}
    if "vocabulary_version" in col.properties:  # extended by Workflow.update
        first, stop = col.properties["new_rows"]
        props["vocabulary_version"] = int(col.properties["vocabulary_version"])
        props["new_rows"] = {"start": int(first), "stop": int(stop)}
    return props


def feature_lines(col: ColumnSchema, value_count: tuple[int, int] | None = None) -> list[str]:
    """The ``feature { ... }`` block of one column, in protobuf's field order."""
    lines = ["feature {", f"  name: {_escape(col.name)}"]
    if col.is_list and value_count is not None:
        lines += ["  value_count {", f"    min: {int(value_count[0])}",
                  f"    max: {int(value_count[1])}", "  }"]
    base = element_dtype(col.dtype)
    if is_integer_dtype(base):
        lines.append("  type: INT")
        if Tags.CATEGORICAL.value in col.tags and col.cardinality is not None:
            domain = col.properties.get("domain")
            name = domain if isinstance(domain, str) else col.name
            lines += ["  int_domain {", f"    name: {_escape(name)}", "    min: 0",
                      f"    max: {int(col.cardinality) - 1}", "    is_categorical: true", "  }"]
    elif is_float_dtype(base):
        lines.append("  type: FLOAT")
    lines.append("  annotation {")
    lines += [f"    tag: {_escape(t)}" for t in sorted(col.tags)]
    lines += ["    extra_metadata {", f"      [{STRUCT_URL}] {{",
              *_struct(column_properties(col, value_count), "        "), "      }", "    }",
              "  }", "}"]
    return lines


def feature_json(col: ColumnSchema, value_count: tuple[int, int] | None = None) -> dict:
    """The same feature in protobuf's JSON mapping (camelCase names, int64 as strings), the
    form Merlin keeps in ``.merlin/schema.json``."""
    out: dict[str, Any] = {"name": col.name}
    if col.is_list and value_count is not None:
        out["valueCount"] = {"min": str(int(value_count[0])), "max": str(int(value_count[1]))}
    base = element_dtype(col.dtype)
    if is_integer_dtype(base):
        out["type"] = "INT"
        if Tags.CATEGORICAL.value in col.tags and col.cardinality is not None:
            domain = col.properties.get("domain")
            out["intDomain"] = {"name": domain if isinstance(domain, str) else col.name,
                                "min": "0", "max": str(int(col.cardinality) - 1),
                                "isCategorical": True}
    elif is_float_dtype(base):
        out["type"] = "FLOAT"
    out["annotation"] = {"tag": sorted(col.tags), "extraMetadata": [
        {"@type": STRUCT_URL, "value": column_properties(col, value_count)}]}
    if not out["annotation"]["tag"]:
        del out["annotation"]["tag"]
    return out


def _counts(schema: Schema, value_counts: Mapping[str, tuple[int, int]] | None,
            name: str) -> tuple[int, int] | None:
    col = schema[name]
    counts = (value_counts or {}).get(name)
    if counts is None and col.is_list and "value_count" in col.properties:
        vc = col.properties["value_count"]
        counts = (int(vc.get("min", 0)), int(vc.get("max", 0)))
    return counts


def to_json(schema: Schema, value_counts: Mapping[str, tuple[int, int]] | None = None) -> str:
    """``schema`` as Merlin's ``.merlin/schema.json`` text."""
    features = [feature_json(col, _counts(schema, value_counts, col.name))
                for col in schema.values()]
    return json.dumps({"feature": features}, indent=2) + "\n"


def to_pbtxt(schema: Schema, value_counts: Mapping[str, tuple[int, int]] | None = None) -> str:
    """``schema`` as Merlin's ``schema.pbtxt`` text; ``value_counts``: measured
    ``(min, max)`` lengths of list columns (else a column's ``value_count`` property)."""
    lines: list[str] = []
    for col in schema.values():
        lines += feature_lines(col, _counts(schema, value_counts, col.name))
    return "\n".join(lines) + "\n"


def write_merlin_schema(directory: str | os.PathLike, schema: Schema,
                        value_counts: Mapping[str, tuple[int, int]] | None = None) -> str:
    """Write ``.merlin/schema.json`` and ``.merlin/schema.pbtxt`` into ``directory``; return
    the ``.merlin`` folder."""
    folder = os.path.join(os.fspath(directory), METADATA_DIR)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, JSON_FILE_NAME), "w", encoding="utf-8") as f:
        f.write(to_json(schema, value_counts))
    with open(os.path.join(folder, FILE_NAME), "w", encoding="utf-8") as f:
        f.write(to_pbtxt(schema, value_counts))
    return folder
