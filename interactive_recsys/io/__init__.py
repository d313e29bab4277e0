"""Data in and out: :class:`Dataset` (parquet, csv, dataframes in byte-sized partitions) and
the output step :func:`write_dataset` (the generic parquet writer, with Merlin's schema and
HugeCTR's files as leaves it calls) and the writer's options, :class:`WriteOptions`.

Files, folders and the commit protocol below them live in :mod:`interactive_recsys.store`;
the saved-workflow format in :mod:`interactive_recsys.workflow`.
"""

from interactive_recsys.io._dataset import Dataset
from interactive_recsys.io._export import write_dataset
from interactive_recsys.io._hugectr import HugeCTROptions
from interactive_recsys.io._write_options import WriteOptions

__all__ = ["Dataset", "HugeCTROptions", "WriteOptions", "write_dataset"]
