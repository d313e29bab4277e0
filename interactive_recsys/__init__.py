"""interactive-recsys: RecSys data preparation on Dask, with pandas (CPU) or cuDF (GPU).

>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify())
"""

__version__ = "0.1.0"

from . import datasets, ops  # noqa: E402
from .backend import get_backend, gpu_available  # noqa: E402
from .dataset import Dataset  # noqa: E402
from .embedding import embedding_dim, embedding_sizes  # noqa: E402
from .errors import (  # noqa: E402
    DatasetError,
    IRSError,
    NotFittedError,
    ParameterError,
    SchemaError,
    VersionError,
)
from .schema import ColumnSchema, Schema, Tags  # noqa: E402
from .selector import ColumnSelector  # noqa: E402
from .workflow import Workflow  # noqa: E402

__all__ = ["ColumnSchema", "ColumnSelector", "Dataset", "DatasetError", "IRSError",
           "NotFittedError", "ParameterError", "Schema", "SchemaError", "Tags", "VersionError",
           "Workflow", "datasets", "embedding_dim", "embedding_sizes", "get_backend",
           "gpu_available", "ops"]
