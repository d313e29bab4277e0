"""Statistics reports built as data first (dicts/JSON), then rendered by the widgets."""

from __future__ import annotations

from interactive_recsys.lazy import lazy_exports

_EXPORTS = {"EmbeddingReport": "._embedding_report"}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
