"""Operators: compose them with ``>>`` (chain) and ``+`` (concatenate) into a Workflow.

Every operator in :data:`OPERATORS` follows the contract of :mod:`.base`.
"""

from .base import OPERATORS, OpContext, Operator, RowFilter, StatOperator
from .bucketize import Bucketize
from .categorify import Categorify
from .clip import Clip
from .difference_lag import DifferenceLag
from .fill import FillMedian, FillMissing
from .groupby import Groupby
from .hash_bucket import HashBucket
from .join_groupby import JoinGroupby
from .lambda_op import LambdaOp
from .list_ops import ListSlice, ValueCount
from .log import LogOp
from .normalize import Normalize, NormalizeMinMax
from .params import Param
from .rename import Rename
from .rows import Dropna, Filter
from .select import SelectColumns
from .target_encoding import TargetEncoding

__all__ = ["OPERATORS", "Bucketize", "Categorify", "Clip", "Dropna", "FillMedian", "FillMissing",
           "Filter", "HashBucket", "LambdaOp", "LogOp", "Normalize", "NormalizeMinMax",
           "OpContext", "Operator", "Param", "Rename", "RowFilter", "StatOperator"]
__all__ += ["DifferenceLag", "Groupby", "ListSlice", "SelectColumns", "ValueCount"]  # sequences
__all__ += ["JoinGroupby", "TargetEncoding"]  # feature-engineering operators (part A)
