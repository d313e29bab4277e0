"""Categorify: map categorical values to contiguous embedding-table rows.

Index layout (the same for every column and backend)::

    0                 padding (never emitted; free for padded lists)
    1                 null
    2 .. 2+B-1        out-of-vocabulary: B = num_buckets hashed buckets, or one index (2)
    2+B ..            the vocabulary, by descending frequency, ties by ascending value
                      (a given ``vocabulary=``: in the order given)

``cardinality = 2 + B + vocabulary size`` (B is 1 when ``num_buckets`` is not set), plus the
ids an update retired (``max_frequency``). The layout's constants are ``tables._layout``'s.
Vocabularies are parquet files (``value, count, index``) under the workflow's artifacts,
readable by people; see ``tables._vocabulary`` for how they are built.

What is kept: values seen at least ``freq_threshold`` and at most ``max_frequency`` times
(the others are out of vocabulary: ``tables._frequency_cut`` says why a value seen too often
gets no id of its own), at most ``max_size`` of them; or exactly the values of a given
``vocabulary`` (``ops._given_vocabulary``: no counting pass). ``Workflow.inverse_transform``
reads the ids back, ``Workflow.vocabulary(column)`` gives the values in id order.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"c": ["b", "a", "b", None, "z"]})
>>> wf = irs.Workflow(["c"] >> Categorify())
>>> wf.fit_transform(df)["c"].tolist()   # b: 2 times -> 3; then a, z by value -> 4, 5
[3, 4, 3, 1, 5]
>>> wf.transform(pd.DataFrame({"c": ["new"]}))["c"].tolist()  # unseen -> OOV index 2
[2]
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.ops._base import (
    SavedParamError,
    SavedStatistics,
    StateFolders,
    StatOperator,
    group_names,
    merged_directory,
)
from interactive_recsys.ops._given_vocabulary import GivenVocabulary
from interactive_recsys.ops._hash_bucket import check_index_dtype, encode_column, require_hashable
from interactive_recsys.ops._state_check import TABLE, check_shape
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import ColumnSchema, Schema, Tags, element_dtype
from interactive_recsys.store._artifacts import key_directory, resolve
from interactive_recsys.tables import _frequency_cut as frequency_cut
from interactive_recsys.tables import _ranking as ranking
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables import _vocabulary_update as update
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, MAX_BUCKETS, NULL_INDEX
from interactive_recsys.tables._reduce import (
    MAX_SPLITS,
    Graph,
    delayed_task,
    first_level_by_keys,
    listed,
    num_splits,
    pick,
    tree,
)
from interactive_recsys.tables._vocabulary_check import (
    check_pending,
    check_vocabulary,
    check_vocabulary_files,
    read_checked,
    split_path,
)

#: Schema properties of a vocabulary extended by ``Workflow.update``.
UPDATE_PROPERTIES = ("vocabulary_version", "new_rows")


class Categorify(StatOperator):
    """Encode categorical columns as contiguous integer ids (see the module docstring).

    >>> import pandas as pd, interactive_recsys as irs
    >>> df = pd.DataFrame({"c": ["spam"] * 4 + ["a", "a", "b"]})
    >>> irs.Workflow(["c"] >> Categorify(max_frequency=3)).fit_transform(df)["c"].tolist()
    [2, 2, 2, 2, 3, 3, 4]
    >>> given = Categorify(vocabulary={"c": ["b", "a"]})   # ids in this order, nothing counted
    >>> irs.Workflow(["c"] >> given).fit_transform(df)["c"].tolist()
    [2, 2, 2, 2, 4, 4, 3]
    """

    summary = "Map categories to contiguous ids by frequency"
    online = True
    category = "categorical"
    dictionary_input = True
    freq_threshold = Param(0, kind="int", low=0,
                           doc="Values seen fewer times than this become out-of-vocabulary.")
    max_size = Param(None, kind="int", low=1, nullable=True,
                     doc="Keep at most this many (most frequent) values per vocabulary.")
    max_frequency = Param(None, kind="int", low=1, nullable=True,
                          doc="Values seen more than this many times become "
                              "out-of-vocabulary (bots, spam, placeholders).")
    num_buckets = Param(None, kind="int", low=1, high=MAX_BUCKETS, nullable=True,
                        doc="Hash out-of-vocabulary values into this many buckets.")
    encode_type = Param("joint", choices=("joint", "combo"),
                        doc="Column groups: one shared vocabulary (joint) or one for the "
                            "combination (combo).")
    dtype = Param("int64", choices=("int32", "int64"), doc="Output index dtype.")
    split_out = Param(None, kind="int", low=1, high=MAX_SPLITS, nullable=True,
                      doc="Hash splits of the vocabulary build (None: about 8M rows each).")
    vocabulary = Param(None, kind="any", nullable=True,
                       must="{column: values in id order}, a parquet path or None",
                       doc="Given vocabularies, values in id order: {column: values}, a "
                           "parquet path or {column: wf.vocabulary(column)}; nothing is "
                           "counted, every other value is out of vocabulary.")
    state_shape = {"vocabs": ("map", {**TABLE, "cardinality": "int"})}

    def check_state(self, state: dict[str, Any]) -> None:
        """Also check that each vocabulary's numbers agree: ``cardinality`` is the reserved
        rows plus the vocabulary (a smaller one would size embedding tables below the ids
        emitted), and its counts are whole numbers >= 0 that add up."""
        super().check_state(state)
        for key, info in state["vocabs"].items():
            here = f"vocabs[{key!r}]"
            for name in ("null_count", "value_count", "oov_count"):
                if name in info:
                    check_shape(info[name], "int", f"{here}.{name}")
            retired = info.get("retired", 0)
            check_shape(retired, "int", f"{here}.retired")
            expected = self.first_vocab_index + info["size"] + retired
            if info["cardinality"] != expected:
                raise ValueError(
                    f"{here}.cardinality is {info['cardinality']}, but {self.first_vocab_index} "
                    f"reserved rows (padding, null, {self.oov_buckets} out-of-vocabulary) and "
                    f"{info['size']} values" + (f" (and {retired} retired ids)" if retired
                                                else "")
                    + f" need {expected}; refit and save the workflow again")
            if {"null_count", "value_count", "oov_count"} <= set(info) and (
                    info["null_count"] + info["oov_count"] > info["value_count"]):
                raise ValueError(f"{here}: null_count + oov_count exceed value_count")

    def check_saved_files(self, state: dict[str, Any], folder: str,
                          storage_options: Any = None) -> None:
        """Each vocabulary's split files: parquet, its columns, ``size`` rows in all."""
        for info in state["vocabs"].values():
            check_vocabulary_files(resolve(folder, info["path"], "vocabulary path"), info,
                                   storage_options)

    @property
    def oov_buckets(self) -> int:
        return self.num_buckets or 1

    @property
    def first_vocab_index(self) -> int:
        return FIRST_FREE_INDEX + self.oov_buckets

    # ---- keys: one vocabulary per plain column, joint group or combo group ------------------
    def vocab_keys(self, groups: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        keys = group_names(self, groups)
        seen: dict[str, tuple[str, ...]] = {}
        for group in keys.values():
            if len(group) > 1 and self.encode_type == "combo":
                continue
            for n in group:  # joint encoding: one output per column
                if n in seen and seen[n] != group:
                    raise SchemaError(f"Categorify encodes column {n!r} in group {list(seen[n])}"
                                      f" and in {list(group)}; its one output cannot hold both. "
                                      "Select each column in one group only.")
                seen[n] = group
        return keys

    def output_names(self, groups: list[tuple[str, ...]]) -> dict[str, str]:
        """Output column -> vocabulary key."""
        out = {}
        for key, group in self.vocab_keys(groups).items():
            if len(group) > 1 and self.encode_type == "combo":
                out[key] = key
            else:
                out.update(dict.fromkeys(group, key))
        return out

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        groups = list(groups)
        for group in groups:
            for n in group:
                require_hashable(self, input_schema[n])
            dtypes = {element_dtype(input_schema[n].dtype) for n in group}
            if len(group) > 1 and self.encode_type == "joint" and len(dtypes) > 1:
                raise SchemaError(f"Categorify(encode_type='joint') needs one dtype within the "
                                  f"group {list(group)}; got {sorted(dtypes)}. Cast the columns "
                                  "first or use encode_type='combo'.")
        if self.vocabulary is not None:
            given = self.vocabulary.keys_for(self.vocab_keys(groups),
                                             self.encode_type == "combo")
            for key, group in self.vocab_keys(groups).items():
                for n in group:
                    self.vocabulary.check_dtype(given[key], n, input_schema[n].dtype)
        cols = []
        for name, key in self.output_names(groups).items():
            base = input_schema[name] if name in input_schema else ColumnSchema(name, "string")
            props = dict(base.properties)
            props["domain"] = key
            for name_ in ("cardinality", *UPDATE_PROPERTIES):
                props.pop(name_, None)
            if state is not None:
                info = state["vocabs"][key]
                props["cardinality"] = info["cardinality"]
                if "version" in info:  # extended by Workflow.update
                    props["vocabulary_version"] = info["version"]
                    props["new_rows"] = list(info["new_rows"])
            dtype = f"list<{self.dtype}>" if base.is_list else self.dtype
            cols.append(base.with_(name=name, dtype=dtype, properties=props).with_tags(
                add=[Tags.CATEGORICAL], remove=[Tags.CONTINUOUS]))
        return Schema(cols)

    def _values(self, df: Any, group: tuple[str, ...], ctx: OpContext) -> Any:
        """The flat values a vocabulary is built from / looked up in."""
        b = ctx.backend
        cols = [b.column(df, n) for n in group]
        cols = [b.list_values(c) if b.dtype(c).startswith("list<") else c for c in cols]
        if len(group) == 1:
            return cols[0]
        if self.encode_type == "combo":
            return b.join_as_strings(cols)
        return b.concat_columns(cols)

    # ---- fit ------------------------------------------------------------------------------
    def splits(self, ctx: OpContext) -> int:
        return num_splits(ctx.run.num_rows, ctx.run.npartitions,
                          self.split_out)

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, Any]:
        b = ctx.backend
        out = {}
        splits = self.splits(ctx)
        for key, group in self.vocab_keys(ctx.groups).items():
            values = self._values(df, group, ctx)
            counts = b.keyed_value_counts(values)
            nulls = int(b.null_mask(values).sum())
            out[key] = {"splits": vocab.split_counts(counts, splits), "nulls": nulls,
                        "rows": b.length(values)}
        return out

    def fit_graph(self, partials: list[Any], ctx: OpContext) -> Any:
        """The Dask graph of the whole vocabulary build; returns a delayed state.

        The graph is written as one low-level graph (:class:`~..tables.reduce.Graph`):
        building it costs time linear in its tasks, whatever ``split_out`` is."""
        splits = self.splits(ctx)
        g = Graph(ctx.node_id)
        keys = list(self.vocab_keys(ctx.groups))
        firsts = first_level_by_keys([p.key for p in partials], keys, _sum_partials,
                                     g.tasks("count"), cut=g.tasks("chunk"))
        counted = {}
        for key in keys:
            per_key = [g.task("pick", pick, f, key) for f in firsts[key]]
            counted[key] = ([tree(per_key, vocab.sum_counts, g.tasks("count"),
                                  first=functools.partial(_sum_split, split=s))
                             for s in range(splits)],
                            tree(per_key, _sum_totals, g.tasks("totals"), first=_sum_totals))
        return self._finish_graph(g, counted, ctx, partials)

    def _finish_graph(self, g: Graph, counted: dict[str, tuple[list[str], Any]],
                      ctx: OpContext, inputs: list[Any]) -> Any:
        """The vocabularies cut from their counts: ``counted`` holds, per vocabulary key
        (in :meth:`vocab_keys` order), the tasks of each split's summed counts and the
        null and row totals (a task, or the numbers). The threshold, the ranks and the
        split files, as :meth:`fit_graph` and :meth:`refinish_graph` both build them."""
        directory = os.path.join(ctx.artifacts_dir or ".", ctx.node_id)
        states = {}
        for number, (key, (counts, totals)) in enumerate(counted.items()):
            key_dir = key_directory(directory, number)  # never the column name (it is data)
            reduced = [g.task("threshold", _apply_threshold, c, self.freq_threshold, key_dir,
                              s, ctx.storage_options, self.max_frequency)
                       for s, c in enumerate(counts)]
            cut = [g.task("cut", frequency_cut.write_cut, c, self.max_frequency, key_dir, s,
                          ctx.storage_options) for s, c in enumerate(counts)
                   if self.max_frequency is not None]
            ranks = _ranks(g, reduced)
            written = [g.task("write", vocab.write_split, reduced[s], ranks[s],
                              self.first_vocab_index, self.max_size, key_dir, s,
                              ctx.storage_options)
                       for s in range(len(counts))]
            states[key] = g.task("vocab", _vocab_state, totals, len(counts),
                                 self.first_vocab_index, key_dir, len(cut), *cut, *written)
        names = list(states)
        return g.delayed(g.task("state", _state, names, directory, self, *states.values()),
                         inputs)

    # ---- a refit after an edit of freq_threshold, max_size, num_buckets or dtype ---------
    #: The vocabulary is cut from the value counts by these alone (its ids start after the
    #: ``num_buckets`` rows; ``dtype`` only bounds them): a change of them keeps the counts.
    finishing_params = ("freq_threshold", "max_size", "max_frequency", "num_buckets", "dtype")

    def refinish_graph(self, previous: SavedStatistics, ctx: OpContext) -> Any | None:
        """The vocabularies cut again from the counts that ``previous`` saved, with these
        parameters: the values and counts of its split files, and of its pending files
        (the values below its ``freq_threshold``), with no pass over the data; exactly what
        a fit gives (the same threshold, ranks and files, from the same counts).

        None when ``previous`` lacks counts: a vocabulary cut by ``max_size`` (the values
        it left out are not kept), one extended by ``Workflow.update``, or one of a version
        that did not keep the counts below its threshold.

        >>> import pandas as pd, interactive_recsys as irs
        >>> df = pd.DataFrame({"c": ["b", "a", "b", "z", "b", "a"]})
        >>> first = irs.Workflow(["c"] >> Categorify()).fit(df)
        >>> again = irs.Workflow(["c"] >> Categorify(freq_threshold=2)).fit(df, reuse=first)
        >>> [(s.reused, s.refinished) for s in again.fitted_steps()], again.fit_stats["phases"]
        ([(False, True)], [])
        >>> again.transform(df)["c"].tolist()  # z (seen once) out of vocabulary: 2
        [3, 4, 3, 2, 3, 4]
        """
        vocabs, splits = previous.state.get("vocabs"), self.splits(ctx)
        keys = list(self.vocab_keys(ctx.groups))
        if previous.folder is None or not isinstance(vocabs, dict) or set(vocabs) != set(keys) \
                or not all(_all_counted(vocabs[key], splits) for key in keys):
            return None
        g = Graph(ctx.node_id)
        counted = {}
        for key in keys:
            info = vocabs[key]
            folder = resolve(previous.folder, info["path"], "vocabulary path")
            counted[key] = ([g.task("saved-counts", _saved_counts, folder, s,
                                    info.get("pending") is True, previous.storage_options,
                                    info.get("cut") is True)
                             for s in range(splits)],
                            {"nulls": info["null_count"], "rows": info["value_count"]})
        return self._finish_graph(g, counted, ctx, [])

    def state_keys(self, groups: Sequence[tuple[str, ...]]) -> dict[str, list[str]]:
        return {"vocabs": list(self.vocab_keys(list(groups)))}

    # ---- given vocabularies (``vocabulary=``: :mod:`._given_vocabulary`) ------------------
    def to_config(self) -> dict[str, Any]:
        config = super().to_config()
        if self.vocabulary is not None:
            config["params"]["vocabulary"] = self.vocabulary.describe()
        return config

    @classmethod
    def saved_params(cls, params: dict[str, Any], functions: dict[str, Any] | None
                     ) -> dict[str, Any]:
        """A saved step holds its given vocabularies by content hash, never values or a file
        to read.

        >>> try:
        ...     Categorify.saved_params({"vocabulary": {"c": ["a"]}}, None)
        ... except SavedParamError as exc:
        ...     print(exc.param)
        vocabulary
        """
        given = params.get("vocabulary")
        if given is not None and not (isinstance(given, dict) and given and all(
                isinstance(v, dict) for v in given.values())):
            raise SavedParamError("vocabulary", "must describe each given vocabulary by "
                                  "content hash ({column: {'sha256', 'size', 'dtype'}}, as "
                                  "Workflow.save writes it); a saved workflow never holds "
                                  "values or reads a file named in workflow.json.")
        return params

    def state_without_data(self, ctx: OpContext, input_schema: Schema) -> Any | None:
        """A given vocabulary's state (no pass over the data): the values written as the
        step's vocabulary files, in the given order, from the first id after the reserved
        ones; written on this machine, which holds the values. None without ``vocabulary``."""
        if self.vocabulary is None:
            return None
        directory = os.path.join(ctx.artifacts_dir or ".", ctx.node_id)
        vocabs, keys = {}, self.vocab_keys(ctx.groups)
        named = self.vocabulary.keys_for(keys, self.encode_type == "combo")
        for number, (key, group) in enumerate(keys.items()):
            given = named[key]
            values = self.vocabulary.values(given, input_schema[group[0]].dtype,
                                            ctx.artifacts_dir, ctx.run.previous_artifacts,
                                            storage_options=ctx.storage_options)
            splits = num_splits(len(values), 1, self.split_out)
            info = self.vocabulary.write(given, values, ctx.artifacts_dir or ".",
                                         key_directory(directory, number),
                                         self.first_vocab_index, splits, ctx.storage_options)
            info["path"] = os.path.relpath(info["path"], os.path.dirname(directory))
            vocabs[key] = info
        return delayed_task(ctx.node_id, "given-vocabulary", dict, {"vocabs": vocabs})

    # ---- incremental updates ----------------------------------------------------------------
    def delta_op(self) -> Categorify:
        """Fitted on the new data alone: every value counted (the threshold and the size cap
        apply to the cumulative counts, in :meth:`merge_state`)."""
        return Categorify(**{**self.get_params(), "freq_threshold": 0, "max_size": None,
                             "max_frequency": None})

    def check_mergeable(self, state: dict[str, Any], ctx: OpContext) -> None:
        if self.vocabulary is not None:  # given: built again, unchanged (no merge)
            return
        for key, info in state["vocabs"].items():  # older states: named by update's guard
            for name in ("null_count", "value_count"):
                if name not in info:
                    raise KeyError(f"vocabs[{key!r}].{name}")
        if self.freq_threshold > 1 and not all(v.get("pending")
                                               for v in state["vocabs"].values()):
            raise self.not_mergeable(ctx, "it was fitted by a version that did not keep the "
                                          "counts of the values below freq_threshold")
        if self.max_frequency is not None and not all(v.get("cut")
                                                      for v in state["vocabs"].values()):
            raise self.not_mergeable(ctx, "it was fitted without max_frequency, so the counts "
                                          "of the values it would cut were not kept")

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: StateFolders) -> dict[str, Any]:
        """Every vocabulary extended (:mod:`..tables.vocabulary_update`): old ids kept, new
        values appended by their count in the new data, ties by value; cumulative counts,
        threshold and size cap. Each vocabulary's ``version`` goes up by one, ``new_rows``
        is the range of ids appended, ``refused`` what ``max_size`` left out."""
        self.check_mergeable(old, ctx)
        options, threshold = ctx.storage_options, self.freq_threshold
        directory = merged_directory(ctx)
        vocabs = {}
        for number, key in enumerate(self.vocab_keys(ctx.groups)):
            before, after = old["vocabs"][key], new["vocabs"][key]
            old_dir = resolve(folders.old, before["path"], "vocabulary path")
            new_dir = resolve(folders.new, after["path"], "vocabulary path")
            previous = vocab.read_vocabulary(old_dir, before["splits"], options)
            check_vocabulary(previous, old_dir, first_index=self.first_vocab_index,
                             cardinality=before["cardinality"],  # an edited file: refused
                             retired=before.get("retired", 0))
            pending = cut = None
            if threshold > 1:
                pending = update.read_pending(old_dir, before["splits"], options)
                check_pending(pending, update.pending_path(old_dir, 0))
            if self.max_frequency is not None:
                cut = update.read_cut(old_dir, before["splits"], options)
                check_pending(cut, update.cut_path(old_dir, 0))
            extended = update.extend(
                previous, vocab.read_vocabulary(new_dir, after["splits"], options),
                pending, first_vocab_index=self.first_vocab_index, threshold=threshold,
                max_size=self.max_size, max_frequency=self.max_frequency, cut=cut,
                next_index=before["cardinality"])
            key_dir = key_directory(directory, number)
            written = update.write(extended, key_dir, before["splits"], self.first_vocab_index,
                                   options, pending=threshold > 1)
            nulls = before["null_count"] + after["null_count"]
            rows = before["value_count"] + after["value_count"]
            retired = before.get("retired", 0) + extended.retired
            cardinality = self.first_vocab_index + written["size"] + retired
            check_index_dtype(self, cardinality)
            vocabs[key] = {
                "path": os.path.relpath(key_dir, ctx.artifacts_dir or "."),
                "splits": before["splits"], "size": written["size"],
                "cardinality": cardinality, "null_count": nulls, "value_count": rows,
                "oov_count": rows - nulls - written["count"],
                "version": before.get("version", 1) + 1,
                "new_rows": [before["cardinality"], cardinality],
                "appended": extended.appended, "refused": extended.refused,
                "promoted": extended.promoted, **({"pending": True} if threshold > 1 else {}),
                **frequency_cut.cut_info(extended.cut, retired)}
        return {"vocabs": vocabs}

    def update_warnings(self, merged: dict[str, Any]) -> list[str]:
        """The vocabularies that reached ``max_size`` in an update, with the values refused.

        >>> [note.split(",")[0] for note in
        ...  Categorify(max_size=3).update_warnings({"vocabs": {"c": {"refused": 2}}})]
        ["the vocabulary of 'c' reached max_size"]
        """
        return [f"the vocabulary of {key!r} reached max_size, so {info['refused']} new values "
                "were refused (encoded as out-of-vocabulary). Raise max_size and refit to give "
                "them ids." for key, info in merged.get("vocabs", {}).items()
                if info.get("refused")]

    def update_changes_seen_rows(self, old: dict[str, Any], merged: dict[str, Any]) -> bool:
        """Ids never move; only a value that crossed ``freq_threshold`` (out-of-vocabulary
        before, an id now) or ``max_frequency`` (an id before, out-of-vocabulary now: its id
        retired) changes the encoding of rows already seen."""
        return any(info.get("promoted") or info.get("retired", 0) > old["vocabs"].get(
            key, {}).get("retired", 0) for key, info in merged["vocabs"].items())

    # ---- transform ------------------------------------------------------------------------
    def online_step(self, state: dict[str, Any] | None, column: str,
                    ctx: OpContext) -> tuple | None:
        """``("categorify", tables, num_buckets)``: the vocabulary's split tables
        (:class:`~..tables.vocabulary.VocabTable`) that encode ``column``; None for a combo
        group (its values join several columns as strings)."""
        key = self.output_names(list(ctx.groups)).get(column)
        group = self.vocab_keys(ctx.groups).get(key, ())
        if key is None or (len(group) > 1 and self.encode_type == "combo"):
            return None
        info = state["vocabs"][key]
        directory = resolve(ctx.artifacts_dir, info["path"], "vocabulary path")
        tables = [vocab.load_split(directory, s, ctx.storage_options)
                  for s in range(info["splits"])]
        return ("categorify", tables, self.num_buckets)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        out, drop = {}, []
        outputs = self.output_names(list(ctx.groups))
        for key, group in self.vocab_keys(ctx.groups).items():
            info = state["vocabs"][key]
            directory = resolve(ctx.artifacts_dir, info["path"], "vocabulary path")

            def encode(values: Any, info: dict = info, directory: str = directory
                       ) -> np.ndarray:
                return self._encode(values, info, directory, ctx)

            if len(group) > 1 and self.encode_type == "combo":
                out[key] = b.from_indices(encode(self._values(df, group, ctx)))
                drop += [n for n in group if n not in outputs]  # a column also encoded
                # on its own (``[["a", "b"], "a"]``) stays, as its own output
            else:
                for name in group:
                    out[name] = encode_column(ctx, b.column(df, name), encode)
        result = b.with_columns(df, out)
        if drop:
            result = b.select(result, [n for n in result.columns if n not in drop])
        return result

    def _encode(self, values: Any, info: dict[str, Any], directory: str,
                ctx: OpContext) -> np.ndarray:
        """The id of each value; ``directory`` holds the vocabulary's split files."""
        b = ctx.backend
        coded = b.dictionary_codes(values)
        if coded is not None:  # each row group's distinct values looked up once; code -1
            out = np.empty(sum(len(codes) for codes, _ in coded), self.dtype)  # (null) takes
            start = 0                                                  # the appended last id
            for codes, dictionary in coded:
                ids = self._encode(dictionary, info, directory, ctx)
                np.take(np.append(ids, ids.dtype.type(NULL_INDEX)), codes,  # "wrap": -1 is
                        out=out[start:start + len(codes)], mode="wrap")  # the last, unbuffered
                start += len(codes)
            return out
        hashes = b.hash64(values)
        if self.num_buckets:
            result = (FIRST_FREE_INDEX + hashes % np.uint64(self.num_buckets)).astype(np.int64)
        else:
            result = np.full(b.length(values), FIRST_FREE_INDEX, dtype=np.int64)
        tables = [vocab.load_split(directory, s, ctx.storage_options,
                                   (self.first_vocab_index, info["cardinality"]))
                  for s in range(info["splits"])]
        result = vocab.split_ids(tables, b.to_arrow_array(values), hashes, result)
        result[b.null_mask(values)] = NULL_INDEX
        return result.astype(self.dtype, copy=False)

    def data_warnings(self, num_rows: int | None,
                      state: dict[str, Any] | None = None) -> list[str]:
        """A ``freq_threshold`` above the rows of the data (before a fit) or above the values
        a vocabulary was fitted on (after one): every value is out of vocabulary.

        >>> Categorify(freq_threshold=5).data_warnings(3)[0].split(":")[0]
        'freq_threshold=5 is above the 3 rows of the dataset'
        >>> Categorify(freq_threshold=2).data_warnings(3), Categorify().data_warnings(None)
        ([], [])
        >>> Categorify(freq_threshold=9).data_warnings(None, {"vocabs": {"c": {"value_count": 4}}})
        ["Categorify(freq_threshold=9) on 'c' is above the 4 values it was fitted on: every \
value is out of vocabulary. Lower freq_threshold (or remove it)."]
        """
        threshold = self.freq_threshold
        if state is None:
            if num_rows is None or threshold <= num_rows:
                return []
            return [f"freq_threshold={threshold:,} is above the {num_rows:,} rows of the "
                    f"dataset: every value would be out of vocabulary (no value can occur "
                    f"{threshold:,} times)."]
        if threshold <= 1:
            return []
        return [f"{type(self).__name__}(freq_threshold={threshold:,}) on {key!r} is above the "
                f"{rows:,} values it was fitted on: every value is out of vocabulary. Lower "
                f"freq_threshold (or remove it)."
                for key, info in (state.get("vocabs") or {}).items()
                if (rows := info.get("value_count")) is not None and threshold > rows]

    def check_params(self) -> None:
        if self.vocabulary is not None:
            self._params["vocabulary"] = GivenVocabulary.of(self.vocabulary)
            counted = [n for n in ("freq_threshold", "max_size", "max_frequency")
                       if self._params[n] != self.params[n].default]
            if counted:
                raise param_error(("vocabulary", counted[0]), "Categorify", "cannot both be "
                                  f"set: {counted[0]} bounds a vocabulary counted from the "
                                  "data, and a given vocabulary is not counted. Remove one.")
            sizes = [i["size"] for i in self.vocabulary.described.values()]
            check_index_dtype(self, self.first_vocab_index + max(sizes))
        check_index_dtype(self, self.first_vocab_index + (self.max_size or 0))
        if self.freq_threshold and self.max_size:
            raise ParameterError("Categorify takes freq_threshold or max_size, not both; "
                                 "choose one way to bound the vocabulary.")
        frequency_cut.check_bounds(self.freq_threshold, self.max_frequency)


# ---- graph helpers (plain functions so Dask tasks are named and picklable) -------------------
def _sum_partials(items: list[dict[str, dict[str, Any]]], keys: Sequence[str]
                  ) -> dict[str, dict[str, Any]]:
    """Partials of several partitions as one, for ``keys``: per key, each split's counts
    summed, and the null and row counts."""
    return {key: {"splits": [vocab.sum_counts([i[key]["splits"][s] for i in items])
                             for s in range(len(items[0][key]["splits"]))],
                  "nulls": sum(i[key]["nulls"] for i in items),
                  "rows": sum(i[key]["rows"] for i in items)}
            for key in keys}


def _sum_split(items: list[dict[str, Any]], split: int) -> pa.Table:
    return vocab.sum_counts([i["splits"][split] for i in items])


def _apply_threshold(counts: kc.Counts, threshold: int, directory: str | None = None,
                     split: int = 0, storage_options: Any = None,
                     max_frequency: int | None = None) -> kc.Counts:
    """The values counted at least ``threshold`` and at most ``max_frequency`` times. The
    values below the threshold are written as the split's pending counts
    (:mod:`..tables.vocabulary_update`), so that an update applies the threshold to the
    cumulative counts (those above ``max_frequency``: :func:`..tables._frequency_cut.write_cut`)."""
    kept = kc.at_most(kc.at_least(counts, threshold), max_frequency)
    if threshold > 1 and directory is not None:
        below = kc.decode(counts)
        below = below.filter(pc.less(below["count"], threshold))
        vocab.write_table_file(below, update.pending_path(directory, split), storage_options)
    return kept


def _all_counted(info: Any, splits: int) -> bool:
    """Whether a vocabulary's files hold the count of every value its fit saw, in
    ``splits`` split files: every value in the vocabulary (none out of it), or the others in
    its pending files (a ``freq_threshold`` above 1); never a vocabulary extended by
    ``Workflow.update`` (``version``), whose counts are another fit's."""
    return (isinstance(info, dict) and info.get("splits") == splits and "version" not in info
            and isinstance(info.get("path"), str)
            and all(isinstance(info.get(n), int | np.integer) and not isinstance(info[n], bool)
                    for n in ("null_count", "value_count", "oov_count"))
            and (info.get("pending") is True
                 or info["oov_count"] == (info.get("cut_count", 0) if info.get("cut") else 0)))


def _saved_counts(directory: str, split: int, pending: bool,
                  storage_options: Any = None, cut: bool = False) -> kc.Counts:
    """The counts of one split as its fit summed them: the ``value, count`` rows of the
    vocabulary's split file and, with ``pending``, of its pending file (the values below the
    threshold), with ``cut`` of its cut file (those above ``max_frequency``), keyed as the
    fit keys them (:func:`~..backend.keyed_counts.encode`)."""
    paths = [split_path(directory, split)] + ([update.pending_path(directory, split)]
                                              if pending else []) + (
        [update.cut_path(directory, split)] if cut else [])
    tables = [read_checked(path, storage_options).select(["value", "count"]) for path in paths]
    return kc.encode(pa.concat_tables(tables, promote_options="permissive"))


def _ranks(g: Graph, reduced: list[str]) -> list[str]:
    """Tasks of the global rank of every split's values (:mod:`..tables.ranking`): one
    sort when there is one split; else the splits re-cut into ranges of value (at most
    ``MAX_RANGES``, so the graph grows linearly with ``split_out``), each range sorted on its
    own, and the ranks placed from the ranges' count histograms."""
    splits = len(reduced)
    if splits == 1:
        return [g.task("rank", ranking.local_rank, reduced[0])]
    count = min(splits, ranking.MAX_RANGES)
    samples = [g.task("sample", ranking.sample, r) for r in reduced]
    plan = g.task("bounds", listed(functools.partial(ranking.bounds, ranges=count)), *samples)
    cuts = [g.task("cut", ranking.cut, r, plan) for r in reduced]
    ranges = [g.task("range", listed(ranking.sort_range),
                     *[g.task("pick", pick, c, r) for c in cuts]) for r in range(count)]
    bases = g.task("bases", listed(ranking.bases),
                   *[g.task("pick", pick, r, "histogram") for r in ranges])
    done = [g.task("place", ranking.finish_range, ranges[r], g.task("pick", pick, bases, r),
                   splits) for r in range(count)]
    return [g.task("rank", listed(ranking.gather_ranks), *[g.task("pick", pick, d, s)
                                                           for d in done])
            for s in range(splits)]


def _sum_totals(items: list[dict[str, Any]]) -> dict[str, int]:
    return {"nulls": sum(i["nulls"] for i in items), "rows": sum(i["rows"] for i in items)}


def _vocab_state(totals: dict[str, int], splits: int, first_index: int, directory: str,
                 cut_splits: int, *results: dict[str, int]) -> dict[str, Any]:
    """One vocabulary's state from its totals, the ``cut_splits`` results of
    :func:`..tables._frequency_cut.write_cut` and the results of ``write_split``."""
    cut, written = results[:cut_splits], results[cut_splits:]
    size = sum(w["size"] for w in written)
    in_vocab = sum(w["count"] for w in written)
    return {"path": directory, "splits": splits, "size": size,
            "cardinality": first_index + size, "null_count": totals["nulls"],
            "value_count": totals["rows"], "oov_count": totals["rows"] - totals["nulls"]
            - in_vocab, **({"cut": True, "cut_values": sum(c["size"] for c in cut),
                            "cut_count": sum(c["count"] for c in cut)} if cut_splits else {})}


def _state(names: list[str], directory: str, op: Categorify,
           *infos: dict[str, Any]) -> dict[str, Any]:
    states = dict(zip(names, infos, strict=True))
    for info in states.values():
        check_index_dtype(op, info["cardinality"])
        if op.freq_threshold > 1:
            info["pending"] = True  # the values below the threshold, with their counts
        info["path"] = os.path.relpath(info["path"], os.path.dirname(directory))
    return {"vocabs": states}
