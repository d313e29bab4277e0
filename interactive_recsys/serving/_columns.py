"""One output column of the serving module: its raw input, brought to the steps' form, the
steps (:mod:`._steps`) and the output dtype.

* :class:`NumericColumn`: a raw column of numbers or booleans, given as a 1-D tensor; its
  nulls are NaN (floats) or a boolean mask (any column, integers included).
* :class:`StringColumn`: a raw column of strings, given as a list (None: null), encoded by
  Categorify (a ``Dict[str, int]`` of the vocabulary: exact, by value) or HashBucket (the
  value-defined hash, :mod:`._hash`); the ids then go through the steps after it, if any.

Examples
--------
>>> import torch
>>> from interactive_recsys.serving._steps import Fill
>>> col = NumericColumn("n", "n", torch.int64, integer=True, steps=[Fill(0, integer=True)],
...                     out_dtype=torch.int64, keeps_nulls=False)
>>> col(torch.tensor([5, 6]), torch.tensor([False, True])).tolist()
[5, 0]
>>> ids = StringIds({"a": 3, "b": 4}, buckets=0)
>>> ids(["b", None, "zzz", "a"]).tolist()   # 1: null, 2: out of vocabulary
[4, 1, 2, 3]
"""


import math

import torch
from torch import Tensor, nn

from interactive_recsys.serving._hash import hash_strings, umod
from interactive_recsys.serving._steps import buckets_of
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX


class StringIds(nn.Module):
    """Strings to ids: Categorify's (``vocabulary``: value -> id; out of it, the value's
    hash bucket, or the one out-of-vocabulary id without buckets), or HashBucket's
    (``vocabulary`` None: every value's hash bucket); None gets ``NULL_INDEX``."""

    vocabulary: dict[str, int]  # (typed for TorchScript: it may be empty)

    def __init__(self, vocabulary: dict[str, int] | None, buckets: int) -> None:
        super().__init__()
        self.lookup = vocabulary is not None
        self.vocabulary = dict(vocabulary or {})
        self.buckets = int(buckets)
        self.residue = (1 << 64) % self.buckets if self.buckets else 0
        self.first_free, self.null = FIRST_FREE_INDEX, NULL_INDEX  # (no globals in TorchScript)

    def forward(self, values: list[str | None]) -> Tensor:
        if not self.lookup:
            h, null = hash_strings(values)
            out = buckets_of(h, self.buckets, self.residue, self.first_free)
            return torch.where(null, torch.full_like(out, self.null), out)
        vocabulary, null, oov = self.vocabulary, self.null, self.first_free
        ids = [null if v is None else vocabulary.get(v, oov) for v in values]
        out = torch.tensor(ids, dtype=torch.int64)
        if self.buckets > 0:  # only the unseen values are hashed (no vocabulary id is oov)
            missed = torch.nonzero(out == oov).flatten()
            positions: list[int] = missed.tolist()
            unseen: list[str | None] = []
            for i in positions:
                unseen.append(values[i])
            h, _ = hash_strings(unseen)
            out[missed] = umod(h, self.buckets, self.residue) + oov
        return out


def finish(x: Tensor, missing: Tensor | None, keeps_nulls: bool, out_dtype: torch.dtype
           ) -> Tensor:
    """The output tensor: in ``out_dtype`` (the offline output's), except an integer
    column whose steps keep its nulls (no fill, no ids): float64, NaN for null."""
    if keeps_nulls:
        y = x.to(torch.float64)
        if missing is not None:
            y = torch.where(missing, torch.full_like(y, math.nan), y)
        return y
    return x.to(out_dtype)


class NumericColumn(nn.Module):
    """A column of numbers: ``source`` (raw, of ``raw_dtype``; ``integer``: integers or
    booleans) through ``steps`` to ``output``."""

    def __init__(self, source: str, output: str, raw_dtype: torch.dtype, integer: bool,
                 steps: list[nn.Module], out_dtype: torch.dtype, keeps_nulls: bool) -> None:
        super().__init__()
        self.source, self.output = source, output
        self.raw_dtype, self.integer = raw_dtype, integer
        self.steps = nn.ModuleList(steps)
        self.out_dtype, self.keeps_nulls = out_dtype, keeps_nulls

    def forward(self, x: Tensor, missing: Tensor | None) -> Tensor:
        if x.dim() != 1:
            raise ValueError(f"Column '{self.source}' must be a 1-D tensor, one value a row; "
                             f"got {x.dim()} dimensions.")
        if missing is not None and (missing.dtype != torch.bool or missing.shape != x.shape):
            raise ValueError(f"The null mask of column '{self.source}' must be a boolean tensor "
                             "of the column's shape (True: null).")
        if self.integer:
            if x.is_floating_point():
                raise ValueError(f"Column '{self.source}' holds integers: pass an integer "
                                 "tensor, and its nulls as a boolean mask in nulls.")
            x = x.to(torch.int64)
        else:  # the raw dtype's values (as offline), computed in float64; nulls as NaN
            x = x.to(self.raw_dtype).to(torch.float64)
            if missing is not None:
                x = torch.where(missing, torch.full_like(x, math.nan), x)
                missing = None
        for step in self.steps:
            x, missing = step(x, missing)
        return finish(x, missing, self.keeps_nulls, self.out_dtype)


class StringColumn(nn.Module):
    """A column of strings: ``source`` through :class:`StringIds` (``head``), then the
    ``steps`` after it, to ``output``."""

    def __init__(self, source: str, output: str, head: StringIds, steps: list[nn.Module],
                 out_dtype: torch.dtype) -> None:
        super().__init__()
        self.source, self.output = source, output
        self.head = head
        self.steps = nn.ModuleList(steps)
        self.out_dtype = out_dtype
        #: where the ids go: the module's device (``module.to(device)`` moves it)
        self.register_buffer("device_of", torch.zeros(0), persistent=False)

    def forward(self, values: list[str | None]) -> Tensor:
        x = self.head(values).to(self.device_of.device)  # looked up on the CPU
        missing: Tensor | None = None
        for step in self.steps:
            x, missing = step(x, missing)
        return finish(x, missing, False, self.out_dtype)
