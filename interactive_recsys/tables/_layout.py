"""The id layout shared by every categorical encoding (Categorify, HashBucket, HashedCross).

::

    0                 padding (never emitted; free for padded lists)
    1                 null
    2 .. 2+B-1        out-of-vocabulary / hashed buckets: B buckets, or one id (2)
    2+B ..            Categorify's vocabulary, by descending frequency, ties by ascending value

So a table's ``cardinality = FIRST_FREE_INDEX + B + vocabulary size``.

>>> PAD_INDEX, NULL_INDEX, FIRST_FREE_INDEX
(0, 1, 2)
>>> FIRST_FREE_INDEX + MAX_BUCKETS == 2**63 - 1   # the cardinality still fits int64
True
"""

#: Reserved ids: padding, null, and the first id after them (out-of-vocabulary or bucket 0).
PAD_INDEX, NULL_INDEX, FIRST_FREE_INDEX = 0, 1, 2
#: Most hash buckets: the cardinality ``FIRST_FREE_INDEX + MAX_BUCKETS`` still fits int64.
MAX_BUCKETS = 2**63 - 1 - FIRST_FREE_INDEX
