"""Statistics tables built by a hash-partitioned tree reduction and looked up per row.

* :mod:`._layout`: the id layout of every embedding table (padding, null, out-of-vocabulary);
* :mod:`._reduce`: the tree reduction (``FAN_IN`` at a time), picks and split counts;
* :mod:`._vocabulary`: Categorify's vocabularies (ranking, split files, lookups);
* :mod:`._keyed_statistics`: one row of statistics per key (JoinGroupby, TargetEncoding);
* :mod:`._cache`: the one per-process cache of loaded tables (least recently used first out);
* :mod:`._context`: what an operator may know about where it runs (``OpContext``, ``RunFacts``).

The merges run in the tree (``sum_counts``, ``merge_sums``, ``merge_moments``) are Arrow
table functions of :mod:`..backend._arrow`. Operators live in :mod:`..ops`.
"""
