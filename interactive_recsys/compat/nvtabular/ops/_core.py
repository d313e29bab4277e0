"""The operators NVTabular and this project share: every name the wrappers do not define is
the core's own operator (``ops.FillMissing`` ...)."""

from __future__ import annotations

from typing import Any

from interactive_recsys.compat.nvtabular.operator import core_ops as _ops


def core_operator(name: str) -> Any:
    """Every other operator: this project's own."""
    if name == "ColumnSimilarity":  # scipy is imported only by who asks for it
        from interactive_recsys.compat.nvtabular.column_similarity import (  # lazy: scipy
            ColumnSimilarity,
        )

        return ColumnSimilarity
    try:
        return getattr(_ops, name)
    except AttributeError:
        raise AttributeError(f"interactive_recsys.compat.nvtabular.ops has no operator "
                             f"{name!r}") from None
