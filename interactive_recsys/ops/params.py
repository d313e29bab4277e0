"""Operator parameters: :class:`Param` from the package's one parameter system,
:mod:`interactive_recsys.params` (kept here so ``ops.params`` imports keep working)."""

from ..params import REQUIRED, Param, param_error

__all__ = ["REQUIRED", "Param", "param_error"]
