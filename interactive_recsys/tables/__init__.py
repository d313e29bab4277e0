"""Statistics tables built by a hash-partitioned tree reduction and looked up per row.

* ``_layout``: the id layout of every embedding table (padding, null, out-of-vocabulary);
* ``_reduce``: the tree reduction (``FAN_IN`` at a time), picks and split counts;
* ``_vocabulary``: Categorify's vocabularies (ranking, split files, lookups);
* ``_keyed_statistics``: one row of statistics per key (JoinGroupby, TargetEncoding);
* ``_cache``: the one per-process cache of loaded tables (least recently used first out);
* ``_context``: what an operator may know about where it runs (``OpContext``, ``RunFacts``).

The merges run in the tree (``sum_counts``, ``merge_sums``, ``merge_moments``) are Arrow
table functions of ``backend._arrow``. Operators live in :mod:`~interactive_recsys.ops`.
"""
