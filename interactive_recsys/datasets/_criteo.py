"""Criteo: its columns, null rates and cardinalities, and the raw TSV reader."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interactive_recsys.io._dataset import Dataset

PathLike = str | os.PathLike


CRITEO_LABEL = "label"
CRITEO_CONTINUOUS = [f"I{i}" for i in range(1, 14)]
CRITEO_CATEGORICAL = [f"C{i}" for i in range(1, 27)]
CRITEO_COLUMNS = [CRITEO_LABEL, *CRITEO_CONTINUOUS, *CRITEO_CATEGORICAL]

#: Distinct values of C1..C26 in the Criteo Kaggle (Display Advertising Challenge) train set.
CRITEO_KAGGLE_CARDINALITIES = (
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
    27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572,
)  # fmt: skip

# Columns that are missing together in real Criteo rows share one null mask: (columns, rate).
# Rates follow the Criteo Kaggle train set (C22 is ~76 % missing there, too).
_NULL_GROUPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("I1", "I10"), 0.45),
    (("I3",), 0.20),
    (("I4", "I13"), 0.20),
    (("I5", "I7", "I9", "I11"), 0.05),
    (("I6",), 0.25),
    (("I8",), 0.001),
    (("I12",), 0.77),
    (("C3", "C4", "C12", "C16", "C21", "C24"), 0.035),
    (("C6",), 0.12),
    (("C19", "C20", "C25", "C26"), 0.44),
    (("C22",), 0.76),
)

#: Fraction of nulls that :func:`synthetic_criteo` gives each column (0.0 for the rest).
CRITEO_NULL_RATES: dict[str, float] = {
    name: next((rate for cols, rate in _NULL_GROUPS if name in cols), 0.0)
    for name in CRITEO_COLUMNS
}


def criteo_csv_options() -> dict[str, Any]:
    r"""Return the ``Dataset`` keyword arguments that describe a raw Criteo TSV file.

    Raw Criteo files have no header; each line holds 40 tab-separated fields: the 0/1 label,
    13 integer counts ``I1..I13`` and 26 hashed categoricals ``C1..C26``. An empty field is a
    null. Integer columns are declared ``"int64"`` and must be read as *nullable* integers.

    Returns
    -------
    dict
        ``engine``, ``sep``, ``names``, ``dtypes`` and ``header`` for
        :class:`interactive_recsys.io._dataset.Dataset`. A new dict on every call.

    Examples
    --------
    >>> opts = criteo_csv_options()
    >>> opts["engine"], opts["sep"], opts["header"], len(opts["names"])
    ('csv', '\t', None, 40)
    >>> opts["dtypes"]["I1"], opts["dtypes"]["C1"]
    ('int64', 'string')
    """
    dtypes = {CRITEO_LABEL: "int64"}
    dtypes.update({name: "int64" for name in CRITEO_CONTINUOUS})
    dtypes.update({name: "string" for name in CRITEO_CATEGORICAL})
    return {
        "engine": "csv",
        "sep": "\t",
        "names": list(CRITEO_COLUMNS),
        "dtypes": dtypes,
        "header": None,
    }


def read_criteo(
    path: PathLike | Sequence[PathLike], *, part_size: str | int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Dataset:
    r"""Open raw Criteo TSV data (Kaggle ``train.txt`` or the 1TB ``day_N`` files) lazily.

    Parameters
    ----------
    path : str, os.PathLike or sequence of them
        One file, a glob pattern such as ``"criteo/day_*"``, or a list of files.
    part_size : str or int, optional
        Target partition size (``"128MB"`` or bytes), passed to the Dataset.
    storage_options : dict, optional
        fsspec options when ``path`` is a URL (``s3://...``), passed to the Dataset.

    Returns
    -------
    interactive_recsys.io._dataset.Dataset
        Columns :data:`CRITEO_COLUMNS`; ``label`` and ``I1..I13`` are nullable int64,
        ``C1..C26`` are strings.

    See Also
    --------
    criteo_csv_options : The keyword arguments used to build the Dataset.

    Examples
    --------
    >>> import pathlib, shutil, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> tsv = tmp / "train.txt"
    >>> _ = tsv.write_text("\t".join(["1", "5"] + [""] * 12 + ["68fd1e64"] * 26) + "\n")
    >>> ds = read_criteo(tsv)
    >>> type(ds).__name__
    'Dataset'
    >>> shutil.rmtree(tmp)
    """
    from interactive_recsys.io._dataset import Dataset  # lazy: Dask, not for the TSV readers

    return Dataset(path, part_size=part_size, storage_options=storage_options,
                   **criteo_csv_options())
