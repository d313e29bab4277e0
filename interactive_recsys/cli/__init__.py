"""The ``irs`` command line: ``irs run``, ``update``, ``criteo``, ``predict``, ``clean``,
``report`` and ``experiments`` (``irs --help``)."""

from interactive_recsys.cli._main import main

__all__ = ["main"]
