"""The API reference pages, written at build start from the package itself.

* one page per public name of ``interactive_recsys``: ``__all__`` and the names it imports
  on first use (``irs.Loader``, ``irs.ui``...). Classes, exceptions and functions get an
  autodoc page; a module gets a page with its docstring and a table of its public names
  (its ``__all__``, else what it defines), and each class, function or submodule among those
  its own page (a submodule's page lists its names without a page each);
* one page per operator registered in ``interactive_recsys.ops.OPERATORS``, whose parameter
  table is built from the operator's declared :class:`~interactive_recsys.params.Param`
  table (the one the constructor validates against), so the page cannot drift from the code.

Pages go to ``docs/api/generated/`` (git-ignored); a file is rewritten only when its text
changes, so an unchanged page is not read again by an incremental build.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

from sphinx.application import Sphinx

PACKAGE = "interactive_recsys"


# ---- what is public ------------------------------------------------------------------------
def module_public_names(module: ModuleType) -> list[str]:
    """``module.__all__``, else the names it defines itself (not imported) without a leading
    underscore."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [name for name, value in vars(module).items() if not name.startswith("_")
            and (getattr(value, "__module__", None) == module.__name__)
            and (inspect.isclass(value) or inspect.isfunction(value))]


def operators() -> dict[str, type]:
    from interactive_recsys.ops import OPERATORS
    return dict(sorted(OPERATORS.items()))


def page_name(qualified: str) -> str:
    """The document name (under ``api/``) of a public name, e.g. ``interactive_recsys.ops.Clip``."""
    return f"generated/{qualified}"


def expected_pages() -> list[str]:
    """Every API document the reference has (the tests check each was built)."""
    return sorted(all_pages())


# ---- text helpers --------------------------------------------------------------------------
def _kind(obj: Any) -> str:
    if isinstance(obj, ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def _title(text: str) -> str:
    return f"{text}\n{'=' * len(text)}\n"


def summary_line(obj: Any) -> str:
    """The first sentence of the object's docstring (or of an operator's ``summary``)."""
    summary = getattr(obj, "summary", None)
    if inspect.isclass(obj) and isinstance(summary, str) and summary:
        return summary.rstrip(".") + "."
    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    return first


def _cell(text: str) -> str:
    """One line of a list-table cell (an empty cell needs a placeholder character)."""
    text = " ".join(str(text).split())
    return text or "\\"


def _md(text: str) -> str:
    """reST summary text for a Markdown table cell: roles become code (``:class:`~a.B```
    -> ```B```), ``|`` cannot stand in a cell."""
    def code(match: re.Match) -> str:
        target = match.group(1)
        return f"`{target.rsplit('.', 1)[-1] if target.startswith('~') else target}`"
    text = re.sub(r":[\w:]+:`([^`]+)`", code, text).replace("``", "`")
    return text.replace("|", "/")


def _literal(text: str) -> str:
    return f"``{text}``" if text else ""


def parameter_table(op: type) -> str:
    """The operator's parameters as an rst ``list-table``: from ``op.params`` only."""
    if not op.params:
        return "This operator takes no parameters.\n"
    rows = ["   * - Name\n     - Accepted values\n     - Default\n     - Description"]
    for name, spec in op.params.items():
        default = "required" if spec.required else _literal(repr(spec.default))
        rows.append(f"   * - ``{name}``\n     - {_cell(spec.describe())}"
                    f"\n     - {_cell(default)}\n     - {_cell(spec.doc)}")
    return (".. list-table::\n   :header-rows: 1\n   :widths: auto\n"
            "   :class: irs-param-table\n\n" + "\n".join(rows) + "\n")


# ---- pages ---------------------------------------------------------------------------------
def object_page(qualified: str, module: str, obj: Any) -> str:
    """An autodoc page for a class, an exception or a function found in ``module``."""
    name = qualified.rsplit(".", 1)[-1]
    kind = _kind(obj)
    lines = [_title(name), f".. currentmodule:: {module}\n"]
    if kind == "class":
        lines.append(f".. autoclass:: {name}\n   :members:\n")
    elif kind == "exception":
        lines.append(f".. autoexception:: {name}\n")
    else:
        lines.append(f".. autofunction:: {name}\n")
    return "\n".join(lines)


def operator_page(name: str, op: type) -> str:
    lines = [_title(name), ".. currentmodule:: interactive_recsys.ops\n",
             f"*{op.category.capitalize()} operator.* {summary_line(op)}\n",
             f"Use it as ``columns >> ops.{name}(...)`` in a :class:`~interactive_recsys."
             "Workflow`; saved workflows store it by name with its non-default parameters.\n",
             ".. rubric:: Parameters\n",
             "Generated from the operator's declared parameters, which its constructor "
             "validates against.\n",
             parameter_table(op),
             f".. autoclass:: {name}\n"]
    module = importlib.import_module(op.__module__)
    if len((inspect.getdoc(module) or "").splitlines()) > 1:  # more than a title line
        lines += [".. rubric:: Details\n",
                  f".. automodule:: {op.__module__}\n   :no-members:\n   :no-index:\n"]
    return "\n".join(lines)


def module_page(shown: str, module: ModuleType, pages: bool = True
                ) -> tuple[str, list[tuple[str, Any]]]:
    """A module's page (its docstring, a table of its public names) and the (qualified name,
    object) of each name that gets a page of its own: with ``pages``, its classes,
    functions and submodules; constants are documented on the module's page."""
    names = module_public_names(module)
    own, data = [], []
    for name in names:
        obj = getattr(module, name)
        (data if _kind(obj) == "data" else own).append((name, obj))

    def link(name: str) -> str:
        return f":doc:`{name} <{shown}.{name}>`" if pages else f"``{name}``"

    rows = [f"   * - {link(name)}\n     - {_cell(summary_line(obj))}" for name, obj in own]
    lines = [_title(shown), f".. automodule:: {module.__name__}\n   :no-members:\n"]
    if rows:
        lines.append(".. list-table::\n   :widths: 25 75\n\n" + "\n".join(rows) + "\n")
        if pages:
            lines.append(".. toctree::\n   :hidden:\n\n" + "\n".join(
                f"   {shown}.{name}" for name, _ in own) + "\n")
    if data and pages:
        lines.append(".. rubric:: Constants\n")
        lines.append(f".. currentmodule:: {module.__name__}\n")
        lines += [f".. autodata:: {name}\n   :no-value:\n" for name, _ in data]
    return "\n".join(lines), [(f"{shown}.{name}", obj) for name, obj in own] if pages else []


def public_names() -> list[str]:
    """``interactive_recsys.__all__`` and the names it imports on first use (``irs.Loader``,
    ``irs.ui``...)."""
    import interactive_recsys as irs
    return list(dict.fromkeys([*irs.__all__, *getattr(irs, "_LAZY", {})]))


def _collect(pages: dict[str, str], qualified: str, obj: Any, module: str, depth: int) -> None:
    """The page of ``obj`` (found in ``module``) and, for a module, of its names: a
    module's own submodules get a page with their docstring and names, not one per name."""
    kind = _kind(obj)
    if kind == "module":
        text, children = module_page(qualified, obj, pages=depth == 0)
        pages[qualified] = text
        for child, value in children:
            _collect(pages, child, value, obj.__name__, depth + 1)
    elif kind != "data":
        pages[qualified] = object_page(qualified, module, obj)


def all_pages() -> dict[str, str]:
    """Document name (without ``generated/``) -> rst text of every API page."""
    import interactive_recsys as irs
    pages: dict[str, str] = {}
    for name in public_names():
        _collect(pages, f"{PACKAGE}.{name}", getattr(irs, name), PACKAGE, 0)
    for name, op in operators().items():
        pages[f"{PACKAGE}.ops.{name}"] = operator_page(name, op)
    return pages


def contents_page(pages: dict[str, str]) -> str:
    """``_contents.md``, included by ``api/index.md``: the tables and the toctree."""
    import interactive_recsys as irs
    names = public_names()
    core = [n for n in names if _kind(getattr(irs, n)) != "module"]
    modules = [n for n in names if _kind(getattr(irs, n)) == "module"]

    def row(name: str, obj: Any) -> str:
        return f"| [{name}]({page_name(f'{PACKAGE}.{name}')}) | {_md(summary_line(obj))} |"

    out = ["## Top level\n", "| Name | Summary |", "|---|---|"]
    out += [row(n, getattr(irs, n)) for n in core]
    out += ["", "## Operators\n",
            "Compose them with `>>` (chain) and `+` (concatenate); each page has the "
            "operator's parameter table.\n", "| Operator | Category | Summary |", "|---|---|---|"]
    out += [f"| [{n}]({page_name(f'{PACKAGE}.ops.{n}')}) | {op.category} | "
            f"{_md(summary_line(op))} |" for n, op in operators().items()]
    out += ["", "## Modules\n", "| Module | Summary |", "|---|---|"]
    out += [row(n, getattr(irs, n)) for n in modules]
    # the top-level names; a module's page lists its own names (operators under ops)
    out += ["", "```{toctree}", ":hidden:", ""] + [page_name(f"{PACKAGE}.{n}") for n in names]
    out.append("```")
    return "\n".join(out) + "\n"


def write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate(app: Sphinx) -> None:
    out = Path(app.srcdir) / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    pages = all_pages()
    wanted = {f"{name}.rst" for name in pages} | {"_contents.md"}
    for stale in out.iterdir():  # pages of names that are gone
        if stale.name not in wanted:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    for name, text in pages.items():
        write_if_changed(out / f"{name}.rst", text)
    write_if_changed(out / "_contents.md", contents_page(pages))


def drop_operator_parameters(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                             lines: list[str]) -> None:
    """An operator's docstring without its ``Parameters`` section: the page shows the table
    generated from the same declared parameters instead."""
    if what != "class" or obj not in operators().values():
        return
    for i, line in enumerate(lines):
        if line.strip() == "Parameters" and i + 1 < len(lines) and set(
                lines[i + 1].strip()) == {"-"}:
            end = i + 2
            while end < len(lines) and not (
                    lines[end].strip() and not lines[end].startswith(" ")
                    and end + 1 < len(lines) and set(lines[end + 1].strip()) == {"-"}):
                end += 1
            del lines[i:end]
            return


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    # before numpydoc (priority 500) turns the sections into rst
    app.connect("autodoc-process-docstring", drop_operator_parameters, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
