"""Names a package imports on first use (PEP 562): widgets, reports and the loader stay out of
``import interactive_recsys`` until asked for.

>>> __getattr__ = lazy_exports("interactive_recsys", {"Loader": ".loader", "stats": ".stats"})
>>> __getattr__("Loader").__name__, __getattr__("stats").__name__
('Loader', 'interactive_recsys.stats')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each name to the relative
    module that defines it, or that *is* it (``{"stats": ".stats"}``: the submodule)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(exports[name], package)
        return module if exports[name].rsplit(".", 1)[-1] == name else getattr(module, name)

    return __getattr__
