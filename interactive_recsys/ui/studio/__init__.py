"""The Studio (builder, preview, dashboard and embeddings in one widget) and the experiments
table of its runs."""

from interactive_recsys.ui.studio._experiments import Experiments
from interactive_recsys.ui.studio._studio import Studio

__all__ = ["Experiments", "Studio"]
