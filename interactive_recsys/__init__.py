"""interactive-recsys: RecSys data preparation on Dask, with pandas (CPU) or cuDF (GPU).

>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify())
"""

__version__ = "0.1.0"

from . import cluster, datasets, ops
from .backend import get_backend, gpu_available
from .dataset import Dataset
from .embedding import embedding_dim, embedding_sizes
from .errors import (
    DatasetError,
    IRSError,
    NotFittedError,
    ParameterError,
    SchemaError,
    VersionError,
)
from .schema import ColumnSchema, Schema, Tags
from .selector import ColumnSelector
from .workflow import Workflow

__all__ = ["ColumnSchema", "ColumnSelector", "Dataset", "DatasetError", "IRSError",
           "NotFittedError", "ParameterError", "Schema", "SchemaError", "Tags", "VersionError",
           "Workflow", "cluster", "datasets", "embedding_dim", "embedding_sizes", "get_backend",
           "gpu_available", "ops"]
