"""The API reference pages, written at build start from the package itself.

* one page per public name of ``interactive_recsys``: ``__all__`` and the names it imports
  on first use (``irs.Loader``, ``irs.ui``...). Classes, exceptions and functions get an
  autodoc page; a top-level name that is a module under another name (``irs.cluster``,
  ``irs.storage``, ``irs.jobs``...) a page that points to that module's page;
* one page per operator registered in ``interactive_recsys.ops.OPERATORS``, whose parameter
  table is built from the operator's declared :class:`~interactive_recsys.params.Param`
  table (the one the constructor validates against), so the page cannot drift from the code;
* one page per public package and module, by its real dotted name
  (``interactive_recsys.io``, ``interactive_recsys.runtime.jobs``): its docstring, a table
  of its public names (its ``__all__``, else what it defines) and its subpackages, and a
  page for each of its classes and functions that no page above describes. A module whose
  name has a part starting with ``_`` is private (the implementation) and gets no page.

Each object is described on one page; every other table that lists it links there.

The pages are written under the build folder (``irs_sources``), never into ``docs/``, and
join the site as ``api/generated/<name>``; a file is rewritten only when its text changes,
so an unchanged page is not read again by an incremental build. The tables of the reference's
index (``contents_page``) go into ``api/index.md`` as it is read, in place of its
``<!-- irs-api-contents -->`` line.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import shutil
from types import ModuleType
from typing import Any

from irs_sources import add_documents, build_folder, write_if_changed
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


def _qualified(text: str, module: str) -> str:
    """``text`` (a module's docstring) with the plain names of its roles qualified with the
    module's name, so they resolve on another module's page too: ``:class:`Builder``` ->
    ``:class:`~pkg.mod.Builder```."""
    def qualify(match: re.Match) -> str:
        role, target = match.group(1), match.group(2)
        if target.startswith((".", "~", "interactive_recsys")) or "<" in target:
            return match.group(0)
        return f"{role}`~{module}.{target}`"
    return re.sub(r"(:[\w:]+:)`([^`]+)`", qualify, text)


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


#: Packages whose submodules mirror another library's modules for porting (``nvt.ops``,
#: ``nvt.io``...): their API is that library's; the package's own page lists them.
MIRRORS = (f"{PACKAGE}.compat.nvtabular",)


def public_modules() -> list[str]:
    """The public packages and modules, by their real dotted names: every module of the
    package with no name part that starts with ``_`` (``interactive_recsys.io``,
    ``interactive_recsys.runtime.jobs``), but the submodules of :data:`MIRRORS`. Private
    implementation modules (``io/_dataset.py``) never get a page: their public names are
    documented where their package's ``__all__`` re-exports them."""
    import interactive_recsys as irs
    names = [info.name for info in pkgutil.walk_packages(irs.__path__, f"{PACKAGE}.")]
    return sorted(name for name in names
                  if not any(part.startswith("_") for part in name.split("."))
                  and not any(name.startswith(mirror + ".") for mirror in MIRRORS))


class Owners:
    """Which document describes each object (by identity; the objects are held, so an id is
    never reused by another object while the pages are made)."""

    def __init__(self) -> None:
        self._pages: dict[int, tuple[Any, str]] = {}

    def claim(self, obj: Any, page: str) -> str:
        """The page of ``obj``: ``page`` unless another claimed it first."""
        return self._pages.setdefault(id(obj), (obj, page))[1]

    def get(self, obj: Any) -> str | None:
        found = self._pages.get(id(obj))
        return found[1] if found else None


def module_page(shown: str, module: ModuleType, pages: Owners,
                modules: dict[str, ModuleType]) -> tuple[str, list[tuple[str, Any]]]:
    """A module's page (its docstring, a table of its public names) and the (document name,
    object) of each of its classes, functions and submodules whose page is its own: a name
    with a page elsewhere (``pages``: object -> document name) is linked there, so
    every object is described once. Constants are documented on the module's page."""
    own, data = [], []
    for name in module_public_names(module):
        obj = getattr(module, name)
        (data if _kind(obj) == "data" else own).append((name, obj))
    listed = {id(obj) for _, obj in own}
    own += [(name.rsplit(".", 1)[-1], sub) for name, sub in modules.items()  # its subpackages
            if name.rsplit(".", 1)[0] == module.__name__ and id(sub) not in listed]
    children = []
    for name, obj in own:
        if _kind(obj) != "module":  # a module has its own page, or none (too deep)
            if pages.claim(obj, f"{shown}.{name}") == f"{shown}.{name}":
                children.append((f"{shown}.{name}", obj))

    def link(name: str, obj: Any) -> str:
        page = pages.get(obj)
        return f":doc:`{name} <{page}>`" if page else f"``{name}``"

    def summary(obj: Any) -> str:  # a subpackage's roles name its own names
        text = summary_line(obj)
        return _qualified(text, obj.__name__) if _kind(obj) == "module" else text

    rows = [f"   * - {link(name, obj)}\n     - {_cell(summary(obj))}" for name, obj in own]
    lines = [_title(shown), f".. automodule:: {module.__name__}\n   :no-members:\n"]
    if rows:
        lines.append(".. list-table::\n   :widths: 25 75\n\n" + "\n".join(rows) + "\n")
    if children:
        lines.append(".. toctree::\n   :hidden:\n\n" + "\n".join(
            f"   {child}" for child, _ in children) + "\n")
    if data:
        lines.append(".. rubric:: Constants\n")
        lines.append(f".. currentmodule:: {module.__name__}\n")
        lines += [f".. autodata:: {name}\n   :no-value:\n" for name, _ in data]
    return "\n".join(lines), children


def alias_page(shown: str, module: ModuleType) -> str:
    """The page of a top-level name that is a module under another name (``irs.cluster`` is
    ``interactive_recsys.runtime.cluster``): a pointer to the module's own page."""
    name = shown.rsplit(".", 1)[-1]
    return "\n".join([_title(shown),
                      f"``irs.{name}`` is the module :doc:`{module.__name__} <{module.__name__}>`"
                      f" (``import interactive_recsys as irs``). {summary_line(module)}\n"])


def public_names() -> list[str]:
    """``interactive_recsys.__all__`` and the names it imports on first use (``irs.Loader``,
    ``irs.ui``...)."""
    import interactive_recsys as irs
    return list(dict.fromkeys([*irs.__all__, *getattr(irs, "_LAZY", {})]))


def _home(obj: Any, modules: dict[str, ModuleType]) -> str | None:
    """The public module an object belongs to: the deepest one that lists it and whose name
    its ``__module__`` starts with (``io._dataset.Dataset`` -> ``io``), if any."""
    defined = getattr(obj, "__module__", None) or ""
    homes = [name for name, module in modules.items()
             if (defined == name or defined.startswith(name + "."))
             and any(getattr(module, n, None) is obj for n in module_public_names(module))]
    return max(homes, key=len, default=None)


def all_pages() -> dict[str, str]:
    """Document name (without ``generated/``) -> rst text of every API page: the top-level
    names, the operators, then each public module by its real name. Each object is described
    on one page, the others that list it link there: a top-level name's page, an operator's,
    else its home module's (:func:`_home`), else the first module that lists it."""
    import interactive_recsys as irs
    pages: dict[str, str] = {}
    owner = Owners()
    modules = {name: importlib.import_module(name) for name in public_modules()}
    for name, module in modules.items():
        owner.claim(module, name)
    for name in public_names():
        obj = getattr(irs, name)
        if _kind(obj) not in ("module", "data"):
            owner.claim(obj, f"{PACKAGE}.{name}")
            pages[f"{PACKAGE}.{name}"] = object_page(f"{PACKAGE}.{name}", PACKAGE, obj)
        elif _kind(obj) == "module" and f"{PACKAGE}.{name}" not in modules:
            pages[f"{PACKAGE}.{name}"] = alias_page(f"{PACKAGE}.{name}", obj)
    for name, op in operators().items():
        owner.claim(op, f"{PACKAGE}.ops.{name}")
        pages[f"{PACKAGE}.ops.{name}"] = operator_page(name, op)
    for name, module in modules.items():
        for child in module_public_names(module):
            obj = getattr(module, child)
            if _kind(obj) not in ("data", "module") and _home(obj, modules) == name:
                owner.claim(obj, f"{name}.{child}")
    for name, module in modules.items():
        text, children = module_page(name, module, owner, modules)
        pages[name] = text
        for child, obj in children:
            if child not in pages:  # an operator's page is written above
                pages[child] = object_page(child, name, obj)
    return pages


def contents_page(pages: dict[str, str]) -> str:
    """The tables and the toctree of ``api/index.md`` (Markdown)."""
    import interactive_recsys as irs
    names = public_names()
    core = [n for n in names if _kind(getattr(irs, n)) != "module"]
    aliases = [n for n in names if f"{PACKAGE}.{n}" in pages
               and pages[f"{PACKAGE}.{n}"] == alias_page(f"{PACKAGE}.{n}", getattr(irs, n))]
    modules = public_modules()

    def row(name: str, page: str, obj: Any) -> str:
        return f"| [{name}]({page_name(page)}) | {_md(summary_line(obj))} |"

    out = ["## Top level\n", "| Name | Summary |", "|---|---|"]
    out += [row(n, f"{PACKAGE}.{n}", getattr(irs, n)) for n in core]
    out += ["", "## Operators\n",
            "Compose them with `>>` (chain) and `+` (concatenate); each page has the "
            "operator's parameter table.\n", "| Operator | Category | Summary |", "|---|---|---|"]
    out += [f"| [{n}]({page_name(f'{PACKAGE}.ops.{n}')}) | {op.category} | "
            f"{_md(summary_line(op))} |" for n, op in operators().items()]
    out += ["", "## Packages and modules\n",
            "Each package's page lists the public names of its `__all__`. Modules whose name "
            "starts with `_` hold the implementation and are not part of the API. "
            + ", ".join(f"`irs.{n}` is `{getattr(irs, n).__name__}`" for n in aliases)
            + ".\n", "| Module | Summary |", "|---|---|"]
    out += [row(m, m, importlib.import_module(m)) for m in modules]
    top = [f"{PACKAGE}.{n}" for n in core] + modules + [f"{PACKAGE}.{n}" for n in aliases]
    out += ["", "```{toctree}", ":hidden:", ""] + [page_name(t) for t in top]
    out.append("```")
    return "\n".join(out) + "\n"


#: The line of ``api/index.md`` that the generated tables replace.
CONTENTS_MARKER = "<!-- irs-api-contents -->"


def generate(app: Sphinx) -> None:
    out = build_folder(app, "api")
    pages = all_pages()
    wanted = {f"{name}.rst" for name in pages} | {"_contents.md"}
    for stale in out.iterdir():  # pages of names that are gone
        if stale.name not in wanted:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    for name, text in pages.items():
        write_if_changed(out / f"{name}.rst", text)
    add_documents(app, {f"api/{page_name(name)}": out / f"{name}.rst" for name in pages})
    # kept beside the pages so that an incremental build reads api/index.md again when it changes
    write_if_changed(out / "_contents.md", contents_page(pages))


def insert_contents(app: Sphinx, docname: str, source: list[str]) -> None:
    """``api/index.md`` with its marker line replaced by the generated tables."""
    if docname == "api/index":
        contents = build_folder(app, "api") / "_contents.md"
        source[0] = source[0].replace(CONTENTS_MARKER, contents.read_text(encoding="utf-8"), 1)
        app.env.note_dependency(str(contents))


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
    app.setup_extension("irs_sources")
    app.connect("builder-inited", generate)
    app.connect("source-read", insert_contents)
    # before numpydoc (priority 500) turns the sections into rst
    app.connect("autodoc-process-docstring", drop_operator_parameters, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
