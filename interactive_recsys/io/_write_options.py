"""The options of the parquet writer, declared once: :class:`WriteOptions`.

``Dataset.to_parquet`` takes them as keywords (with these defaults), makes one
:class:`WriteOptions` (which checks them) and passes it down the output route:
``io._export.write_dataset`` -> ``io._writer.staged_parquet``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from interactive_recsys.params import Param

__all__ = ["DEFAULT_WRITE_OPTIONS", "SHUFFLE_MODES", "WriteOptions"]

SHUFFLE_MODES = (None, "partition", "worker", "full")


def _option(spec: Param) -> Any:
    """A field of :class:`WriteOptions`: its default and its constraint, from one ``Param``."""
    return field(default=spec.default, metadata={"param": spec})


@dataclass(frozen=True)
class WriteOptions:
    """How the parquet writer writes: each option declared once, with its default and its
    constraint, and checked when the options are made (``Dataset.to_parquet``'s keywords).

    >>> WriteOptions().row_group_size
    131072
    >>> try:
    ...     WriteOptions(shuffle="rows")
    ... except ValueError as exc:
    ...     print(str(exc).split(". ")[-1])
    Got 'rows' instead.
    """

    #: ``None``, ``"partition"``, ``"worker"`` or ``"full"`` (see ``io._writer``)
    shuffle: str | None = _option(Param(None, choices=SHUFFLE_MODES, nullable=True,
                                        must=f"one of {SHUFFLE_MODES}"))
    #: files per Dask worker (default: one file per partition)
    out_files_per_proc: int | None = _option(Param(None, kind="int", low=1, nullable=True,
                                                   show_type=True))
    #: replace an existing output (else it is an error)
    overwrite: bool = _option(Param(False, kind="bool", must="True or False"))
    #: the seed of the shuffles
    seed: int = _option(Param(0, kind="int", low=0, show_type=True))
    #: rows per parquet row group
    row_group_size: int = _option(Param(128 * 1024, kind="int", low=1, show_type=True))
    #: options of the fsspec filesystem when the output is a URL
    storage_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for option in fields(self):
            if "param" in option.metadata:
                option.metadata["param"].validate(None, option.name, getattr(self, option.name))


#: The writer's defaults (the keywords' defaults of ``Dataset.to_parquet``).
DEFAULT_WRITE_OPTIONS = WriteOptions()
