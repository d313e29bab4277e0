"""Validation of a builder model's steps: columns that exist, parameters that name columns
of the dataset (or of a branch's output), and branches whose outputs do not collide.

>>> import pandas as pd
>>> from interactive_recsys.io._dataset import as_dataset
>>> schema = as_dataset(pd.DataFrame({"label": [0, 1]})).schema
>>> try:
...     check_columns(schema, ["lable"])
... except SchemaError as exc:
...     print(str(exc).split(";")[0])
Column 'lable' is not in the dataset (did you mean 'label'?)
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from interactive_recsys.errors import DatasetError, ParameterError, SchemaError, names_text
from interactive_recsys.schema import Schema, flatten
from interactive_recsys.store import storage
from interactive_recsys.ui.builder._branches import Branch, make_operator

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState


def check_dataset_path(dataset: Any) -> Any:
    """``dataset`` once a local path (not a pattern) is known to exist."""
    if isinstance(dataset, str | os.PathLike) and not storage.is_remote(dataset) \
            and not os.path.exists(dataset) \
            and not any(ch in os.fspath(dataset) for ch in "*?["):
        raise DatasetError(f"Dataset path {os.fspath(dataset)!r} does not exist. Check the "
                           f"path (the current directory is {os.getcwd()!r}).")
    return dataset


def check_columns(schema: Schema, columns: Sequence[Any]) -> list[Any]:
    """``columns`` as a list (groups as lists) once each is a column of ``schema``."""
    columns = [c if isinstance(c, str) else list(c) for c in columns]
    if not columns:
        raise ParameterError("No columns are selected: select at least one input column "
                             "(tick it in the column table, or pick a role) before adding "
                             "a step.")
    missing = [n for n in flatten([(c,) if isinstance(c, str) else tuple(c)
                                   for c in columns]) if n not in schema]
    if missing:
        raise SchemaError(f"Column {missing[0]!r} is not in the dataset"
                          f"{did_you_mean(missing[0], schema.names)}; available "
                          f"columns: {names_text(schema.names)}.")
    return columns


def check_param_columns(model: ModelState, op: str, params: dict[str, Any] | None) -> None:
    """Parameters that name columns (TargetEncoding's ``target``, ...) must name a column
    of the dataset or of a branch's output; a misspelt one says which it could be."""
    spec = make_operator(op, params).params
    known, outputs = set(model.schema.names), None
    for key, value in (params or {}).items():
        if key not in spec or not spec[key].columns or value is None:
            continue
        names = [value] if isinstance(value, str) else \
            [v for v in value if isinstance(v, str)] if isinstance(value, list | tuple) else []
        for name in names:
            if name in known:
                continue
            if outputs is None:  # a column a branch makes counts too
                outputs = _output_names(model)
                known |= outputs
                if name in known:
                    continue
            raise SchemaError(f"{op}'s {key} {name!r} is not a column of the dataset"
                              f"{did_you_mean(name, sorted(known))}; available columns: "
                              f"{names_text(model.schema.names)}.")


def _output_names(model: ModelState) -> set[str]:
    try:
        return set(model.output_schema().names)
    except Exception:  # an invalid state has no outputs to offer
        return set()


def validate(schema: Schema, branches: list[Branch]) -> None:
    """Raise when a branch cannot work on ``schema`` or two branches make the same output."""
    for k, branch in enumerate(branches):
        if not branch.columns and not branch.tags and branch.steps:
            raise ParameterError(f"Branch {k + 1} has steps but no columns; select columns.")
        if branch.columns or branch.tags:  # raises "In step [...] >> Op(): <why>"
            branch.node().output_schema(schema)
    names = [n for b in branches if b.columns or b.tags
             for n in b.node().output_schema(schema).names]
    twice = list(dict.fromkeys(n for n in names if names.count(n) > 1))
    if twice:
        raise SchemaError(f"Output column(s) {twice} would come out of two branches; rename "
                          "one (ops.Rename(postfix=...)) or remove one of the branches.")



def did_you_mean(name: str, names: Sequence[str]) -> str:
    """`` (did you mean 'label'?)`` for the closest of ``names``, or nothing.

    >>> did_you_mean("lable", ["c", "label"]), did_you_mean("zzz", ["c", "label"])
    (" (did you mean 'label'?)", '')
    """
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    if not close:
        close = [n for n in names if n.lower() == name.lower()]
    return f" (did you mean {close[0]!r}?)" if close else ""
