"""The ``irs`` command line: ``irs run``, ``update``, ``criteo``, ``predict``, ``clean``,
``report`` and ``experiments`` (``irs --help``).

``main`` is imported on first use, so that ``python -m interactive_recsys.cli._main`` runs
the module once, as ``__main__`` (no second copy, no runpy warning on stderr).
"""

from interactive_recsys.lazy import lazy_exports

__all__ = ["main"]

__getattr__ = lazy_exports(__name__, {"main": "._main"})
