"""Training batches: jagged multi-hot features with CPU-side metadata, pipelined prefetch."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"Batch": ".batch", "JaggedBatch": ".jagged", "Loader": ".loader"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
