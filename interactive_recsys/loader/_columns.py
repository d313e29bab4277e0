"""Which columns feed which part of a batch, taken from the schema's tags or given.

Examples
--------
>>> from interactive_recsys.schema import ColumnSchema, Schema
>>> schema = Schema([ColumnSchema("C1", "int64", {"categorical"}),
...                  ColumnSchema("T", "list<int64>", {"categorical", "list"}),
...                  ColumnSchema("I1", "float32", {"continuous"}),
...                  ColumnSchema("label", "int64", {"target"})])
>>> cols = resolve_columns(schema)
>>> cols.cat, cols.multi_hot, cols.cont, cols.label
(('C1', 'T'), (False, True), ('I1',), ('label',))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.params import param_error
from interactive_recsys.schema import (
    Schema,
    Tags,
    is_integer_dtype,
    is_list_dtype,
    is_numeric_dtype,
)


@dataclass(frozen=True)
class Columns:
    """Column roles: categorical (jagged), continuous (dense), labels and pass-through."""

    cat: tuple[str, ...]
    multi_hot: tuple[bool, ...]
    cont: tuple[str, ...]
    label: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        """Every column to read, once, in a stable order."""
        return list(dict.fromkeys((*self.cat, *self.cont, *self.label, *self.extra)))


def _tagged(schema: Schema, tag: Tags, exclude: tuple[Tags, ...] = ()) -> list[str]:
    return [c.name for c in schema.values()
            if tag.value in c.tags and not any(t.value in c.tags for t in exclude)]


def _given(name: str, value: Sequence[str] | str | None) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    names = list(value)
    if not all(isinstance(n, str) for n in names):
        raise param_error(name, None, f"must be a list of column names. Got "
                          f"{value!r} instead.")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise param_error(name, None, f"names {dup} more than once; list each "
                          "column once.")
    return names


def resolve_columns(schema: Schema, cat_cols: Sequence[str] | None = None,
                    cont_cols: Sequence[str] | None = None,
                    label_cols: Sequence[str] | None = None,
                    extra_cols: Sequence[str] | None = None) -> Columns:
    """Check the given columns against ``schema``; default each role from the tags.

    Defaults: ``cat_cols`` = columns tagged ``categorical``, ``cont_cols`` = ``continuous``,
    ``label_cols`` = ``target``. A target column, or a column given another role explicitly,
    is never also a feature by default.
    """
    cat = _given("cat_cols", cat_cols)
    cont = _given("cont_cols", cont_cols)
    label = _given("label_cols", label_cols)
    extra = _given("extra_cols", extra_cols) or []
    label = _tagged(schema, Tags.TARGET) if label is None else label
    explicit = set(cat or ()) | set(cont or ()) | set(label)
    if cat is None:  # columns given a role explicitly are left out of the defaults
        cat = [n for n in _tagged(schema, Tags.CATEGORICAL, (Tags.TARGET,)) if n not in explicit]
    if cont is None:
        cont = [n for n in _tagged(schema, Tags.CONTINUOUS, (Tags.TARGET,)) if n not in explicit]
    if not (cat or cont):
        raise SchemaError("No feature columns: the schema has no column tagged 'categorical' or "
                          f"'continuous' (columns: {schema.names[:12]}). Pass cat_cols=[...] "
                          "and/or cont_cols=[...].")
    both = sorted(set(cat) & set(cont))
    if both:
        raise ParameterError(f"Columns {both} are both categorical and continuous; pass each in "
                             "only one of cat_cols / cont_cols.")
    for role, names in (("cat_cols", cat), ("cont_cols", cont), ("label_cols", label),
                        ("extra_cols", extra)):
        for n in names:
            if n not in schema:
                raise SchemaError(f"Column {n!r} of {role} is not in the data. Available "
                                  f"columns: {schema.names[:40]}.")
    for n in cat:
        dtype = schema[n].dtype
        if not is_integer_dtype(dtype):
            raise SchemaError(f"Categorical column {n!r} has dtype {dtype!r}; embeddings need "
                              "integer ids (or lists of them). Encode it first, e.g. "
                              "ops.Categorify() or ops.HashBucket(num_buckets=...).")
    for role, names in (("cont_cols", cont), ("label_cols", label), ("extra_cols", extra)):
        for n in names:
            dtype = schema[n].dtype
            if is_list_dtype(dtype) or not is_numeric_dtype(dtype):
                raise SchemaError(f"Column {n!r} of {role} has dtype {dtype!r}; only numeric, "
                                  "non-list columns can go there. List columns of ids belong in "
                                  "cat_cols.")
    multi = tuple(is_list_dtype(schema[n].dtype) for n in cat)
    return Columns(tuple(cat), multi, tuple(cont), tuple(label), tuple(extra))
