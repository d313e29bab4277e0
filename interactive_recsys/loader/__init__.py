"""Training batches: jagged multi-hot features with CPU-side metadata, pipelined prefetch."""

from __future__ import annotations

from interactive_recsys.lazy import lazy_exports

_EXPORTS = {"Batch": "._batch", "JaggedBatch": "._jagged", "Loader": "._loader"}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
