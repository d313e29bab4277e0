"""Outputs for trainers: files that other systems read next to the parquet output.

:func:`write_dataset` is the output step ``Dataset.to_parquet`` runs, top-down: it prepares
the data (:func:`prepare`), has the generic parquet writer stage its files
(:func:`~interactive_recsys.io._writer.staged_parquet`, which knows files, not formats),
adds its own files with :func:`finish_output` into the staged output, and lets the writer
publish the whole folder at once (the atomic rename, or the manifest of a URL):

* always Merlin's schema, ``.merlin/schema.json`` and ``.merlin/schema.pbtxt``
  (:mod:`._merlin_schema`), so NVTabular, the Merlin dataloader and Merlin Models read the
  output;
* with ``hugectr_options``: ``_file_list.txt``, ``_metadata.json``, keysets
  (:mod:`._hugectr`).

:func:`prepare` is called before writing: with HugeCTR's options it converts the columns
to HugeCTR's types.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import dask
import pyarrow.compute as pc
import pyarrow.parquet as pq

from interactive_recsys.errors import ParameterError
from interactive_recsys.io import _hugectr, _merlin_schema
from interactive_recsys.io._hugectr import HugeCTROptions
from interactive_recsys.io._write_options import DEFAULT_WRITE_OPTIONS, WriteOptions
from interactive_recsys.io._writer import staged_parquet
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.schema import Schema
from interactive_recsys.store.storage import is_remote, strip


def write_dataset(ds: Any, path: str | os.PathLike,
                  options: WriteOptions = DEFAULT_WRITE_OPTIONS, *,
                  hugectr_options: HugeCTROptions | dict | bool | None = None,
                  protect: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``ds`` with the parquet writer as ``options`` say, adding Merlin's schema and,
    with ``hugectr_options`` (``True``, a dict or :class:`HugeCTROptions`: ``to_parquet``'s
    ``hugectr=``), HugeCTR's files inside the same atomic publish; return the writer's
    summary (with ``"hugectr"``'s entry when asked).

    >>> import tempfile, pandas as pd
    >>> from interactive_recsys.io._dataset import Dataset
    >>> out = tempfile.mkdtemp() + "/out"
    >>> summary = write_dataset(Dataset(pd.DataFrame({"a": [1, 2]})), out)
    >>> summary["num_rows"], sorted(os.listdir(out + "/.merlin"))
    (2, ['schema.json', 'schema.pbtxt'])
    """
    if hugectr_options and is_remote(path):
        raise ParameterError("hugectr=... writes HugeCTR's files for a local output only; "
                             "write to a local folder (or copy the output there) for HugeCTR.")
    ds, hugectr_options = prepare(ds, hugectr_options)
    with staged_parquet(ds, path, options, protect=protect) as output:
        output.summary.update(finish_output(output.directory, output.final, output.files,
                                            ds.schema, hugectr_options,
                                            data_dir=output.data_dir, fs=output.fs))
    return output.summary


def prepare(ds: Any, hugectr_arg: Any) -> tuple[Any, HugeCTROptions | None]:
    """The dataset to write (converted for HugeCTR if asked) and the HugeCTR options."""
    options = HugeCTROptions.from_arg(hugectr_arg)
    return (_hugectr.prepare(ds, options) if options else ds), options


def _list_lengths(path: str, columns: list[str], fs: Any = None) -> dict[str, tuple[int, int]]:
    table = pq.read_table(strip(path) if fs is not None else path, columns=columns,
                          filesystem=fs)
    out = {}
    for name in columns:
        lengths = pc.fill_null(pc.list_value_length(table[name]), 0)
        if len(lengths):
            mm = pc.min_max(lengths)
            out[name] = (mm["min"].as_py(), mm["max"].as_py())
    return out


def list_value_counts(directory: str, files: list[str], schema: Schema,
                      fs: Any = None) -> dict[str, tuple]:
    """``(min, max)`` list lengths of the list columns over the written files (``fs``: the
    fsspec filesystem when ``directory`` is a URL)."""
    columns = [c.name for c in schema.values() if c.is_list]
    if not columns or not files:
        return {}
    join = (lambda f: f"{directory.rstrip('/')}/{f}") if fs is not None else \
        (lambda f: os.path.join(directory, f))
    parts = compute(*[dask.delayed(_list_lengths)(join(f), columns, fs) for f in files],
                    phase="write: list lengths")
    out: dict[str, tuple[int, int]] = {}
    for part in parts:
        for name, (lo, hi) in part.items():
            old = out.get(name, (lo, hi))
            out[name] = (min(old[0], lo), max(old[1], hi))
    return out


def finish_output(directory: str, final_dir: str, files: list[str], schema: Schema,
                  options: HugeCTROptions | None = None, data_dir: str | None = None,
                  fs: Any = None) -> dict[str, Any]:
    """Write Merlin's schema (and the HugeCTR files) into ``directory``; return what to add
    to the writer's summary. The data files are in ``data_dir`` (default ``directory``; a
    URL on filesystem ``fs`` for a remote output)."""
    _merlin_schema.write_merlin_schema(directory, schema,
                                      list_value_counts(data_dir or directory, files, schema,
                                                        fs))
    extra: dict[str, Any] = {}
    if options is not None:
        extra["hugectr"] = _hugectr.write_metadata(directory, final_dir, files, schema, options)
    return extra


__all__ = ["HugeCTROptions", "finish_output", "prepare", "write_dataset"]
