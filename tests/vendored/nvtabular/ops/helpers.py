"""Names NVTabular's operator tests import from its ``tests/conftest.py``."""

from typing import Any

import numpy as np
import pandas as pd

allcols_csv = ["timestamp", "id", "label", "name-string", "x", "y", "z"]
mycols_csv = ["name-string", "id", "label", "x", "y"]
mycols_pq = ["name-cat", "name-string", "id", "label", "x", "y"]
mynames = ["Alice", "Bob", "Charlie", "Dan", "Edith", "Frank", "Gary", "Hannah", "Ingrid",
           "Jerry", "Kevin", "Laura", "Michael", "Norbert", "Oliver", "Patricia", "Quinn",
           "Ray", "Sarah", "Tim", "Ursula", "Victor", "Wendy", "Xavier", "Yvonne", "Zelda"]


def assert_eq(a: Any, b: Any, *args: Any, **kwargs: Any) -> None:
    """NVTabular's CPU ``assert_eq``: pandas' frame/series checks, else ``assert_allclose``."""
    if isinstance(a, pd.DataFrame):
        return pd.testing.assert_frame_equal(a, b, *args, **kwargs)
    if isinstance(a, pd.Series):
        return pd.testing.assert_series_equal(a, b, *args, **kwargs)
    return np.testing.assert_allclose(a, b)
