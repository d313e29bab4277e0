"""Embedding statistics: table sizes, frequency curves, memory and sharding plans."""

from interactive_recsys.ui.embeddings._embeddings import EmbeddingView, load_bokeh

__all__ = ["EmbeddingView", "load_bokeh"]
