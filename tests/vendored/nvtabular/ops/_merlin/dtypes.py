"""``merlin.dtypes.dtype``: a dtype's name as this project writes it in schemas."""

from typing import Any

from interactive_recsys.compat.nvtabular.types import dtype_name_of


def dtype(value: Any) -> str:
    return dtype_name_of(value)


__all__ = ["dtype"]
