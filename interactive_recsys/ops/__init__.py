"""Operators: compose them with ``>>`` (chain) and ``+`` (concatenate) into a Workflow.

Every operator in :data:`OPERATORS` follows the contract of :mod:`.base`.
"""

from .base import OPERATORS, OpContext, Operator, RowFilter, StatOperator
from .bucketize import Bucketize
from .cardinality import DropLowCardinality
from .categorify import Categorify
from .clip import Clip
from .data_stats import DataStats
from .difference_lag import DifferenceLag
from .fill import FillMedian, FillMissing
from .groupby import Groupby
from .hash_bucket import HashBucket
from .hashed_cross import HashedCross
from .join_external import JoinExternal
from .join_groupby import JoinGroupby
from .lambda_op import LambdaOp
from .list_ops import ListSlice, ValueCount
from .log import LogOp
from .normalize import Normalize, NormalizeMinMax
from .params import Param
from .reduce_dtype import ReduceDtypeSize
from .rename import Rename
from .rows import Dropna, Filter
from .schema_ops import AddProperties, AddTags
from .select import DropColumns, SelectColumns
from .target_encoding import TargetEncoding

__all__ = ["OPERATORS", "Bucketize", "Categorify", "Clip", "Dropna", "FillMedian", "FillMissing",
           "Filter", "HashBucket", "LambdaOp", "LogOp", "Normalize", "NormalizeMinMax",
           "OpContext", "Operator", "Param", "Rename", "RowFilter", "StatOperator"]
__all__ += ["DifferenceLag", "DropColumns", "Groupby", "ListSlice", "SelectColumns",
            "ValueCount"]  # sequences and columns
__all__ += ["AddProperties", "AddTags", "DataStats", "DropLowCardinality", "HashedCross",
            "JoinExternal", "JoinGroupby", "ReduceDtypeSize", "TargetEncoding"]  # features
