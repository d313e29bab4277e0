"""Widgets for JupyterLab: thin views over plain-Python models.

Names are imported on first use, so ``import interactive_recsys`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> module (relative to this package) that defines it
_EXPORTS = {
    "Dashboard": ".dashboard",
    "PipelineBuilder": ".builder",
    "BuilderModel": ".builder_model",
    "DagView": ".dag",
    "Preview": ".preview",
    "EmbeddingView": ".embeddings",
    "Studio": ".studio",
    "Experiments": ".experiments",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
