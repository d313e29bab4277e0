"""Names a package imports on first use (PEP 562): Dask, the widgets, reports and the loader
stay out of ``import interactive_recsys`` until asked for.

>>> __getattr__ = lazy_exports("interactive_recsys", {"Loader": ".loader", "stats": ".stats"})
>>> __getattr__("Loader").__name__, __getattr__("stats").__name__
('Loader', 'interactive_recsys.stats')
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(module: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` for the package or module named ``module``: ``exports`` maps each
    name to the module that defines it, or that *is* it (``{"stats": ".stats"}``: the
    submodule), relative to ``module``'s package as the module's own imports are.

    >>> cli_getattr = lazy_exports("interactive_recsys.cli",
    ...                            {"Workflow": "interactive_recsys.workflow"})
    >>> cli_getattr("Workflow").__module__
    'interactive_recsys.workflow._workflow'
    """

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        found = sys.modules.get(module)
        package = found.__package__ if found is not None else module
        target = importlib.import_module(exports[name], package)
        value = target if exports[name].rsplit(".", 1)[-1] == name else getattr(target, name)
        if found is not None:
            setattr(found, name, value)  # later lookups find it without this function
        return value

    return __getattr__


def lazy_dir(module: str, exports: dict[str, str]) -> Callable[[], list[str]]:
    """A ``__dir__`` for ``module`` that lists its lazy names beside the loaded ones, so that
    tab completion and ``dir()`` show what :func:`lazy_exports` serves before it is loaded.

    >>> "Workflow" in lazy_dir("interactive_recsys", {"Workflow": ".workflow._workflow"})()
    True
    """

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[module])) | set(exports))

    return __dir__
