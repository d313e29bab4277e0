"""Data in and out: :class:`~interactive_recsys.Dataset` (parquet, csv, dataframes in byte-sized
partitions) and the output step :func:`write_dataset` (the generic parquet writer, with Merlin's
schema and HugeCTR's files as leaves it calls) and the writer's options, :class:`WriteOptions`.

Files, folders and the commit protocol below them live in :mod:`interactive_recsys.store`;
the saved-workflow format in :mod:`interactive_recsys.workflow`. The names load on first use,
so a module of this package that needs no Dask (``io._npy``) does not import it.
"""

from typing import TYPE_CHECKING

from interactive_recsys.lazy import lazy_dir, lazy_exports

_LAZY = {"Dataset": "._dataset", "write_dataset": "._export", "HugeCTROptions": "._hugectr",
         "WriteOptions": "._write_options"}
__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(__name__, _LAZY)
__all__ = ["Dataset", "HugeCTROptions", "WriteOptions", "write_dataset"]

if TYPE_CHECKING:
    from interactive_recsys.io._dataset import Dataset
    from interactive_recsys.io._export import write_dataset
    from interactive_recsys.io._hugectr import HugeCTROptions
    from interactive_recsys.io._write_options import WriteOptions
