"""Previews of a workflow's input and output on a sample."""

from interactive_recsys.ui.preview._preview import Preview, PreviewModel

__all__ = ["Preview", "PreviewModel"]
