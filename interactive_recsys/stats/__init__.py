"""Statistics reports built as data first (dicts/JSON), then rendered by the widgets."""

from __future__ import annotations

from interactive_recsys.lazy import lazy_exports

_EXPORTS = {"EmbeddingReport": "._embedding_report", "DIMS_RULE": "._embedding_report",
            "EmbeddingTable": "._memory_plan", "MemoryPlan": "._memory_plan",
            "LookupLoss": "._lookup_loss", "lookup_loss": "._lookup_loss"}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
