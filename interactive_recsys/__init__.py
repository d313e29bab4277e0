"""interactive-recsys: RecSys data preparation on Dask, with pandas (CPU) or cuDF (GPU).

>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify())

Names load on first use (PEP 562), so ``import interactive_recsys`` and the commands that need
no cluster (``irs criteo --local``) do not pay for Dask, distributed and the widgets.
"""

from typing import TYPE_CHECKING

from interactive_recsys._version import __version__ as __version__
from interactive_recsys.lazy import lazy_dir, lazy_exports

# ``>>`` and ``+`` build nodes of the graph module, which registers its node class as it loads.
from interactive_recsys.workflow import _graph  # noqa: F401

_LAZY = {
    "datasets": ".datasets", "ops": ".ops",
    "get_backend": ".backend", "gpu_available": ".backend",
    "embedding_dim": ".embedding", "embedding_sizes": ".embedding",
    "DatasetError": ".errors", "IRSError": ".errors", "NotFittedError": ".errors",
    "ParameterError": ".errors", "SchemaError": ".errors", "VersionError": ".errors",
    "WorkflowFormatError": ".errors",
    "Dataset": ".io._dataset", "Workflow": ".workflow._workflow",
    "cluster": ".runtime.cluster", "connect": ".runtime.cluster",
    "start_cluster": ".runtime.cluster", "stop_cluster": ".runtime.cluster",
    "ColumnSchema": ".schema", "ColumnSelector": ".schema", "Schema": ".schema", "Tags": ".schema",
    "ui": ".ui", "stats": ".stats", "Loader": ".loader", "torchrec": ".torchrec",
    "io": ".io", "compat": ".compat", "eval": ".eval", "models": ".models",
    "predict_topk": ".models", "storage": ".store.storage", "commit": ".store.commit",
    "jobs": ".runtime.jobs", "monitor": ".runtime.monitor",
    "vocabulary_diff": ".stats._vocabulary_diff", "hash_collision_rate": ".stats._hash_collisions",
}

__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(__name__, _LAZY)

__all__ = ["ColumnSchema", "ColumnSelector", "Dataset", "DatasetError", "IRSError",
           "NotFittedError", "ParameterError", "Schema", "SchemaError", "Tags", "VersionError",
           "Workflow", "WorkflowFormatError", "cluster", "connect", "datasets", "embedding_dim",
           "embedding_sizes", "get_backend", "gpu_available", "hash_collision_rate", "ops",
           "start_cluster", "stop_cluster", "vocabulary_diff"]

if TYPE_CHECKING:  # what type checkers and editors see
    from interactive_recsys import datasets, ops
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
    from interactive_recsys.runtime import cluster
    from interactive_recsys.runtime.cluster import connect, start_cluster, stop_cluster
    from interactive_recsys.schema import ColumnSchema, ColumnSelector, Schema, Tags
    from interactive_recsys.stats._hash_collisions import hash_collision_rate
    from interactive_recsys.stats._vocabulary_diff import vocabulary_diff
    from interactive_recsys.workflow._workflow import Workflow
