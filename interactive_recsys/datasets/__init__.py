"""Public RecSys data sets: a synthetic Criteo generator and readers for Criteo and MovieLens.

* :func:`synthetic_criteo` writes Criteo-shaped parquet files (fast, deterministic, cached).
* :func:`read_criteo` opens raw Criteo TSV files as a lazy :class:`~interactive_recsys.Dataset`.
* :func:`criteo_to_torchrec` turns raw Criteo day files into the ``.npy`` files TorchRec's
  DLRM reads (``irs criteo``), out of core; :func:`parquet_ids_from_torchrec` and
  :func:`torchrec_ids_from_parquet` convert its ids to and from ``--to parquet``'s.
* :func:`read_movielens` loads any common MovieLens release into one pandas DataFrame.
* :func:`synthetic_movielens` generates ratings in that layout; :func:`movielens_workflow`
  is the example graph that turns ratings into per-user histories.

Examples
--------
>>> from interactive_recsys.datasets import CRITEO_COLUMNS
>>> len(CRITEO_COLUMNS), CRITEO_COLUMNS[:3], CRITEO_COLUMNS[-1]
(40, ['label', 'I1', 'I2'], 'C26')
"""

from interactive_recsys.datasets._criteo import (
    CRITEO_CATEGORICAL,
    CRITEO_COLUMNS,
    CRITEO_CONTINUOUS,
    CRITEO_KAGGLE_CARDINALITIES,
    CRITEO_LABEL,
    CRITEO_NULL_RATES,
    criteo_csv_options,
    read_criteo,
)
from interactive_recsys.datasets._criteo_ids import (
    parquet_ids_from_torchrec,
    torchrec_ids_from_parquet,
)
from interactive_recsys.datasets._criteo_kaggle import (
    expected_distinct as criteo_kaggle_expected_distinct,
)
from interactive_recsys.datasets._criteo_torchrec import criteo_to_torchrec
from interactive_recsys.datasets._movielens import MOVIELENS_100K_GENRES, read_movielens
from interactive_recsys.datasets._movielens_workflow import (
    MOVIELENS_OUTPUT,
    movielens_workflow,
    synthetic_movielens,
)
from interactive_recsys.datasets._synthetic_criteo import synthetic_criteo

__all__ = [
    "CRITEO_CATEGORICAL",
    "CRITEO_COLUMNS",
    "CRITEO_CONTINUOUS",
    "CRITEO_KAGGLE_CARDINALITIES",
    "CRITEO_LABEL",
    "CRITEO_NULL_RATES",
    "MOVIELENS_100K_GENRES",
    "MOVIELENS_OUTPUT",
    "criteo_csv_options",
    "criteo_kaggle_expected_distinct",
    "criteo_to_torchrec",
    "movielens_workflow",
    "parquet_ids_from_torchrec",
    "read_criteo",
    "read_movielens",
    "synthetic_criteo",
    "synthetic_movielens",
    "torchrec_ids_from_parquet",
]
