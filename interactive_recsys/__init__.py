"""interactive-recsys: RecSys data preparation on Dask, with pandas (CPU) or cuDF (GPU).

>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify())
"""

from interactive_recsys import datasets, ops
from interactive_recsys._version import __version__ as __version__
from interactive_recsys.backend import get_backend, gpu_available
from interactive_recsys.embedding import embedding_dim, embedding_sizes
from interactive_recsys.errors import (
         DatasetError,
         IRSError,
         NotFittedError,
         ParameterError,
         SchemaError,
         VersionError,
         WorkflowFormatError,
)
from interactive_recsys.io._dataset import Dataset
from interactive_recsys.lazy import lazy_exports
from interactive_recsys.runtime import cluster
from interactive_recsys.runtime.cluster import connect, start_cluster, stop_cluster
from interactive_recsys.schema import ColumnSchema, ColumnSelector, Schema, Tags
from interactive_recsys.workflow._workflow import Workflow

_LAZY = {"ui": ".ui", "stats": ".stats", "Loader": ".loader", "torchrec": ".torchrec",
         "io": ".io", "compat": ".compat", "eval": ".eval", "models": ".models",
         "predict_topk": ".models", "storage": ".store.storage", "commit": ".store.commit",
         "jobs": ".runtime.jobs", "monitor": ".runtime.monitor"}


__getattr__ = lazy_exports(__name__, _LAZY)  # widgets, reports and the loader: on first use


__all__ = ["ColumnSchema", "ColumnSelector", "Dataset", "DatasetError", "IRSError",
           "NotFittedError", "ParameterError", "Schema", "SchemaError", "Tags", "VersionError",
           "Workflow", "WorkflowFormatError", "cluster", "connect", "datasets", "embedding_dim",
           "embedding_sizes", "get_backend", "gpu_available", "ops", "start_cluster",
           "stop_cluster"]
