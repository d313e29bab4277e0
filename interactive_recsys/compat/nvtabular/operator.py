"""NVTabular's operator methods (Merlin's ``BaseOperator``) on this project's operators.

Every operator ``nvt.ops`` gives is the core's, in a subclass that adds NVTabular's
public operator API, mapped onto the core (:class:`OperatorAPI`):

=============================================  ===============================================
NVTabular / Merlin                             here
=============================================  ===============================================
``op.compute_output_schema(schema,             ``(selector >> op).output_schema(schema)``:
selector)``                                    the core's schema inference of the one step
``op._compute_dtype / _compute_tags /          the dtype / tags / properties that inference
_compute_properties(col, parent_schema)``      gives the output column ``col`` of ``parents``
``op.transform(selector, df)``                 the core's per-partition ``transform(df, state,
                                               ctx)`` on ``df[selector]`` (a pandas or cuDF
                                               frame, or a dict of arrays); a statistics
                                               operator uses its fitted statistics
``op.means``, ``op.stds``, ``op.medians``,     copies of the state the last ``nvt.Workflow
``op.mins``, ``op.maxs``, ``op.stats``         .fit`` (or ``load``) computed for the step
(``ValueCount``)                               (:func:`bind_fitted`); read, never written
=============================================  ===============================================

The subclasses keep the core's class names and parameters, so a saved workflow holds the
core's operators and loads without this module. The fitted statistics stay where the core
keeps them (``Workflow.fitted_steps()``); the compat ``Workflow`` only points its operators
at them, as NVTabular's operators hold theirs.

>>> import pandas as pd
>>> from interactive_recsys.compat.nvtabular import ColumnSelector, Dataset, Workflow, ops
>>> op = ops.Normalize()
>>> wf = Workflow(["x"] >> op)
>>> _ = wf.fit(Dataset(pd.DataFrame({"x": [1.0, 2.0, 3.0]})))
>>> op.means, op.stds
({'x': 2.0}, {'x': 1.0})
>>> op.transform(ColumnSelector(["x"]), pd.DataFrame({"x": [3.0]}))["x"].tolist()
[1.0]
>>> op.compute_output_schema(wf.input_schema, ColumnSelector(["x"]))["x"].dtype
'float32'
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from interactive_recsys import ops as _core
from interactive_recsys.backend import backend_of, convert
from interactive_recsys.backend._user_frames import user_frame
from interactive_recsys.compat.nvtabular.schema import Schema
from interactive_recsys.errors import NotFittedError, SchemaError
from interactive_recsys.schema import ColumnSchema, ColumnSelector
from interactive_recsys.schema import Schema as CoreSchema
from interactive_recsys.workflow._graph import Node, OpNode

#: NVTabular's names of fitted statistics that the core stores under other names:
#: ``{operator class: {NVTabular attribute: function of the core state}}``.
ALIASES: dict[str, dict[str, Any]] = {
    "ValueCount": {"stats": lambda state: {
        col: {"value_count": dict(v or {})} for col, v in state["value_count"].items()}},
}


class OperatorAPI:
    """NVTabular's methods of an operator (see the module docstring); mixed into the core's
    operator classes and into the compat steps made of several (``ops.Steps``)."""

    def compute_output_schema(self, input_schema: CoreSchema, col_selector: Any,
                              prev_output_schema: Any = None) -> Schema:
        """The output schema of this operator on the columns ``col_selector`` picks from data
        of ``input_schema``: the core's inference for ``selector >> op``."""
        selector = col_selector if isinstance(col_selector, ColumnSelector) \
            else ColumnSelector(list(col_selector))
        self.__dict__["_nvt_last"] = (input_schema, selector)
        return Schema.of((Node.as_node(selector) >> self).output_schema(input_schema))

    def _output_column(self, col_schema: ColumnSchema, input_schema: CoreSchema) -> ColumnSchema:
        """The output column ``col_schema.name`` made from its parent columns
        ``input_schema``, as Merlin's hooks compute it inside ``compute_output_schema``: the
        columns the operator reads besides its selection (keys, targets) come from that
        call's input schema, and a column made from several parents (a cross) from its
        selection."""
        full, selector = self.__dict__.get("_nvt_last", (input_schema, None))
        schema = CoreSchema([*input_schema.values(),
                             *(c for c in full.values() if c.name not in input_schema)])
        tries = [ColumnSelector(list(input_schema.names))] + ([selector] if selector else [])
        for sel in tries:
            try:
                out = Schema.of((Node.as_node(sel) >> self).output_schema(schema))
            except SchemaError:
                continue
            if col_schema.name in out:
                return out[col_schema.name]
        raise SchemaError(f"{self!r} makes no column {col_schema.name!r} from "
                          f"{input_schema.names}.")

    def _compute_dtype(self, col_schema: ColumnSchema, input_schema: CoreSchema) -> ColumnSchema:
        return col_schema.with_(dtype=self._output_column(col_schema, input_schema).dtype)

    def _compute_tags(self, col_schema: ColumnSchema, input_schema: CoreSchema) -> ColumnSchema:
        return col_schema.with_tags(add=self._output_column(col_schema, input_schema).tags)

    def _compute_properties(self, col_schema: ColumnSchema,
                            input_schema: CoreSchema) -> ColumnSchema:
        made = self._output_column(col_schema, input_schema)
        return col_schema.with_(properties={**col_schema.properties, **made.properties})


class FittedOperatorAPI(OperatorAPI):
    """:class:`OperatorAPI` with what needs one core operator: ``transform(selector, df)``
    and the fitted statistics as attributes."""

    def transform(self, *args: Any, **kwargs: Any) -> Any:
        """NVTabular's ``op.transform(col_selector, df)`` (two arguments); the core's
        ``transform(df, state, ctx)`` (three) as it is."""
        if len(args) + len(kwargs) != 2:
            return super().transform(*args, **kwargs)  # type: ignore[misc]
        selector = kwargs.get("col_selector", args[0] if args else None)
        data = kwargs.get("transformable", kwargs.get("df", args[-1] if len(args) == 2 else None))
        return transform_frame(self, selector, data)

    def __eq__(self, other: object) -> bool:
        """Equal to the core's operator of the same class and parameters."""
        if not isinstance(other, _core.Operator):
            return NotImplemented
        return core_class(type(self)) is core_class(type(other)) \
            and self.get_params() == other.get_params()

    __hash__ = object.__hash__

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # type: ignore[misc]
        except AttributeError:
            pass
        state = self.__dict__.get("_nvt_state")
        alias = ALIASES.get(type(self).__name__, {}).get(name)
        if state is not None and alias is not None:
            return alias(state)
        if state is not None and isinstance(state.get(name), Mapping):
            return dict(state[name])
        if name.startswith("_") or (alias is None and not getattr(self, "is_stat", False)):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise AttributeError(f"{type(self).__name__}.{name}: fit a Workflow holding this "
                             "operator first (nvt.Workflow(...).fit(dataset)); the fitted "
                             f"statistics here are {sorted(state or {}) or 'none yet'}.")


def transform_frame(op: Any, selector: Any, data: Any) -> Any:
    """``op``'s core per-partition transform on the columns ``selector`` names of ``data``
    (a pandas/cuDF frame, or a dict of arrays: a dict of arrays comes back)."""
    as_dict = isinstance(data, Mapping)
    frame = pd.DataFrame({k: list(v) if np.ndim(v) > 1 else v for k, v in data.items()}) \
        if as_dict else data
    backend = backend_of(frame)
    native = convert(frame, backend=backend)
    sel = selector if isinstance(selector, ColumnSelector) else ColumnSelector(list(selector))
    schema = backend.schema_of(native)
    groups = sel.resolve(schema)
    names = list(dict.fromkeys(n for g in groups for n in g))
    state = op.__dict__.get("_nvt_state")
    steps = op.dependency_nodes()  # columns given as selections or steps: read from df
    if steps:
        op = op.with_dependency_columns({k: Node.as_node(v).output_schema(schema).names
                                         for k, v in steps.items()})
    reads = op.named_columns(*(k for k, spec in op.params.items() if spec.columns))
    names += [n for n in dict.fromkeys(reads) if n in schema and n not in names]
    if op.is_stat and state is None:
        raise NotFittedError(f"{op!r}.transform needs its fitted statistics: fit a Workflow "
                             "holding this operator first (nvt.Workflow(...).fit(dataset)).")
    ctx = _core.OpContext(backend=backend, groups=[tuple(g) for g in groups])
    out = op.transform(backend.select(native, names), state, ctx)
    if isinstance(op, _core.RowFilter):
        out = backend.filter_rows(out, op.row_mask(backend.select(native, names), state, ctx))
    out = user_frame(convert(out, like=frame), "numpy_nullable")
    if as_dict:
        return {n: out[n].to_numpy() for n in out.columns}
    return out


def bind_fitted(workflow: Any) -> None:
    """Point the operators of ``workflow``'s steps at their fitted states (what
    ``op.means`` ... read) and give every step NVTabular's ``node.output_schema``."""
    if workflow.input_schema is None:
        return
    states = getattr(workflow, "_states", {})
    schemas = workflow.output_node.schemas(workflow.input_schema, states)
    for node in workflow.nodes:
        if isinstance(node, OpNode):
            for op in {id(node.op): node.op, id(node.template): node.template}.values():
                if isinstance(op, FittedOperatorAPI):
                    op.__dict__["_nvt_state"] = states.get(workflow.node_id(node))
        node.output_schema = NodeSchema(node, schemas[id(node)])


class NodeSchema(Schema):
    """NVTabular's ``node.output_schema``: the schema the step outputs for the data of the
    last fit, which can still be called as the core's ``node.output_schema(input_schema)``."""

    def __init__(self, node: Node, schema: CoreSchema) -> None:
        super().__init__(Schema.of(schema).values())
        self._compute = types.MethodType(type(node).output_schema, node)

    def __call__(self, input_schema: CoreSchema, states: Any = None) -> CoreSchema:
        return self._compute(input_schema, states)


_CLASSES: dict[type, type] = {}


def nvt_class(cls: type) -> type:
    """The core operator class ``cls`` with NVTabular's methods (same name and parameters,
    not registered: saved workflows name the core's class)."""
    if cls not in _CLASSES:
        # found again by name (``core_ops.<name>``): pickled by reference, never rebuilt
        # (a rebuilt class would register itself in place of the core's)
        _CLASSES[cls] = types.new_class(cls.__name__, (FittedOperatorAPI, cls),
                                        {"register": False},
                                        lambda ns: ns.update(
                                            __doc__=cls.__doc__, __module__=__name__,
                                            __qualname__=f"core_ops.{cls.__name__}"))
        _CORE[_CLASSES[cls]] = cls
    return _CLASSES[cls]


def core_class(cls: type) -> type:
    """The core's class of an :func:`nvt_class` (any other class as it is)."""
    return _CORE.get(cls, cls)


_CORE: dict[type, type] = {}


class _CoreOps(types.ModuleType):
    """:mod:`interactive_recsys.ops` with every operator class as :func:`nvt_class` gives
    it (other names as they are)."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(_core, name)
        if isinstance(value, type) and issubclass(value, _core.Operator):
            return nvt_class(value)
        return value


#: The core's operators with NVTabular's methods: what ``nvt.ops`` builds on.
core_ops = _CoreOps("interactive_recsys.compat.nvtabular.core_ops")


__all__ = ["ALIASES", "FittedOperatorAPI", "NodeSchema", "OperatorAPI", "bind_fitted",
           "core_class", "core_ops", "nvt_class", "transform_frame"]
