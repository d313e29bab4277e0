"""interactive-recsys: RecSys data preparation on Dask, with pandas (CPU) or cuDF (GPU).

>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify())
"""

from . import datasets, ops
from ._version import __version__ as __version__
from .backend import get_backend, gpu_available
from .embedding import embedding_dim, embedding_sizes
from .errors import (
    DatasetError,
    IRSError,
    NotFittedError,
    ParameterError,
    SchemaError,
    VersionError,
    WorkflowFormatError,
)
from .io.dataset import Dataset
from .lazy import lazy_exports
from .runtime import cluster
from .runtime.cluster import connect, start_cluster, stop_cluster
from .schema import ColumnSchema, Schema, Tags
from .selector import ColumnSelector
from .workflow import Workflow

_LAZY = {"ui": ".ui", "stats": ".stats", "Loader": ".loader", "torchrec": ".torchrec",
         "exports": ".exports", "compat": ".compat", "eval": ".eval", "models": ".models",
         "predict_topk": ".predict", "storage": ".io.storage", "commit": ".io.commit",
         "jobs": ".runtime.jobs", "monitor": ".runtime.monitor"}


__getattr__ = lazy_exports(__name__, _LAZY)  # widgets, reports and the loader: on first use


__all__ = ["ColumnSchema", "ColumnSelector", "Dataset", "DatasetError", "IRSError",
           "NotFittedError", "ParameterError", "Schema", "SchemaError", "Tags", "VersionError",
           "Workflow", "WorkflowFormatError", "cluster", "connect", "datasets", "embedding_dim",
           "embedding_sizes", "get_backend", "gpu_available", "ops", "start_cluster",
           "stop_cluster"]
