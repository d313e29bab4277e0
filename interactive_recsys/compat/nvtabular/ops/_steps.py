"""The shared pieces of the NVTabular operator wrappers: the tuning knobs dropped, the
options refused (:data:`REFUSED`), and :class:`Steps`, several core steps standing for one
NVTabular operator."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from interactive_recsys.compat.nvtabular.operator import OperatorAPI
from interactive_recsys.errors import ParameterError
from interactive_recsys.operands import OperatorOperand
from interactive_recsys.workflow._graph import Node, SelectNode

#: NVTabular keyword arguments about memory, caching and files: no effect on results.
TUNING = frozenset({"out_path", "on_host", "cat_cache", "tree_width", "split_every",
                    "cardinality_memory_limit", "search_sorted", "name_sep", "drop_folds"})
#: Rows before the vocabulary in NVTabular 23.08's (and this project's) Categorify tables.
RESERVED_ROWS = 2
#: A frequency threshold no value reaches: every value goes to the hash buckets.
_HASH_ONLY = 2**62


#: NVTabular 23.08 options that change its output, which the port does not reproduce: the
#: reason and the equivalent here (``{option: (changes, fix)}``).
REFUSED = {
    "start_index": ("NVTabular 23.08 refuses it too (it was removed: ids are 0 padding, 1 "
                    "null, 2.. out-of-vocabulary, then the values, here as there)",
                    "Remove it; to shift ids, add a step after, e.g. >> ops.LambdaOp('x + 1')"),
    "na_sentinel": ("NVTabular 23.08 refuses it too (it was removed: a null is always id 1, "
                    "here as there)", "Remove it"),
    "single_table": ("it encodes several columns in one shared table with offsets, which the "
                     "port does not do", "Remove it; for one vocabulary shared by several "
                     "columns, select them as a group with encode_type='joint', e.g. "
                     "[['a', 'b']] >> Categorify(encode_type='joint')"),
    "target_mean": ("it replaces the prior mean of the smoothing, which is always the target's "
                    "mean over the fit data here (NVTabular's default too)",
                    "Remove it (the mean is computed during the fit)"),
    "out_col": ("it renames the output column, which the port names TE_<columns>_<target> "
                "as NVTabular does by default", "Remove it and rename after: "
                ">> Rename(name='my_name') (one output column) or Rename(f=...)"),
}


def _tuning(op: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Drop NVTabular-only knobs that do not change results; refuse the ones that would,
    naming the reason and the equivalent (:data:`REFUSED`)."""
    for name, (why, fix) in REFUSED.items():
        present = name in ("start_index", "na_sentinel") and name in kwargs
        if present or kwargs.get(name) not in (None, 0, False):
            raise ParameterError(f"NVTabular's {op}({name}={kwargs[name]!r}) is not supported: "
                                 f"{why}. {fix}.")
    if kwargs.get("name_sep", "_") != "_":
        raise ParameterError(f"{op}(name_sep=...) other than '_' is not supported; got "
                             f"{kwargs['name_sep']!r}. Remove it and rename the output "
                             "columns after, e.g. >> Rename(f=lambda n: n.replace('_', "
                             f"{kwargs['name_sep']!r})).")
    return {k: v for k, v in kwargs.items() if k not in TUNING | set(REFUSED)}


class Steps(OperatorAPI, OperatorOperand):
    """Several core steps standing for one NVTabular operator; ``node >> steps`` builds them
    (:meth:`expand_after`) side by side: each branch is ``(columns, chain)``, ``columns``
    ``None`` for the whole input; ``rest`` is the chain of the selected columns no branch
    names (after a selection of names; after another step only the named columns are
    output)."""

    def __init__(self, branches: Sequence[tuple[list[str] | None, list[Any]]],
                 description: str, rest: list[Any] | None = None) -> None:
        self.branches, self.rest, self.description = list(branches), rest, description

    def expand_after(self, node: Node) -> Node:
        named = [c for cols, _ in self.branches for c in cols or ()]
        # after another step the columns are known only with the data: the dict names them
        # all, as NVTabular requires ("all columns targeted must be included")
        parts = [(node if cols is None else node[cols], chain) for cols, chain in self.branches]
        if isinstance(node, SelectNode) and not node.selector.tags:  # plain names: select
            sel = node.selector                                       # them directly
            rest = [n for n in sel.names if n not in named]
            parts = [(node if cols is None else Node.as_node(cols), chain)
                     for cols, chain in self.branches]
            if self.rest and rest:
                parts.append((Node.as_node(rest), self.rest))
        out = None
        for part, chain in parts:
            for op in chain:
                part = part >> op
            out = part if out is None else out + part
        assert out is not None
        return out

    def __repr__(self) -> str:
        return self.description


def _per_column(name: str, value: Any, make: Callable[[Any], Any], default: Any) -> Any:
    """One operator, or :class:`Steps` with one per column for a ``{column: value}``."""
    if not isinstance(value, Mapping):
        return make(value)
    return Steps([([c], [make(v)]) for c, v in value.items()], f"{name}({value!r})",
                 rest=None if default is None else [make(default)])
