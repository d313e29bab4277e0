"""The operators as attributes of the package itself (``nvt.Categorify``), as NVTabular has
them; the module's old form ``from interactive_recsys.compat import nvtabular as ops`` keeps
working.

>>> operator_attribute("Categorify") is ops.Categorify
True
"""

from __future__ import annotations

from typing import Any

from interactive_recsys.compat.nvtabular import ops


def operator_attribute(name: str) -> Any:
    """``nvt.<name>``: the operator ``nvt.ops.<name>``."""
    try:
        return getattr(ops, name)
    except AttributeError:
        raise AttributeError(f"interactive_recsys.compat.nvtabular has no operator {name!r} "
                             "(nor other attribute so named)") from None
