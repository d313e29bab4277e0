"""interactive-recsys: RecSys data preparation on Dask, with pandas (CPU) or cuDF (GPU).

>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify())
"""

from ._version import __version__ as __version__
from .errors import (
    DatasetError,
    IRSError,
    NotFittedError,
    ParameterError,
    SchemaError,
    VersionError,
    WorkflowFormatError,
)
from .lazy import lazy_exports

# Everything else on first use (PEP 562): a command that needs no Dask (``irs criteo
# --local``) starts without importing it.
_LAZY = {"datasets": ".datasets", "ops": ".ops", "get_backend": ".backend",
         "gpu_available": ".backend", "embedding_dim": ".embedding",
         "embedding_sizes": ".embedding", "Dataset": ".io.dataset",
         "cluster": ".runtime.cluster", "connect": ".runtime.cluster",
         "start_cluster": ".runtime.cluster", "stop_cluster": ".runtime.cluster",
         "ColumnSchema": ".schema", "Schema": ".schema", "Tags": ".schema",
         "ColumnSelector": ".selector", "Workflow": ".workflow",
         "ui": ".ui", "stats": ".stats", "Loader": ".loader", "torchrec": ".torchrec",
         "exports": ".exports", "compat": ".compat", "eval": ".eval", "models": ".models",
         "predict_topk": ".predict", "storage": ".io.storage", "commit": ".io.commit",
         "jobs": ".runtime.jobs", "monitor": ".runtime.monitor"}


__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = ["ColumnSchema", "ColumnSelector", "Dataset", "DatasetError", "IRSError",
           "NotFittedError", "ParameterError", "Schema", "SchemaError", "Tags", "VersionError",
           "Workflow", "WorkflowFormatError", "cluster", "connect", "datasets", "embedding_dim",
           "embedding_sizes", "get_backend", "gpu_available", "ops", "start_cluster",
           "stop_cluster"]
