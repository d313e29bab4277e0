"""Python code that rebuilds a workflow: what the pipeline builder's "Export code" writes.

Running the code gives a workflow with the same graph, operators and parameters, so the
same ``to_config()`` and the same output on any data (fitted statistics are not part of
the code: fit the new workflow, or save and load the fitted one).

>>> from interactive_recsys import ops
>>> wf = Workflow((["c"] >> ops.Categorify(freq_threshold=2)) + ["label"])
>>> print(workflow_code(wf))
import interactive_recsys as irs
from interactive_recsys import ops
<BLANKLINE>
branch_1 = ["c"] >> ops.Categorify(freq_threshold=2)
branch_2 = irs.ColumnSelector(["label"])
workflow = irs.Workflow(branch_1 + branch_2)
>>> namespace = {}
>>> exec(workflow_code(wf), namespace)
>>> namespace["workflow"].to_config()["nodes"] == wf.to_config()["nodes"]
True

Exported code never holds a credential: a URL the one redaction rule
(:func:`~interactive_recsys.redact.redact_text`) would mask, one with a password say, is
read from an environment variable, with a comment naming it (:class:`Placeholders`).
"""

from __future__ import annotations

import ast
import json
import numbers
import re
from typing import Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.ops._base import Operator
from interactive_recsys.ops._lambda_op import FunctionRef
from interactive_recsys.params import param_error
from interactive_recsys.redact import redact_text
from interactive_recsys.workflow._graph import ConcatNode, Node, OpNode, SelectNode
from interactive_recsys.workflow._workflow import Workflow

HEADER = ["import interactive_recsys as irs", "from interactive_recsys import ops"]


def holds_credential(text: str) -> bool:
    """Whether ``text`` holds a URL with a credential (the redaction rule changes it).

    Only text with a URL counts: an expression such as ``"session_id==3"`` is code, though
    the rule's ``name=value`` pattern would mask it in a message.

    >>> holds_credential("https://ann:SECRET@h.example/x"), holds_credential("session_id==3")
    (True, False)
    """
    return "://" in text and redact_text(text) != text


class Placeholders:
    """Values exported code must not write, each read from an environment variable instead.

    :meth:`code` gives a string's Python literal, or ``os.environ["NAME"]`` when the string
    holds a credential (:func:`holds_credential`); :meth:`lines` are the comments that say
    what to set, the value shown redacted.

    >>> p = Placeholders()
    >>> p.code("data/", "IRS_DATA_URL", "the data's URL")
    "'data/'"
    >>> p.code("https://ann:SECRET@h.example/data/", "IRS_DATA_URL", "the data's URL")
    "os.environ['IRS_DATA_URL']"
    >>> print(p.lines()[0])
    # Set IRS_DATA_URL to the data's URL with its credentials ('https://***@h.example/data/'): \
they are not written in this code.
    """

    def __init__(self) -> None:
        self.names: dict[str, tuple[str, str]] = {}  # variable -> (value, what it is)

    def code(self, value: str, name: str, what: str) -> str:
        """``repr(value)``, or the expression reading it from the environment variable
        ``name`` (``NAME_2``... for a second value) when it holds a credential."""
        if not holds_credential(value):
            return repr(value)
        for known, (held, _) in self.names.items():
            if held == value:
                return f"os.environ[{known!r}]"
        unique, k = name, 2
        while unique in self.names:
            unique, k = f"{name}_{k}", k + 1
        self.names[unique] = (value, what)
        return f"os.environ[{unique!r}]"

    def lines(self) -> list[str]:
        """One comment per environment variable the code reads."""
        return [f"# Set {name} to {what} with its credentials ({redact_text(value)!r}): they "
                "are not written in this code." for name, (value, what) in self.names.items()]


def _env_name(param: str) -> str:
    return "IRS_" + re.sub(r"\W", "_", param).upper()


def _plain(value: Any) -> Any:
    """NumPy scalars and tuples as plain Python values, so that ``repr`` is valid code."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


def _literal(name: Any) -> str:
    """A column name (or group of names) as a Python literal: a JSON string is one (quotes,
    backslashes and control characters escaped; other characters kept as they are)."""
    if isinstance(name, list | tuple):
        return "[" + ", ".join(_literal(n) for n in name) + "]"
    return json.dumps(str(name), ensure_ascii=False)


class _Writer:
    def __init__(self, output: Node) -> None:
        self.output = output
        self.lines: list[str] = []
        self.imports: list[str] = []
        self.names: dict[int, str] = {}
        self.uses: dict[int, int] = {}
        for node in output.walk():
            for p in node.parents:
                self.uses[id(p)] = self.uses.get(id(p), 0) + 1
        self.counter = 0
        self.placeholders = Placeholders()

    # ---- pieces -------------------------------------------------------------------------
    def value(self, name: str, value: Any) -> str:
        if callable(value):
            if isinstance(value, FunctionRef):
                raise ParameterError(f"The function {value.name!r} of a loaded LambdaOp is not "
                                     "available; pass it with Workflow.load(..., functions=...) "
                                     "before exporting code.")
            module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__",
                                                                          "")
            if not module or module == "__main__" or "<" in qualname or "." in qualname:
                raise param_error(name, None, f"is the function {qualname or value!r}"
                                  f" defined in {module or 'no module'}, which exported code "
                                  "cannot import; use an expression string (e.g. 'x * 2') or "
                                  "a function defined in an importable module.")
            self.imports.append(f"from {module} import {qualname}")
            return qualname
        if hasattr(value, "sha256") and hasattr(value, "path"):  # JoinExternal's side table
            if value.path is None:
                raise param_error(name, None, "is a table held in memory, which "
                                  "exported code cannot rebuild; write it to parquet and "
                                  "pass its path (df_ext='items.parquet'), then export.")
            return self.placeholders.code(value.path, _env_name(f"{name}_url"),
                                          f"the {name} table's URL")
        if getattr(value, "read_only_in_form", False):  # Categorify's large vocabulary
            raise param_error(name, None, "holds a vocabulary of more values than exported "
                              "code writes out; save it as parquet and give its path "
                              "(vocabulary={'column': 'vocabulary.parquet'}) in code.")
        if isinstance(value, str):
            return self.placeholders.code(value, _env_name(name), f"the {name} parameter")
        text = repr(_plain(value))
        if holds_credential(text):
            raise param_error(name, None, "holds a credential, which exported code does not "
                              "write; pass it as a string parameter (read from the "
                              "environment in the exported code), or set it by hand.")
        try:
            ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise param_error(name, None, f"holds {type(value).__name__} "
                              f"{text[:60]}, which cannot be written as Python code; use "
                              "numbers, strings, lists or dicts of those.") from None
        return text

    def operator(self, op: Operator, steps: dict[str, str] | None = None) -> str:
        """The operator's constructor call; ``steps``: the code of the parameters given as
        workflow steps."""
        steps = steps or {}
        args = ", ".join(f"{k}={steps[k] if k in steps else self.value(k, v)}"
                         for k, v in op.get_params().items()
                         if k in steps or v != op.params[k].default)
        return f"ops.{type(op).__name__}({args})"

    def selection(self, node: Node, as_selector: bool) -> str:
        config = node.selector.to_config()
        items = [_literal(n) for n in config["names"]]
        names = "[" + ", ".join(items) + "]"
        if len(names) > 70:  # one line per few names, never breaking inside a name
            self.counter += 1
            var = f"columns_{self.counter}"
            lines, line = [], ""
            for i, item in enumerate(items):  # greedy, 92 wide with the indent
                chunk = item + ("," if i < len(items) - 1 else "")
                if line and 4 + len(line) + 1 + len(chunk) > 92:
                    lines.append(line)
                    line = ""
                line += ("" if not line else " ") + chunk
            lines.append(line + ",")
            body = "\n".join("    " + text for text in lines)
            self.lines.append(f"{var} = [\n{body}\n]")
            names = var
        if config["tags"]:
            return f"irs.ColumnSelector({names}, tags={[str(t) for t in config['tags']]!r})"
        return f"irs.ColumnSelector({names})" if as_selector else names

    def expr(self, node: Node, *, in_sum: bool = False, first: bool = False) -> str:
        """The expression of ``node``; nodes used twice become variables."""
        if id(node) in self.names:
            return self.names[id(node)]
        shared = self.uses.get(id(node), 0) > 1
        if isinstance(node, SelectNode) and shared:  # one select node read by several steps
            self.imports.append("from interactive_recsys.workflow._graph import Node")
            text = f"Node.select({self.selection(node, as_selector=True)})"
        elif isinstance(node, SelectNode):
            text = self.selection(node, as_selector=in_sum and first)
        elif isinstance(node, OpNode) and len(node.parents) > 1 + len(node.depends):
            # a loaded step reading several steps (parameters given as steps, resolved)
            self.imports.append("from interactive_recsys.workflow._graph import Node")
            parts = ", ".join(f"Node.as_node({self.expr(p)})" for p in node.parents)
            text = f'Node("op", op={self.operator(node.op)}, parents=[{parts}])'
        elif isinstance(node, OpNode):
            parent = node.parents[0]
            inner = self.expr(parent)
            if isinstance(parent, ConcatNode) and id(parent) not in self.names:
                inner = f"({inner})"
            steps = {name: self.expr(node.parents[i]) for name, i in node.depends.items()}
            text = f"{inner} >> {self.operator(node.template, steps)}"
        else:
            text = self.concat(node)
        if shared:
            return self.assign(node, text, "step")
        return text

    def concat(self, node: Node) -> str:
        if isinstance(node.parents[0], ConcatNode):  # `+` would flatten it: build it explicitly
            parts = ", ".join(f"Node.as_node({self.expr(p)})" for p in node.parents)
            self.imports.append("from interactive_recsys.workflow._graph import Node")
            return f'Node("concat", parents=[{parts}])'
        parts = []
        for i, p in enumerate(node.parents):
            text = self.expr(p, in_sum=True, first=i == 0)
            # `+` binds before `>>`
            wrap = isinstance(p, ConcatNode | OpNode) and id(p) not in self.names
            parts.append(f"({text})" if wrap else text)
        return " + ".join(parts)

    def assign(self, node: Node, text: str, prefix: str) -> str:
        self.counter += 1
        var = f"{prefix}_{self.counter}"
        self.lines.append(f"{var} = {text}")
        self.names[id(node)] = var
        return var

    # ---- the whole program ----------------------------------------------------------------
    def program(self) -> str:
        out = self.output
        if isinstance(out, ConcatNode) and not isinstance(out.parents[0], ConcatNode):
            parts = []
            for i, p in enumerate(out.parents, start=1):
                if id(p) not in self.names:
                    text = self.expr(p, in_sum=True, first=True)
                    self.lines.append(_wrap_chain(f"branch_{i} = ", text))
                    self.names[id(p)] = f"branch_{i}"
                parts.append(self.names[id(p)])
            final = " + ".join(parts)
        else:
            final = self.expr(out)
        self.lines.append(f"workflow = irs.Workflow({final})")
        notes = self.placeholders.lines()
        imports = ["import os"] * bool(notes) + HEADER + sorted(set(self.imports))
        return "\n".join([*imports, "", *notes, *self.lines])


def _wrap_chain(head: str, text: str) -> str:
    """``head + text``, with a long chain cut into one ``>> op`` per line."""
    if len(head) + len(text) <= 100 or " >> ops." not in text:
        return head + text
    first, *rest = text.split(" >> ops.")
    return head + "(\n    " + first + "".join(f"\n    >> ops.{r}" for r in rest) + "\n)"


def workflow_code(workflow: Workflow | Node) -> str:
    """Python code that builds ``workflow`` again and names it ``workflow``.

    Raises :class:`~interactive_recsys.ParameterError` for a ``LambdaOp`` holding a function
    that cannot be imported (a lambda, or one defined in ``__main__``).
    """
    node = workflow.output_node if isinstance(workflow, Workflow) else Node.as_node(workflow)
    return _Writer(node).program()


def job_code(workflow: Workflow | Node, data: str, output: str,
             workflow_dir: str = "my_workflow/", reader: str = "irs.Dataset") -> str:
    """The whole job as a script that runs as it is: open ``data`` with ``reader``, build
    the workflow, fit it, write the transformed data to ``output`` as parquet and save the
    fitted workflow to ``workflow_dir`` (which ``irs run --workflow`` applies to new data).

    >>> from interactive_recsys import ops
    >>> print(job_code(["c"] >> ops.Categorify(), "day_0/", "day_0-processed/"))
    import interactive_recsys as irs
    from interactive_recsys import ops
    <BLANKLINE>
    workflow = irs.Workflow(["c"] >> ops.Categorify())
    <BLANKLINE>
    # Fit (one pass over the data per dependency phase), write, save the fitted workflow
    dataset = irs.Dataset('day_0/')
    workflow.fit(dataset)
    workflow.transform(dataset).to_parquet('day_0-processed/')  # overwrite=True to replace
    workflow.save('my_workflow/')  # irs run --workflow my_workflow/ applies it to new data
    """
    node = workflow.output_node if isinstance(workflow, Workflow) else Node.as_node(workflow)
    writer = _Writer(node)
    places = writer.placeholders
    data_code = places.code(data, "IRS_DATA_URL", "the data's URL")
    output_code = places.code(output, "IRS_OUTPUT_URL", "the output's URL")
    wf_code = places.code(workflow_dir, "IRS_WORKFLOW_URL", "the fitted workflow's URL")
    return "\n".join([
        writer.program(), "",
        "# Fit (one pass over the data per dependency phase), write, save the fitted workflow",
        f"dataset = {reader}({data_code})",
        "workflow.fit(dataset)",
        f"workflow.transform(dataset).to_parquet({output_code})  # overwrite=True to replace",
        f"workflow.save({wf_code})  # irs run --workflow {redact_text(workflow_dir)} applies "
        "it to new data"])


def offline_steps(workflow: Workflow | Node) -> list[str]:
    """The operators of ``workflow`` that the online transform refuses (``Operator.online``:
    it has no per-batch version of them), each named once, in graph order; empty when every
    step can run per batch on the training device."""
    wf = workflow if isinstance(workflow, Workflow) else Workflow(workflow)
    names = [type(n.op).__name__ for n in wf.nodes
             if isinstance(n, OpNode) and not type(n.op).online]
    return list(dict.fromkeys(names))


def training_code(workflow: Workflow | Node, data: str = "raw/",
                  workflow_dir: str = "my_workflow/", batch_size: int = 65_536,
                  device: str | None = None, processed: str | None = None) -> str:
    """The Studio's "Train from raw data": loader code for both paths after a fit.

    The pre-processed path writes the transformed copy once and trains from it; the online
    path reads ``data`` as it is and applies the fitted workflow to every batch on
    ``device`` (:mod:`~interactive_recsys.loader._online`). A workflow with a step that needs
    more than the row gets the first path only, with a comment naming the step. With
    ``processed`` (the copy the job above this code wrote), the first path reads it. Without
    ``device``, the code trains on the GPU where PyTorch finds one, else on the CPU.

    >>> from interactive_recsys import ops
    >>> print(training_code(["c"] >> ops.Categorify(), data="day_0/", device="cuda"))
    import interactive_recsys as irs
    <BLANKLINE>
    wf = irs.Workflow.load('my_workflow/')  # the fitted workflow (saved by the Studio or the job)
    <BLANKLINE>
    # Train from pre-processed data: write the transformed copy once, then read it
    wf.transform(irs.Dataset('day_0/')).to_parquet('day_0/'.rstrip('/') + '-processed/')
    loader = irs.Loader('day_0/'.rstrip('/') + '-processed/', batch_size=65536, device='cuda')
    <BLANKLINE>
    # Train from raw data: the workflow applied to each batch on the device (no copy)
    loader = irs.Loader('day_0/', batch_size=65536, workflow=wf, device='cuda')
    """
    places = Placeholders()
    data_code = places.code(data, "IRS_DATA_URL", "the raw data's URL")
    wf_code = places.code(workflow_dir, "IRS_WORKFLOW_URL", "the fitted workflow's URL")
    copy, first = _preprocessed_path(places, data_code, processed)
    notes = places.lines()
    imports, pick, device_code = _device_lines(device)
    lines = ["import os"] * bool(notes) + [*imports, "import interactive_recsys as irs", "",
             *notes, f"wf = irs.Workflow.load({wf_code})  # the fitted workflow (saved by the "
             "Studio or the job)", *pick, "", *first,
             f"loader = irs.Loader({copy}, batch_size={batch_size}, device={device_code})",
             ""]
    return "\n".join(lines + _online_lines(workflow, data_code, batch_size, device_code))


def _preprocessed_path(places: Placeholders, data_code: str,
                       processed: str | None) -> tuple[str, list[str]]:
    """The code of the transformed copy's path, and the lines that write it (none when
    ``processed``, written by the job above, is given)."""
    if processed is None:
        copy = f"{data_code}.rstrip('/') + '-processed/'"
        return copy, ["# Train from pre-processed data: write the transformed copy once, "
                      "then read it", f"wf.transform(irs.Dataset({data_code})).to_parquet({copy})"]
    copy = places.code(processed, "IRS_OUTPUT_URL", "the output's URL")
    return copy, ["# Train from pre-processed data: the transformed copy written above"]


def _device_lines(device: str | None) -> tuple[list[str], list[str], str]:
    """The imports, the lines that pick the device, and the code of the device."""
    if device is None:
        return (["import torch", ""],
                ['device = "cuda" if torch.cuda.is_available() else "cpu"'], "device")
    return [], [], repr(device)


def _online_lines(workflow: Workflow | Node, data_code: str, batch_size: int,
                  device_code: str) -> list[str]:
    """The online path's lines, or a comment naming the steps it cannot apply per batch."""
    refused = offline_steps(workflow)
    if refused:
        return [f"# Train from raw data: not available, the online transform has no "
                f"per-batch version of {', '.join(refused)}: train from the "
                "pre-processed copy above"]
    return ["# Train from raw data: the workflow applied to each batch on the device "
            "(no copy)",
            f"loader = irs.Loader({data_code}, batch_size={batch_size}, workflow=wf, "
            f"device={device_code})"]
