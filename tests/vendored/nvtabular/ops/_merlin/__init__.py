"""The few ``merlin.core`` / ``merlin.dtypes`` names NVTabular's operator tests import.

These are Merlin's test-side helpers (frame library probes, list flattening), not part of
the port; :mod:`interactive_recsys.compat.nvtabular.dispatch` holds the user-facing ones.
"""

from . import compat, dispatch, dtypes

__all__ = ["compat", "dispatch", "dtypes"]
