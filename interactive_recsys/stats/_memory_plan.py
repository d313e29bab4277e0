"""Memory of embedding tables and their placement on GPUs.

A table of ``rows x dim`` weights takes ``rows * dim * bytes_per_weight`` bytes, and the
optimizer keeps state of the same shape: none for plain SGD, one copy for Adagrad
(the accumulated squared gradients), two for Adam (first and second moments)::

    bytes = rows * dim * {fp32: 4, fp16: 2} * (1 + {none/sgd: 0, adagrad: 1, adam: 2})

Two ways to spread tables over ``N`` GPUs of ``M`` bytes each (HugeCTR's slot modes):

* **table-wise** ("localized"): every table lives whole on one GPU; tables are placed
  largest first on the least-loaded GPU (greedy balancing). A table larger than one GPU
  cannot be placed this way.
* **row-wise** ("distributed", hash-sharded): the rows of every table are split over all
  GPUs (``rows // N`` each, the first ``rows % N`` GPUs one more), so any table fits as
  long as the total does.

Examples
--------
>>> plan = MemoryPlan([EmbeddingTable("a", 1_000_000, 64), EmbeddingTable("b", 10, 16)],
...                   num_gpus=2, gpu_memory="1GB", dtype="fp32", optimizer="adam")
>>> plan.table_bytes["a"]        # 1M rows * 64 * 4 bytes * (1 + 2)
768000000
>>> plan.table_wise.gpu_bytes, plan.table_wise.fits
([768000000, 1920], True)
>>> plan.row_wise.gpu_bytes
[384000960, 384000960]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dask.utils import format_bytes, parse_bytes

from interactive_recsys.params import Param, param_error, validate_params

#: bytes of one weight
DTYPE_BYTES = {"fp32": 4, "fp16": 2}
#: optimizer state, in copies of the table
OPTIMIZER_STATE = {"none": 0, "sgd": 0, "adagrad": 1, "adam": 2}
_DTYPE_ALIASES = {"float32": "fp32", "float16": "fp16", "fp32": "fp32", "fp16": "fp16"}


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` lower-cased if it is one of ``choices``; else a clear ``ParameterError``."""
    choices = list(choices)
    key = str(value).lower()
    if key not in choices:
        raise param_error(name, None, f"must be one of {choices}. "
                          f"Got {value!r} instead.")
    return key


def parse_memory(value: int | float | str, name: str = "gpu_memory") -> int:
    """Bytes from an int or a string such as ``"16GB"`` (10**9) or ``"16GiB"`` (2**30).

    >>> parse_memory("2GiB"), parse_memory("2GB"), parse_memory(1024)
    (2147483648, 2000000000, 1024)
    """
    try:
        nbytes = int(parse_bytes(value)) if isinstance(value, str) else int(value)
    except (ValueError, TypeError) as exc:
        raise param_error(name, None, f"must be a number of bytes or a size such "
                          f"as '16GB' or '80GiB'. Got {value!r} instead.") from exc
    if nbytes <= 0:
        raise param_error(name, None, f"must be positive. Got {value!r} instead.")
    return nbytes


def table_bytes(rows: int, dim: int, dtype: str = "fp32", optimizer: str = "none") -> int:
    """Bytes of one table with its optimizer state.

    >>> table_bytes(1000, 16, "fp16", "adagrad")   # 1000 * 16 * 2 * 2
    64000
    """
    dtype = _DTYPE_ALIASES.get(str(dtype).lower(), str(dtype))
    dtype = check_choice("dtype", dtype, DTYPE_BYTES)
    optimizer = check_choice("optimizer", optimizer, OPTIMIZER_STATE)
    return int(rows) * int(dim) * DTYPE_BYTES[dtype] * (1 + OPTIMIZER_STATE[optimizer])


@dataclass(frozen=True)
class EmbeddingTable:
    """One embedding table: its name, number of rows (the cardinality) and width."""

    name: str
    rows: int
    dim: int


@dataclass
class Placement:
    """Where tables (or their rows) go: bytes per GPU, what could not be placed, and fit."""

    mode: str
    capacity: int
    gpu_bytes: list[int]
    gpu_tables: list[list[str]] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.unplaced and max(self.gpu_bytes, default=0) <= self.capacity

    @property
    def max_bytes(self) -> int:
        return max(self.gpu_bytes, default=0)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "fits": self.fits, "gpu_bytes": list(self.gpu_bytes),
                "gpu_tables": [list(t) for t in self.gpu_tables],
                "unplaced": list(self.unplaced), "max_bytes": self.max_bytes}


def place_table_wise(sizes: dict[str, int], num_gpus: int, capacity: int) -> Placement:
    """Whole tables per GPU: largest first (ties by name) onto the least-loaded GPU (ties:
    lowest index). Tables larger than ``capacity`` are left unplaced.

    >>> p = place_table_wise({"a": 5, "b": 4, "c": 3, "d": 3}, 2, 10)
    >>> p.gpu_tables, p.gpu_bytes
    ([['a', 'd'], ['b', 'c']], [8, 7])
    """
    loads = [0] * num_gpus
    tables: list[list[str]] = [[] for _ in range(num_gpus)]
    unplaced = []
    for name, nbytes in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        if nbytes > capacity:
            unplaced.append(name)
            continue
        gpu = min(range(num_gpus), key=lambda g: (loads[g], g))
        loads[gpu] += nbytes
        tables[gpu].append(name)
    return Placement("table-wise", capacity, loads, tables, unplaced)


def place_row_wise(tables: Sequence[EmbeddingTable], bytes_per_row: dict[str, int],
                   num_gpus: int, capacity: int) -> Placement:
    """Rows of every table split over all GPUs: ``rows // N`` each, one more on the first
    ``rows % N`` GPUs.

    >>> place_row_wise([EmbeddingTable("a", 5, 1)], {"a": 10}, 2, 100).gpu_bytes
    [30, 20]
    """
    loads = [0] * num_gpus
    for t in tables:
        base, extra = divmod(t.rows, num_gpus)
        for g in range(num_gpus):
            loads[g] += (base + (g < extra)) * bytes_per_row[t.name]
    names = [t.name for t in tables]
    return Placement("row-wise", capacity, loads, [list(names) for _ in range(num_gpus)])


class MemoryPlan:
    """Bytes of every table and both placements on ``num_gpus`` GPUs of ``gpu_memory``.

    Parameters
    ----------
    tables : the embedding tables (name, rows, dim).
    num_gpus : number of GPUs (at least 1).
    gpu_memory : memory per GPU for embeddings: bytes or a size string (``"80GiB"``).
    dtype : ``"fp32"`` or ``"fp16"`` weights (``"float32"``/``"float16"`` accepted).
    optimizer : ``"none"``, ``"sgd"`` (no state), ``"adagrad"`` (+1x) or ``"adam"`` (+2x).
    """

    @validate_params({"num_gpus": Param(kind="int", low=1)})
    def __init__(self, tables: Iterable[EmbeddingTable], *, num_gpus: int = 1,
                 gpu_memory: int | str = "16GiB", dtype: str = "fp32",
                 optimizer: str = "none") -> None:
        self.tables = list(tables)
        self.num_gpus = num_gpus
        self.gpu_memory = parse_memory(gpu_memory)
        self.dtype = check_choice("dtype", _DTYPE_ALIASES.get(str(dtype).lower(), dtype),
                                  DTYPE_BYTES)
        self.optimizer = check_choice("optimizer", optimizer, OPTIMIZER_STATE)
        self.bytes_per_row = {t.name: table_bytes(1, t.dim, self.dtype, self.optimizer)
                              for t in self.tables}
        self.table_bytes = {t.name: t.rows * self.bytes_per_row[t.name] for t in self.tables}
        self.total_bytes = sum(self.table_bytes.values())
        self.too_large = sorted(n for n, b in self.table_bytes.items() if b > self.gpu_memory)
        self.table_wise = place_table_wise(self.table_bytes, num_gpus, self.gpu_memory)
        self.row_wise = place_row_wise(self.tables, self.bytes_per_row, num_gpus,
                                       self.gpu_memory)

    def to_dict(self) -> dict[str, Any]:
        return {"num_gpus": self.num_gpus, "gpu_memory": self.gpu_memory, "dtype": self.dtype,
                "optimizer": self.optimizer, "total_bytes": self.total_bytes,
                "table_bytes": dict(self.table_bytes), "too_large": list(self.too_large),
                "table_wise": self.table_wise.to_dict(), "row_wise": self.row_wise.to_dict()}

    def summary_lines(self) -> list[str]:
        """The plan in a few lines of text (used by the reports' reprs)."""
        cap = format_bytes(self.gpu_memory)
        lines = [f"memory plan: {self.dtype}, optimizer {self.optimizer} "
                 f"(state +{OPTIMIZER_STATE[self.optimizer]}x), {len(self.tables)} tables, "
                 f"total {format_bytes(self.total_bytes)}; {self.num_gpus} GPU(s) of {cap}"]
        for p in (self.table_wise, self.row_wise):
            verdict = "fits" if p.fits else "does NOT fit"
            lines.append(f"  {p.mode:<10}: max {format_bytes(p.max_bytes)} per GPU, {verdict}"
                         + (f" (unplaced: {', '.join(p.unplaced)})" if p.unplaced else ""))
        if self.too_large:
            lines.append(f"  too large for one GPU: {', '.join(self.too_large)} "
                         "(shard them row-wise)")
        return lines

    def __repr__(self) -> str:
        return "\n".join(self.summary_lines())
