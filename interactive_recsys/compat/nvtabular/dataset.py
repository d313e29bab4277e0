"""NVTabular 23.08's ``Dataset`` signature (``merlin.io.Dataset``) on this project's Dataset.

Only keywords are mapped; reading, partitioning and writing are the core's
(:class:`interactive_recsys.Dataset`, :mod:`interactive_recsys.writer`):

====================================  ===============================================
NVTabular                             here
====================================  ===============================================
``cpu=True`` / ``None`` / ``False``   ``backend="cpu"`` / ``"auto"`` / ``"gpu"``
``part_size=``                        ``part_size=``
``part_mem_fraction=f``               ``part_size`` = f x the device's (or host's) memory
``npartitions=n`` (frames)            ``n`` partitions
``dtypes=``, ``sep=``, ``names=``     the csv reader's options (NumPy dtypes accepted;
                                      ``"hex"``: hexadecimal text read as int64, empty
                                      fields null)
``schema=``                           its tags
``client=`` and Dask read options     accepted, no effect (the current Dask client runs)
====================================  ===============================================

>>> import pandas as pd
>>> ds = Dataset(pd.DataFrame({"a": [1, 2, 3, 4]}), npartitions=2, cpu=True)
>>> ds.npartitions, ds.to_ddf().compute()["a"].dtype.name
(2, 'int64')
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import dask
import dask.dataframe as dd
import distributed

from interactive_recsys.backend import convert, get_backend, gpu_available
from interactive_recsys.compat.nvtabular.schema import Schema
from interactive_recsys.compat.nvtabular.tags import TagSet
from interactive_recsys.compat.nvtabular.types import dtype_name_of
from interactive_recsys.compat.nvtabular.utils import device_mem_size
from interactive_recsys.datasets._criteo_tsv import hex_to_int64
from interactive_recsys.errors import ParameterError
from interactive_recsys.io import _dataset
from interactive_recsys.io._output_pins import check_unchanged
from interactive_recsys.io._paths import expand_paths
from interactive_recsys.store.commit import published_folder

#: Dask read options NVTabular passes on that do not change the rows read.
_READ_TUNING = frozenset({"row_groups_per_part", "calculate_divisions", "aggregate_files",
                          "split_row_groups", "ignore_metadata_file", "dataset_kwargs",
                          "blocksize", "chunksize", "low_memory"})
_CSV_OPTIONS = ("sep", "names", "header")
#: RAPIDS memory options NVTabular code passes around (cuDF/RMM only).
GPU_MEMORY = frozenset({"rmm_pool_size", "rmm_managed_memory", "rmm_async",
                        "device_memory_limit", "device_memory_fraction"})


class Shuffle(enum.Enum):
    """``nvtabular.io.Shuffle``: how ``to_parquet`` shuffles rows (the core's names)."""

    PER_PARTITION = "partition"
    PER_WORKER = "worker"
    FULL = "full"


def gpu_only(keyword: str, fix: str) -> ParameterError:
    """The error for an NVTabular keyword that needs a GPU, on a machine without one."""
    return ParameterError(f"NVTabular's {keyword} needs a GPU (cuDF), and no working GPU was "
                          f"found here. {fix}")


def _backend(cpu: bool | None) -> str:
    if cpu is None:
        return "auto"
    if cpu:
        return "cpu"
    if not gpu_available():
        raise gpu_only("cpu=False", "Pass cpu=True (or leave cpu unset: the GPU is used "
                       "when one works), or install the 'gpu' extra on a CUDA machine.")
    return "gpu"


def _part_size(source: Any, npartitions: int | None, part_size: Any,
               part_mem_fraction: float | None, backend: str) -> Any:
    if part_size is not None:
        return part_size
    if part_mem_fraction is not None:
        if not 0 < part_mem_fraction <= 1:
            raise ParameterError(f"part_mem_fraction must be in (0, 1]; got {part_mem_fraction}.")
        return max(1, int(part_mem_fraction * device_mem_size(cpu=backend == "cpu")))
    if npartitions and isinstance(source, str | os.PathLike | list | tuple):
        files = expand_paths(source, None, None)
        return max(1, math.ceil(sum(os.path.getsize(f) for f in files) / npartitions))
    return None


def _split(source: Any, npartitions: int | None) -> Any:
    """A frame split into ``npartitions`` Dask partitions (NVTabular's ``npartitions``)."""
    if not npartitions:
        return source
    if isinstance(source, dd.DataFrame):
        return source.repartition(npartitions=npartitions)
    if hasattr(source, "columns") and hasattr(source, "iloc"):
        if type(source).__module__.startswith("cudf"):
            import dask_cudf  # the frame is cuDF: the GPU extra is installed

            return dask_cudf.from_cudf(source, npartitions=npartitions)
        frame = convert(source, backend="cpu")  # Arrow types from the values, not the meta
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_pandas(frame, npartitions=npartitions, sort=False)
    return source


class Dataset(_dataset.Dataset):
    """``nvt.Dataset(path_or_source, engine=None, npartitions=None, part_size=None,
    part_mem_fraction=None, storage_options=None, dtypes=None, client=None, cpu=None,
    schema=None, **kwargs)``: NVTabular 23.08's signature, this project's Dataset."""

    def __init__(self, path_or_source: Any, engine: str | None = None,
                 npartitions: int | None = None, part_size: Any = None,
                 part_mem_fraction: float | None = None,
                 storage_options: Mapping[str, Any] | None = None,
                 dtypes: Mapping[str, Any] | None = None, client: Any = None,
                 cpu: bool | None = None, base_dataset: Any = None, schema: Any = None,
                 **kwargs: Any) -> None:
        gpu_memory = sorted(set(kwargs) & GPU_MEMORY)
        if gpu_memory:
            fix = ("GPU memory is set on the cluster here: irs.start_cluster(gpu=True, "
                   "rmm_pool_size=..., device_memory_limit=...)")
            if not gpu_available():
                raise gpu_only(f"{gpu_memory[0]}=", f"{fix}; on this machine, leave it out.")
            raise TypeError(f"nvt.Dataset({gpu_memory[0]}=...) is not a Dataset option: {fix}.")
        unknown = sorted(set(kwargs) - _READ_TUNING - set(_CSV_OPTIONS))
        if unknown:
            raise TypeError(f"nvt.Dataset() got the keyword {unknown[0]!r}, which the port does "
                            f"not map; it maps {['engine', 'npartitions', 'part_size']}, "
                            f"'part_mem_fraction', 'dtypes', 'cpu', 'schema' and the csv "
                            f"options {list(_CSV_OPTIONS)}.")
        if engine is not None and not isinstance(engine, str):
            raise ParameterError(f"engine must be 'parquet' or 'csv'; got {engine!r}.")
        backend = _backend(cpu)
        size = _part_size(path_or_source, npartitions, part_size, part_mem_fraction, backend)
        source = base_dataset if path_or_source is None else path_or_source
        csv = {k: kwargs[k] for k in _CSV_OPTIONS if k in kwargs}
        tags = None
        if schema is not None:
            tags = {c.name: TagSet(c.tags) for c in _columns_of(schema) if c.tags}
        hex_columns = [k for k, v in (dtypes or {}).items() if _is_hex(v)]
        read_dtypes = {k: "string" if k in hex_columns else dtype_name_of(v)
                       for k, v in (dtypes or {}).items()}
        super().__init__(_split(source, npartitions), engine=engine, part_size=size,
                         dtypes=read_dtypes, backend=backend, tags=tags,
                         storage_options=storage_options, **csv)
        if hex_columns:
            self._parse_hex(hex_columns)
        # how each input file is read again on its own (to_parquet(preserve_files=True))
        self._per_file = {"engine": engine, "part_size": size, "dtypes": dict(dtypes or {}),
                          "cpu": cpu, "storage_options": storage_options, **csv}

    def _parse_hex(self, columns: Sequence[str]) -> None:
        """``dtypes={c: "hex"}``: the columns, read as text, become int64 (NVTabular's
        ``_hex_to_int``; empty fields stay null)."""
        new = Schema([c.with_(dtype="int64") if c.name in columns else c
                      for c in self._schema.values()])
        meta = self.backend.from_arrow(new.to_arrow().empty_table())
        self._ddf = self._ddf.map_partitions(_HexToInt(self.backend.name, columns), meta=meta,
                                             enforce_metadata=False)
        self._schema = new

    @classmethod
    def wrap(cls, ds: _dataset.Dataset) -> Dataset:
        """The same dataset with this class's NVTabular methods (no copy of data)."""
        if isinstance(ds, cls):
            return ds
        out = cls.__new__(cls)
        out.__dict__.update(ds.__dict__)
        return out

    @property
    def schema(self) -> Any:
        """The schema with Merlin's names (``column_names``, ``column_schemas``); as in
        Merlin, one object, edited in place by ``ds.schema.column_schemas[c] = col`` (e.g.
        to tag a column before a workflow reads it)."""
        if not isinstance(self._schema, Schema):
            self._schema = Schema.of(self._schema)
        return self._schema

    @property
    def cpu(self) -> bool:
        return self.backend.name == "cpu"

    def to_cpu(self) -> None:
        """Move to the CPU backend (in place, as NVTabular)."""
        self.__dict__.update(_dataset.Dataset(self, backend="cpu").__dict__)

    def shuffle_by_keys(self, keys: str | Sequence[str], hive_data: Any = None,
                        npartitions: int | None = None) -> Dataset:
        """A dataset whose rows of one key are in one partition (a Dask shuffle)."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        ddf = self._ddf.shuffle(on=keys, npartitions=npartitions or self.npartitions)
        return Dataset.wrap(_dataset.Dataset.from_ddf(ddf, self.schema, self.backend,
                                                      self.known_num_rows,
                                                      self.input_files()))

    def to_parquet(self, output_path: str | os.PathLike, shuffle: Any = None,
                   preserve_files: bool = False, output_files: Any = None,
                   out_files_per_proc: int | None = None, num_threads: int = 0,
                   dtypes: Mapping[str, Any] | None = None, cats: Sequence[str] | None = None,
                   conts: Sequence[str] | None = None, labels: Sequence[str] | None = None,
                   suffix: str = ".parquet", partition_on: Any = None, method: str = "subgraph",
                   write_hugectr_keyset: bool = False, **kwargs: Any) -> Any:
        """NVTabular's ``to_parquet`` keywords on the core's writer (see the module table in
        docs/guide/nvtabular.md)."""
        for name, value, fix in (("partition_on", partition_on, "write one folder per value "
                                  "with a Filter"), ("suffix", suffix != ".parquet",
                                                     "files end in .parquet")):
            if value:
                raise ParameterError(f"to_parquet({name}=...) is not supported by the port; "
                                     f"{fix}.")
        if isinstance(output_files, Mapping):
            raise ParameterError("to_parquet(output_files={file: partitions}) is not "
                                 "supported; pass a number of files.")
        if output_files and out_files_per_proc:
            raise ParameterError("Pass output_files or out_files_per_proc, not both.")
        if preserve_files:
            return self._write_per_file(os.fspath(output_path), dtypes or {}, cats or (),
                                        conts or (), labels or ())
        if output_files:
            out_files_per_proc = max(1, math.ceil(int(output_files) / _workers()))
        ds = self._typed(dtypes or {}, cats or (), conts or (), labels or ())
        path = os.fspath(output_path)
        overwrite = bool(kwargs.pop("overwrite", os.path.isfile(os.path.join(path, "_SUCCESS"))))
        return _dataset.Dataset.to_parquet(
            ds, path, shuffle=_shuffle(shuffle), out_files_per_proc=out_files_per_proc,
            overwrite=overwrite, hugectr=write_hugectr_keyset, **kwargs)

    def _write_per_file(self, path: str, dtypes: Mapping[str, Any], cats: Sequence[str],
                        conts: Sequence[str], labels: Sequence[str]) -> None:
        """``preserve_files=True``: one parquet file per input file, named after it
        (``day_0`` -> ``day_0.parquet``), its partitions written in order (one at a time);
        the folder is published whole with a ``_SUCCESS`` manifest."""
        import pyarrow.parquet as pq

        options = getattr(self, "_per_file", None)
        if options is None or not self.files:
            raise ParameterError("to_parquet(preserve_files=True) writes one file per input "
                                 "file: call it on a Dataset read from files, not on a "
                                 "workflow's output.")
        names = [_parquet_name(f) for f in self.files]
        if len(set(names)) < len(names):
            raise ParameterError(f"to_parquet(preserve_files=True): input files of the same "
                                 f"name would write the same file; got {self.files[:4]}.")
        with published_folder(path, overwrite=True) as tmp:
            for source, name in zip(self.files, names, strict=True):
                ds = Dataset(source, **options)._typed(dtypes, cats, conts, labels)
                writer = None
                try:
                    for part in ds.to_iter():
                        table = ds.backend.to_arrow(part)
                        if writer is None:
                            writer = pq.ParquetWriter(os.path.join(tmp, name), table.schema)
                        writer.write_table(table)
                finally:
                    if writer is not None:
                        writer.close()
                check_unchanged(self)  # read from the output this Dataset opened, or raise

    def _typed(self, dtypes: Mapping[str, Any], cats: Sequence[str], conts: Sequence[str],
               labels: Sequence[str]) -> _dataset.Dataset:
        """This dataset with ``dtypes`` cast and the tags of ``cats``/``conts``/``labels``."""
        schema = self.schema
        roles = {"categorical": cats, "continuous": conts, "target": labels}
        for role, names in (*roles.items(), ("dtypes", list(dtypes))):
            missing = [n for n in names if n not in schema]
            if missing:
                raise ParameterError(f"to_parquet names {missing} in "
                                     f"{role if role == 'dtypes' else {'categorical': 'cats', 'continuous': 'conts', 'target': 'labels'}[role]}"  # noqa: E501
                                     f", which are not output columns: {schema.names}.")
        # "hex" of a column that is already a number: int32, as NVTabular's _hex_to_int
        dtypes = {n: "int32" if _is_hex(d) else d for n, d in dtypes.items()}
        names = {n: dtype_name_of(d) for n, d in dtypes.items()
                 if dtype_name_of(d) != schema[n].dtype}
        cols = []
        for c in schema.values():
            c = c.with_(dtype=names.get(c.name, c.dtype))
            cols.append(c.with_tags(add=[r for r, ns in roles.items() if c.name in ns]))
        new = Schema(cols)
        if new == schema:
            return self
        ddf = self._ddf
        if names:
            meta = self.backend.from_arrow(new.to_arrow().empty_table())
            ddf = ddf.map_partitions(_Cast(self.backend.name, names), meta=meta,
                                     enforce_metadata=False)
        return _dataset.Dataset.from_ddf(ddf, new, self.backend, self.known_num_rows,
                                         self.input_files())


class _Cast:
    """Cast some columns of a partition (``to_parquet(dtypes=...)``)."""

    def __init__(self, backend: str, dtypes: Mapping[str, str]) -> None:
        self.backend, self.dtypes = backend, dict(dtypes)

    def __call__(self, df: Any) -> Any:
        b = get_backend(self.backend)
        return b.with_columns(df, {n: b.cast(b.column(df, n), d) for n, d in self.dtypes.items()})


class _HexToInt:
    """Hexadecimal text columns of a partition as int64 (nulls kept)."""

    def __init__(self, backend: str, columns: Sequence[str]) -> None:
        self.backend, self.columns = backend, list(columns)

    def __call__(self, df: Any) -> Any:
        import pyarrow as pa

        b = get_backend(self.backend)
        out = {}
        for name in self.columns:
            arr = b.to_arrow_array(b.column(df, name)).combine_chunks()
            if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
                arr = arr.cast(pa.string())
            nulls = arr.is_null().to_numpy(zero_copy_only=False)
            out[name] = b.from_arrow_array(pa.array(hex_to_int64(arr, name), mask=nulls))
        return b.with_columns(df, out)


def _is_hex(dtype: Any) -> bool:
    return isinstance(dtype, str) and "hex" in dtype


def _parquet_name(path: str) -> str:
    name = os.path.basename(path.rstrip("/"))
    for ext in (".csv", ".tsv", ".txt", ".parquet"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name + ".parquet"


def _workers() -> int:
    """Dask workers of the current client (1 without one), as the core's writer counts."""
    try:
        return max(1, len(distributed.default_client().scheduler_info(n_workers=-1)["workers"]))
    except ValueError:  # no client: the threads of this process
        return 1


def _shuffle(shuffle: Any) -> str | None:
    if shuffle is None or shuffle is False:
        return None
    if shuffle is True:
        return Shuffle.PER_PARTITION.value
    if isinstance(shuffle, Shuffle):
        return shuffle.value
    if shuffle in {s.value for s in Shuffle}:
        return shuffle
    raise ParameterError(f"to_parquet(shuffle={shuffle!r}): use nvt.io.Shuffle.PER_PARTITION, "
                         "PER_WORKER, FULL, or None.")


def _columns_of(schema: Any) -> list[Any]:
    if hasattr(schema, "column_schemas"):
        schema = schema.column_schemas
    return list(schema.values()) if isinstance(schema, Mapping) else list(schema)


__all__ = ["Dataset", "Shuffle", "dtype_name_of", "gpu_only"]
