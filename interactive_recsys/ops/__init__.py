"""Operators: compose them with ``>>`` (chain) and ``+`` (concatenate) into a Workflow.

Every operator in :data:`OPERATORS` follows the contract of ``_base``.
"""

from interactive_recsys.ops._base import OPERATORS, Operator, RowFilter, StatOperator
from interactive_recsys.ops._bucketize import Bucketize
from interactive_recsys.ops._cardinality import DropLowCardinality
from interactive_recsys.ops._categorify import Categorify
from interactive_recsys.ops._clip import Clip
from interactive_recsys.ops._data_stats import DataStats
from interactive_recsys.ops._difference_lag import DifferenceLag
from interactive_recsys.ops._fill import FillMedian, FillMissing
from interactive_recsys.ops._groupby import Groupby
from interactive_recsys.ops._hash_bucket import HashBucket
from interactive_recsys.ops._hashed_cross import HashedCross
from interactive_recsys.ops._join_external import JoinExternal
from interactive_recsys.ops._join_groupby import JoinGroupby
from interactive_recsys.ops._lambda_op import LambdaOp
from interactive_recsys.ops._list_ops import ListSlice, ValueCount
from interactive_recsys.ops._log import LogOp
from interactive_recsys.ops._normalize import Normalize, NormalizeMinMax
from interactive_recsys.ops._reduce_dtype import ReduceDtypeSize
from interactive_recsys.ops._rename import Rename
from interactive_recsys.ops._rows import Dropna, Filter
from interactive_recsys.ops._schema_ops import AddProperties, AddTags
from interactive_recsys.ops._select import DropColumns, SelectColumns
from interactive_recsys.ops._target_encoding import TargetEncoding
from interactive_recsys.params import Param
from interactive_recsys.tables._context import OpContext

__all__ = ["OPERATORS", "Bucketize", "Categorify", "Clip", "Dropna", "FillMedian", "FillMissing",
           "Filter", "HashBucket", "LambdaOp", "LogOp", "Normalize", "NormalizeMinMax",
           "OpContext", "Operator", "Param", "Rename", "RowFilter", "StatOperator"]
__all__ += ["DifferenceLag", "DropColumns", "Groupby", "ListSlice", "SelectColumns",
            "ValueCount"]  # sequences and columns
__all__ += ["AddProperties", "AddTags", "DataStats", "DropLowCardinality", "HashedCross",
            "JoinExternal", "JoinGroupby", "ReduceDtypeSize", "TargetEncoding"]  # features
