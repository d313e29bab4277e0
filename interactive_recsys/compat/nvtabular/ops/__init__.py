"""NVTabular 23.08's operator signatures and meanings on top of this project's operators.

``from interactive_recsys.compat.nvtabular import ops`` (or the package itself, as
``nvt.ops``) and NVTabular code keeps its results where the two projects mean different
things by the same words, and its keyword forms are mapped onto the core's:

==========================================  =================================================
NVTabular 23.08                             here
==========================================  =================================================
``Categorify(max_size=N)``                  N table *rows*: 2 reserved + OOV rows + N - 3
                                            values (the core's ``max_size`` counts values);
                                            ``max_size = num_buckets + 2``: hashing only
``Categorify(vocabs={col: values})``        looked up (:mod:`..vocabulary`), not fitted
``Categorify(out_path=...)``                NVTabular's category files (:mod:`..categories`)
``ListSlice(k)``, k > 0                     ``row[:k]`` (the core's one number is a start)
``TargetEncoding``                          ``kfold=3``; several targets: one step each;
                                            ``fold_seed=None``: a seed drawn once
``JoinGroupby()``                           ``stats=("count",)``
per-column dicts (``freq_threshold``,       one core step per value, side by side
``Bucketize``, ``DifferenceLag(shift=[..])``
``Rename(f=, name=)``, ``Filter(f=)``       functions of names / of the frame
``LambdaOp(f, dependency=, tags=,           ``f(col)`` or ``f(col, df)``; then ``AddTags``
properties=)``                              / ``AddProperties``
``AddMetadata``, ``TagAs*``                 ``AddTags`` + ``AddProperties``
``LogOp``                                   computed in float32, as NVTabular
``Normalize``                               the sample std (``ddof=1``), as NVTabular
``Normalize(out_dtype=)``,                  computed in float64, cast to ``out_dtype``, as
``NormalizeMinMax(out_dtype=)``             NVTabular (without it: float32 here, float64 there)
``ReduceDtypeSize(float_dtype=)``           ``np.float32``: as the core; others refused, with
                                            the equivalent (select the integer columns only)
``JoinExternal(on_ext=,                     the side table's keys copied under the ``on``
drop_duplicates_ext=)``                     names; its identical rows dropped first (a key
                                            left with different rows: refused)
``JoinExternal(kind_ext=, cache=)``         no effect (the format is inferred; each worker
                                            reads the table once); a csv path is read
``TagAs*(tags=)``                           ignored, as NVTabular ignores it
``HashBucket(n)``, ``HashedCross(n)``       ids ``hash % n`` from 0 (the core's: from 2)
``Groupby("col")``, ``DifferenceLag(keys)``  keys read from the input; unselected ``Groupby``
                                            keys are not output
``Groupby(ascending=False)``                lists reversed, ``first``/``last`` as NVTabular
                                            (:mod:`..groupby`)
==========================================  =================================================

Every other operator is this project's own (``ops.FillMissing`` ...). Every operator here
also has NVTabular's operator methods (``compute_output_schema``, ``transform(selector,
df)``, fitted statistics such as ``op.means``: :mod:`..operator`). The wrappers return
the core's operators (saved workflows load without this module) and accept, without effect,
NVTabular's tuning knobs that do not change results (``on_host``, ``cat_cache``,
``tree_width`` (which warns it is deprecated, as there) ...); the options that would change
them are refused naming the reason and the equivalent (:data:`REFUSED`: ``start_index``,
``na_sentinel``, ``single_table``, ``target_mean``, ``out_col``; ``drop_folds=False``,
``name_sep`` other than ``_``). What this module does *not*
copy are NVTabular's defects (docs/guide/nvtabular.md): statistics here skip nulls, a null
key is null, hashes depend on values only.

Examples
--------
>>> Categorify(max_size=10)        # 10 rows: pad, null, OOV + 7 values
Categorify(max_size=7)
>>> ListSlice(3)
ListSlice(start=0, end=3)
"""

from interactive_recsys.compat.nvtabular.groupby import Groupby
from interactive_recsys.compat.nvtabular.ops._categorical import (
    Categorify,
    HashBucket,
    HashedCross,
    JoinGroupby,
    TargetEncoding,
    get_embedding_sizes,
)
from interactive_recsys.compat.nvtabular.ops._continuous import (
    Bucketize,
    LogOp,
    Normalize,
    NormalizeMinMax,
    ReduceDtypeSize,
)
from interactive_recsys.compat.nvtabular.ops._core import core_operator
from interactive_recsys.compat.nvtabular.ops._functions import Filter, LambdaOp, Rename
from interactive_recsys.compat.nvtabular.ops._join import EXT_KINDS as EXT_KINDS
from interactive_recsys.compat.nvtabular.ops._join import JoinExternal
from interactive_recsys.compat.nvtabular.ops._metadata import (
    AddMetadata,
    AddProperties,
    AddTags,
    TagAsItemFeatures,
    TagAsItemID,
    TagAsUserFeatures,
    TagAsUserID,
)
from interactive_recsys.compat.nvtabular.ops._sequences import DifferenceLag, ListSlice
from interactive_recsys.compat.nvtabular.ops._steps import REFUSED as REFUSED
from interactive_recsys.compat.nvtabular.ops._steps import RESERVED_ROWS as RESERVED_ROWS
from interactive_recsys.compat.nvtabular.ops._steps import TUNING as TUNING
from interactive_recsys.compat.nvtabular.ops._steps import Steps
from interactive_recsys.compat.nvtabular.ops._values import hash_ids as hash_ids
from interactive_recsys.compat.nvtabular.ops._values import log_float32 as log_float32

#: Every other operator: this project's own (``ops.FillMissing`` ...).
__getattr__ = core_operator

__all__ = [
    "AddMetadata",
    "AddProperties",
    "AddTags",
    "Bucketize",
    "Categorify",
    "DifferenceLag",
    "Filter",
    "Groupby",
    "HashBucket",
    "HashedCross",
    "JoinExternal",
    "JoinGroupby",
    "LambdaOp",
    "ListSlice",
    "LogOp",
    "Normalize",
    "NormalizeMinMax",
    "ReduceDtypeSize",
    "Rename",
    "Steps",
    "TagAsItemFeatures",
    "TagAsItemID",
    "TagAsUserFeatures",
    "TagAsUserID",
    "TargetEncoding",
    "get_embedding_sizes",
]
