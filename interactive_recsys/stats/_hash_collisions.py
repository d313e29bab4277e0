"""How many lookups a hashed embedding table makes share their row: the collision rate of
``HashBucket(num_buckets)`` on a column, computed exactly from the column's value counts.

``HashBucket`` puts value ``v`` in bucket ``hash(v) % num_buckets`` (the value-defined hash of
:mod:`interactive_recsys.hashing`; nulls and NaN get the null row). A lookup *collides* when
its bucket also holds another distinct value of the column: its embedding row is shared.
The rate is the share of the non-null lookups (rows, or list elements) that collide.

It is computed as the vocabulary is built (one Dask pass, on the active client or the local
scheduler): each partition counts its values, the counts are cut into splits by the bucket
(so that every bucket lives in one split) and summed per split in a tree, and each split
counts the distinct values of each of its buckets. No task holds more than one split's
distinct values.

:func:`power_of_two_rates` gives the rate of every power-of-two bucket count in one pass: the
bucket of ``2**k`` is the hash's low ``k`` bits, so with the values sorted by their hash's
bits read backwards, a value shares a bucket of ``2**k`` exactly when a neighbour's hash ends
in the same ``k`` bits.

>>> import pandas as pd
>>> frame = pd.DataFrame({"c": ["a", "b", "a", None, "c"]})
>>> hash_collision_rate(frame, "c", num_buckets=1)    # one bucket: all 4 lookups share it
1.0
>>> hash_collision_rate(frame, "c", num_buckets=2**40)   # as many buckets as ids: none do
0.0
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from numbers import Integral
from typing import Any

import dask
import numpy as np
import pyarrow as pa

from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.backend import get_backend
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.io._dataset import Dataset
from interactive_recsys.ops._hash_bucket import HASHABLE_PREFIXES
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.schema import element_dtype
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._layout import MAX_BUCKETS
from interactive_recsys.tables._reduce import delayed_task, delayed_tasks, num_splits, tree

#: Task key prefix of the counting graph (the task stream shows it).
PREFIX = "hash-collisions"
#: ``profile[m + 1]``: the lookups of the values whose hash shares at most its ``m`` low bits
#: with another value's (-1: no other value); 64 bits: equal hashes.
PROFILE_SIZE = 66


def hash_collision_rate(data: Any, column: str, num_buckets: int, *,
                        storage_options: dict[str, Any] | None = None) -> float:
    """The share of ``column``'s non-null lookups whose ``HashBucket(num_buckets)`` bucket
    also holds another distinct value (0.0 when the column has no non-null value).

    It equals what ``HashBucket`` gives on the same data (the same hash, exact value counts),
    for plain columns and for list columns (each element is a lookup).

    Parameters
    ----------
    data : pandas.DataFrame, Dataset or path
        The data (a path or URL is opened as :class:`~interactive_recsys.Dataset`, with
        ``storage_options``). A Dataset is counted on the active Dask client, if any.
    column : str
        The categorical column.
    num_buckets : int
        The bucket count, at least 1 (``HashBucket``'s parameter).

    Examples
    --------
    >>> import pandas as pd, interactive_recsys as irs
    >>> frame = pd.DataFrame({"item": [f"i{k % 1000}" for k in range(10_000)]})
    >>> rate = irs.hash_collision_rate(frame, "item", num_buckets=4096)
    >>> 0.1 < rate < 0.3    # 1,000 values in 4,096 buckets: about 1 - exp(-999 / 4096)
    True
    """
    buckets = check_num_buckets(num_buckets)
    ds = checked_dataset(data, column, storage_options)
    colliding, lookups = _reduce(ds, column, buckets,
                                 functools.partial(bucket_collisions, num_buckets=buckets))
    return float(colliding / lookups) if lookups else 0.0


def power_of_two_rates(data: Any, bounds: Mapping[str, tuple[int, int]], *,
                       storage_options: dict[str, Any] | None = None
                       ) -> dict[str, dict[int, float]]:
    """Per column of ``bounds`` (``{column: (smallest, largest)}``, both powers of two),
    ``{num_buckets: collision rate}`` of every power of two from ``smallest`` to
    ``largest``, all columns in one pass; each rate is :func:`hash_collision_rate`'s.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"c": [str(k) for k in range(300)]})
    >>> rates = power_of_two_rates(frame, {"c": (64, 1024)})["c"]
    >>> list(rates) == [64, 128, 256, 512, 1024], rates[64] == hash_collision_rate(frame, "c", 64)
    (True, True)
    """
    for column, (smallest, largest) in bounds.items():
        for name, value in (("smallest", smallest), ("largest", largest)):
            if check_num_buckets(value) & (value - 1):
                raise ParameterError(f"power_of_two_rates: the {name} bucket count of "
                                     f"{column!r} must be a power of two; got {value!r}.")
        if largest < smallest:
            raise ParameterError(f"power_of_two_rates: the largest bucket count of {column!r} "
                                 f"({largest}) is below its smallest ({smallest}).")
    ds = data if isinstance(data, Dataset) else Dataset(data, storage_options=storage_options)
    for column in bounds:
        checked_dataset(ds, column, None)
    graphs = {column: _graph(ds, column, smallest, shared_bits_profile)
              for column, (smallest, _) in bounds.items()}
    (profiles,) = compute(dask.delayed(graphs), phase="hash collisions", reads=list(bounds))
    out = {}
    for column, (smallest, largest) in bounds.items():
        profile = profiles[column]
        lookups = int(profile.sum())
        out[column] = {1 << k: (int(profile[k + 1:].sum()) / lookups if lookups else 0.0)
                       for k in range(smallest.bit_length() - 1, largest.bit_length())}
    return out  # profile[k + 1:]: the values sharing at least k low bits with another


# ---- checks ---------------------------------------------------------------------------------
def check_num_buckets(num_buckets: Any) -> int:
    """``num_buckets`` as an int, refused unless a whole number in ``[1, MAX_BUCKETS]``."""
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, Integral) \
            or not 1 <= num_buckets <= MAX_BUCKETS:
        raise ParameterError(f"num_buckets must be a whole number of hash buckets, at least 1 "
                             f"(and at most {MAX_BUCKETS:,}), as HashBucket takes; got "
                             f"{num_buckets!r}.")
    return int(num_buckets)


def checked_dataset(data: Any, column: str, storage_options: dict[str, Any] | None) -> Dataset:
    """``data`` as a Dataset, refused when it has no column ``column`` or the column's
    values cannot be hashed (a struct)."""
    ds = data if isinstance(data, Dataset) else Dataset(data, storage_options=storage_options)
    if column not in ds.schema:
        names = ds.schema.names
        shown = ", ".join(map(repr, names[:20])) + (", ..." if len(names) > 20 else "")
        raise SchemaError(f"Column {column!r} is not in the data; its columns are {shown}. "
                          "Pass one of them.")
    dtype = ds.schema[column].dtype
    if not element_dtype(dtype).startswith(HASHABLE_PREFIXES):
        raise SchemaError(f"Column {column!r} of dtype {dtype} cannot be hashed: HashBucket "
                          "hashes integers, floats, booleans, strings, decimals and "
                          "timestamps. Pick such a column (or a struct's field).")
    return ds


# ---- the pass ---------------------------------------------------------------------------------
def _reduce(ds: Dataset, column: str, modulus: int, finish: Any) -> Any:
    """:func:`_graph` computed (one phase on the active client, or the local scheduler)."""
    (result,) = compute(_graph(ds, column, modulus, finish), phase="hash collisions",
                        reads=[column])
    return result


def _graph(ds: Dataset, column: str, modulus: int, finish: Any) -> Any:
    """The delayed sum of ``finish(counts)`` over the splits of ``column``'s summed value
    counts. A value ``v`` goes to split ``(hash(v) % modulus) % splits``: a function of its
    bucket for every bucket count that ``modulus`` divides."""
    splits = num_splits(ds.known_num_rows, ds.npartitions, None)
    parts = ds.arrow_ddf([column]).to_delayed()
    partials = [delayed_task(PREFIX, "count", count_partition, part, column, modulus, splits,
                             ds.backend.name) for part in parts]
    finished = [delayed_task(PREFIX, "buckets", finish, tree(
        partials, vocab.sum_counts, delayed_tasks(PREFIX, "sum"),
        first=functools.partial(_sum_split, split=s))) for s in range(splits)]
    return delayed_task(PREFIX, "total", _add, *finished)


def count_partition(df: Any, column: str, modulus: int, splits: int,
                    backend_name: str) -> list[kc.Counts]:
    """One partition's value counts of ``column`` (list elements for a list column; no
    null, no NaN), cut into ``splits`` by ``(hash % modulus) % splits``."""
    b = get_backend(backend_name)
    col = b.column(df, column)
    if b.dtype(col).startswith("list<"):
        col = b.list_values(col)
    counts = b.keyed_value_counts(col)
    return kc.split(counts, splits, kc.value_hashes(counts) % np.uint64(modulus))


def _sum_split(items: list[list[kc.Counts]], split: int) -> kc.Counts:
    return vocab.sum_counts([i[split] for i in items])


def _add(*parts: np.ndarray) -> np.ndarray:
    return np.sum(parts, axis=0)


def _weights(counts: kc.Counts) -> np.ndarray:
    if isinstance(counts, pa.Table):
        return counts["count"].to_numpy().astype(np.int64)
    return counts.counts.astype(np.int64)


def bucket_collisions(counts: kc.Counts, num_buckets: int) -> np.ndarray:
    """``[colliding lookups, lookups]`` of one split of summed counts (one row per
    distinct value): the lookups of the values whose bucket holds another value.

    >>> t = pa.table({"value": [1, 2, 3], "count": [5, 1, 2]})
    >>> bucket_collisions(t, 1).tolist()   # one bucket: every value shares it
    [8, 8]
    """
    weights = _weights(counts)
    if not len(weights):
        return np.zeros(2, np.int64)
    buckets = kc.value_hashes(counts) % np.uint64(num_buckets)
    _, inverse, sizes = np.unique(buckets, return_inverse=True, return_counts=True)
    return np.array([weights[sizes[inverse] > 1].sum(), weights.sum()], np.int64)


_REVERSED_BYTES = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], np.uint8)


def reverse_bits(hashes: np.ndarray) -> np.ndarray:
    """Each uint64 with its 64 bits in reverse order.

    >>> reverse_bits(np.array([1, 2**63], np.uint64)).tolist() == [2**63, 1]
    True
    """
    as_bytes = np.ascontiguousarray(hashes, np.uint64).view(np.uint8).reshape(-1, 8)
    return np.ascontiguousarray(_REVERSED_BYTES[as_bytes][:, ::-1]).view(np.uint64).ravel()


def trailing_zeros(x: np.ndarray) -> np.ndarray:
    """The count of trailing zero bits of each uint64 (64 for 0).

    >>> trailing_zeros(np.array([1, 8, 2**63, 0, 12], np.uint64)).tolist()
    [0, 3, 63, 64, 2]
    """
    with np.errstate(over="ignore"):
        lowest = x & (~x + np.uint64(1))  # the lowest set bit (a power of two, or 0)
    out = np.frexp(lowest.astype(np.float64))[1].astype(np.int64) - 1  # exact: powers of two
    out[x == 0] = 64
    return out


def shared_bits_profile(counts: kc.Counts) -> np.ndarray:
    """The lookups of each split's values by the most low hash bits they share with another
    value (see :data:`PROFILE_SIZE`): the values sharing at least ``k`` bits are those that
    collide with ``2**k`` buckets.

    >>> t = pa.table({"value": [1, 2], "count": [3, 4]})
    >>> int(shared_bits_profile(t)[1:].sum())   # with 2**0 = 1 bucket, all 7 lookups collide
    7
    """
    weights = _weights(counts)
    profile = np.zeros(PROFILE_SIZE, np.int64)
    if not len(weights):
        return profile
    hashes = kc.value_hashes(counts)
    order = np.argsort(reverse_bits(hashes), kind="stable")  # equal low bits: neighbours
    hashes, weights = hashes[order], weights[order]
    shared = np.full(len(hashes), -1, np.int64)
    if len(hashes) > 1:
        between = trailing_zeros(hashes[1:] ^ hashes[:-1])  # low bits two neighbours share
        shared[:-1] = np.maximum(shared[:-1], between)
        shared[1:] = np.maximum(shared[1:], between)
    np.add.at(profile, shared + 1, weights)
    return profile
