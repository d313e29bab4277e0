"""The package's import graph: no circles, and no import hidden in a function without a reason.

The graph is built from the source with ``ast``: an edge for every import of a module of the
package, at module level, inside a function (a circle held together by a function-level
import is still a circle) or under ``if TYPE_CHECKING:`` (a type hint that names a module of
a layer above, or closes a circle, is a dependency too, even if it never runs).
"""

from __future__ import annotations

import ast
import itertools
import os
import pathlib
import subprocess
import sys
from collections import defaultdict

import interactive_recsys

ROOT = pathlib.Path(interactive_recsys.__file__).parent
PACKAGE = "interactive_recsys"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package modules an import statement loads (the deepest one that exists)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = (module if is_package else module.rsplit(".", 1)[0]).split(".")
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                 for a in node.names]
    out = []
    for name in names:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        while name not in MODULES and "." in name:
            name = name.rsplit(".", 1)[0]
        if name != module:
            out.append(name)
    return out


def _imports_of(module: str, path: pathlib.Path) -> list[tuple[str, str, bool, int, str]]:
    """``(module, imported module, inside a function, line, source line)`` of every import of
    the package in one module, those under ``if TYPE_CHECKING:`` included."""
    found = []
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in _targets(module, path.name == "__init__.py", node):
                found.append((module, target, in_function, node.lineno, lines[node.lineno - 1]))
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def _imports() -> list[tuple[str, str, bool, int, str]]:
    """``(module, imported module, inside a function, line, source line)`` of every import."""
    return [found for module, path in MODULES.items() for found in _imports_of(module, path)]


def test_the_scan_counts_type_checking_imports(tmp_path):
    """The check itself: an import under ``if TYPE_CHECKING:`` is an edge like any other, so a
    type hint that points a layer up, or closes a circle, is found."""
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\n"
                      "if TYPE_CHECKING:\n"
                      "    from interactive_recsys.workflow._workflow import Workflow\n")
    found = [(m, t) for m, t, _, _, _ in _imports_of("interactive_recsys.tables._m", module)]
    assert found == [("interactive_recsys.tables._m", "interactive_recsys.workflow._workflow")]
    assert _layer(found[0][1]) > _layer(found[0][0])  # an upward arrow
    edges = {"interactive_recsys.tables._m": {"interactive_recsys.workflow._workflow"},
             "interactive_recsys.workflow._workflow": {"interactive_recsys.tables._m"}}
    assert _circles(edges) == [sorted(edges)]


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_finds_a_known_circle():
    """The check itself: a made-up circle a -> b -> c -> a is found, a chain is not."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": {"c"}, "d": {"a"}}) == []


def test_the_scan_sees_function_level_imports():
    """The scan finds the known lazy imports (else the checks below would pass vacuously)."""
    found = {(m, t) for m, t, in_function, _, _ in _imports() if in_function}
    assert ("interactive_recsys.ui.studio._studio", "interactive_recsys.ui.preview._preview") in found
    assert ("interactive_recsys.workflow._workflow", "interactive_recsys.workflow._graph") not in found


def test_no_import_circles():
    edges: dict[str, set[str]] = defaultdict(set)
    for module, target, _, _, _ in _imports():
        edges[module].add(target)
    assert _circles(edges) == []


def test_function_level_imports_of_the_package_say_why():
    """An import of the package's own modules inside a function is allowed only for a heavy
    optional import (widgets, Bokeh), and its line says so with a ``# lazy:`` comment."""
    hidden = [f"{module}:{line}: {text.strip()}" for module, _, in_function, line, text
              in _imports() if in_function and "# lazy:" not in text]
    assert hidden == []


def _dask_compute_calls(path: pathlib.Path) -> list[int]:
    """Lines of ``dask.compute(...)`` calls and ``from dask import compute`` in one module."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and node.attr == "compute"
                and isinstance(node.value, ast.Name) and node.value.id == "dask"):
            lines.append(node.lineno)
        elif (isinstance(node, ast.ImportFrom) and node.module == "dask"
              and any(a.name == "compute" for a in node.names)):
            lines.append(node.lineno)
    return lines


def test_the_compute_scan_finds_dask_compute(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import dask\nfrom dask import compute\n\ndef f(x):\n"
                      "    return dask.compute(x)\n")
    assert _dask_compute_calls(module) == [2, 5]


JOBS = "interactive_recsys.runtime.jobs"


def _compute_method_calls(path: pathlib.Path) -> list[int]:
    """Lines of ``<collection>.compute(...)`` method calls in one module: every call of an
    attribute ``compute`` but the job layer's function (``jobs.compute``, whatever the
    module is bound to) and the package's ``Dataset.compute`` (the only ``compute`` that
    takes ``dtype_backend=``; it is a phase of the job layer itself)."""
    tree = ast.parse(path.read_text())
    jobs_names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == JOBS.rsplit(".", 1)[0]:
            jobs_names |= {a.asname or a.name for a in node.names if a.name == "jobs"}
        elif isinstance(node, ast.Import):
            jobs_names |= {a.asname for a in node.names if a.name == JOBS and a.asname}
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "compute"):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id in jobs_names | {"dask"}:
            continue  # the job layer's function; dask.compute: _dask_compute_calls
        if any(k.arg == "dtype_backend" for k in node.keywords):
            continue
        lines.append(node.lineno)
    return sorted(lines)


def test_the_compute_scan_finds_compute_methods(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from interactive_recsys.runtime import jobs\n"
        "import interactive_recsys.runtime.jobs as j\n"
        "def f(ddf, ds, client):\n"
        "    a = ddf.get_partition(0).compute()\n"  # 4: a collection computed by hand
        "    b, = jobs.compute(ddf, phase='x')\n"
        "    c, = j.compute(ddf, phase='x')\n"
        "    d = ds.compute(dtype_backend='pyarrow')\n"
        "    e = client.compute([ddf])\n"  # 8: the scheduler asked directly
        "    return ddf[['a']].compute(scheduler='sync')\n")  # 9
    assert _compute_method_calls(module) == [4, 8, 9]


def test_every_dask_compute_goes_through_jobs_compute():
    """Only :mod:`interactive_recsys.runtime.jobs` computes: no ``dask.compute`` and no
    ``.compute()`` of a collection elsewhere, so that every computation is a named phase
    that shows in the dashboard and can be cancelled."""
    calls = {str(path.relative_to(ROOT)): lines for path in ROOT.rglob("*.py")
             if (lines := _dask_compute_calls(path) + _compute_method_calls(path))}
    assert calls == {"runtime/jobs.py": calls.get("runtime/jobs.py")} and calls["runtime/jobs.py"]


#: The output route of ``Dataset.to_parquet``, top first: each step calls the next, and the
#: formats (Merlin's schema, HugeCTR's files) are leaves the exporter calls.
OUTPUT_ROUTE = ["interactive_recsys.io._dataset", "interactive_recsys.io._export",
                "interactive_recsys.io._writer", "interactive_recsys.store._outputs"]
OUTPUT_LEAVES = {"interactive_recsys.io._export": {"interactive_recsys.io._hugectr",
                                                   "interactive_recsys.io._merlin_schema"}}


def _route_breaks(imported: dict[str, set[str]], route: list[str],
                  leaves: dict[str, set[str]]) -> list[str]:
    """Where ``route`` does not run top-down: a step that does not import the next one, a
    step (or a leaf) that imports a step above it or another step's leaf, or a step called
    from outside the route's step above it (but the last, a floor others use too; a package's
    ``__init__``, which only re-exports its modules, calls nothing)."""
    breaks = []
    for step, below in itertools.pairwise(route):
        if below not in imported[step]:
            breaks.append(f"{step} does not call {below}")
        callers = {m for m, targets in imported.items() if below in targets
                   and not below.startswith(m + ".")}
        if below != route[-1] and callers != {step}:
            breaks.append(f"{below} is called from {sorted(callers - {step})}")
    for i, step in enumerate(route):
        above = set(route[:i]) | {leaf for s in route[:i] for leaf in leaves.get(s, ())}
        for module in {step, *leaves.get(step, ())}:
            if imported[module] & (above - {module}):
                breaks.append(f"{module} imports {sorted(imported[module] & above)}")
            others = {leaf for s, ls in leaves.items() if s != step for leaf in ls}
            if imported[module] & others:
                breaks.append(f"{module} imports another step's leaf")
    return breaks


def test_the_route_check_finds_a_zig_zag():
    """The check itself: a made-up route whose writer calls back its exporter is found."""
    route, leaves = ["d", "e", "w", "o"], {"e": {"f"}}
    good = defaultdict(set, {"d": {"e", "opts"}, "e": {"w", "f", "opts"}, "w": {"o", "opts"}})
    assert _route_breaks(good, route, leaves) == []
    up = defaultdict(set, {**good, "w": {"o", "e"}})
    assert _route_breaks(up, route, leaves) == ["e is called from ['w']", "w imports ['e']"]
    leaf_down = defaultdict(set, {**good, "w": {"o", "f"}})
    assert _route_breaks(leaf_down, route, leaves)  # the writer calls a format
    skip = defaultdict(set, {**good, "d": {"e", "w"}})
    assert _route_breaks(skip, route, leaves) == ["w is called from ['d']"]


def test_the_output_side_runs_top_down():
    """``Dataset.to_parquet`` (io._dataset) -> ``io._export`` (Merlin's schema and HugeCTR's
    files as its leaves) -> the generic ``io._writer`` (files, not formats) -> the atomic
    folders of ``store``: each step calls only the next, none calls one above it (no
    callback module), and the writer's options are declared once (``io._write_options``)."""
    imported: dict[str, set[str]] = defaultdict(set)
    for module, target, _, _, _ in _imports():
        imported[module].add(target)
    assert _route_breaks(imported, OUTPUT_ROUTE, OUTPUT_LEAVES) == []
    options = "interactive_recsys.io._write_options"
    assert options in imported["interactive_recsys.io._dataset"]
    assert options in imported["interactive_recsys.io._writer"]
    assert not imported[options] & {*OUTPUT_ROUTE, *OUTPUT_LEAVES["interactive_recsys.io._export"]}


#: The layers of the table in docs/develop/architecture.md, bottom first: the package's folders
#: and root modules. A module may import its own layer and the layers below it, never above.
LAYERS = [
    {"_version", "redact", "errors", "params", "schema", "operands", "hashing",
     "lazy", "embedding"},  # foundation
    {"backend", "store"},  # pandas/cuDF kernels; files, folders and the commit protocol
    {"runtime"},  # clusters, jobs and their phases, the resource monitor
    {"tables", "io"},  # statistics tables; datasets in, parquet (Merlin, HugeCTR) out
    {"ops"},  # operators
    {"workflow", "serving"},  # graph, plan, fit/transform, reuse, updates, the saved
    # format; the fitted per-row steps as a TorchScript module
    {"loader", "models", "eval", "stats", "datasets", "compat", "torchrec"},  # users of it
    {"ui", "report", "cli"},  # the faces: widgets, the notebook report, the command line
]


def _layer(module: str) -> int:
    if module == PACKAGE:
        return len(LAYERS)  # the facade imports everything
    top = module.split(".")[1]
    found = [i for i, names in enumerate(LAYERS) if top in names]
    assert found, f"{module} is in no layer of docs/develop/architecture.md's table"
    return found[0]


def import_graph_counts() -> dict[str, int]:
    """The numbers the layer table is judged by: its layers, the import edges between its
    entries (folders and root modules), and those that run upward."""
    edges = {(module.split(".")[1], target.split(".")[1]) for module, target, _, _, _ in _imports()
             if module != PACKAGE and module.split(".")[1] != target.split(".")[1]}
    upward = [(a, b) for a, b in edges if _layer(f"{PACKAGE}.{b}") > _layer(f"{PACKAGE}.{a}")]
    return {"layers": len(LAYERS), "entries": len(set().union(*LAYERS)),
            "edges": len(edges), "upward": len(upward)}


def test_every_folder_and_root_module_sits_on_one_layer():
    tops = {module.split(".")[1] for module in MODULES if module != PACKAGE}
    placed = [name for layer in LAYERS for name in layer]
    assert sorted(placed) == sorted(set(placed)), "a name sits on two layers"
    assert tops == set(placed)


def test_no_module_imports_a_layer_above_its_own():
    upward = sorted({f"{module} -> {target}" for module, target, _, _, _ in _imports()
                     if _layer(target) > _layer(module)})
    assert upward == []
    assert import_graph_counts()["upward"] == 0


#: The builder's sub-layers: its model is plain Python (no widget library, no view), so it
#: can be used and tested without a front end; its views draw it.
BUILDER_MODEL = "interactive_recsys.ui.builder.model"
BUILDER_VIEWS = "interactive_recsys.ui.builder.views"
WIDGET_LIBRARIES = ("ipywidgets", "bokeh", "anywidget", "IPython.display", "traitlets")


def _library_imports(path: pathlib.Path) -> set[str]:
    """Every module an import statement of ``path`` names (at any level, but not under
    ``if TYPE_CHECKING:``), as written: ``from a.b import c`` gives ``a.b`` and ``a.b.c``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def sublayer_breaks(roots: list[str], edges: dict[str, set[str]],
                    libraries: dict[str, set[str]]) -> list[str]:
    """What the modules ``roots`` load, directly or through the package's modules they
    import (and the packages above each, whose ``__init__`` runs first), that a model must
    not: a widget library or a builder view."""
    seen, todo = set(), list(roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parents = [module.rsplit(".", i)[0] for i in range(1, module.count("."))]
        todo += [*edges.get(module, ()), *(p for p in parents if p in MODULES or p in edges)]
    breaks = [f"{m} imports {lib}" for m in sorted(seen) for lib in sorted(libraries.get(m, ()))
              if any(lib == w or lib.startswith(w + ".") for w in WIDGET_LIBRARIES)]
    return breaks + sorted(f"{m} is a view" for m in seen
                           if m == BUILDER_VIEWS or m.startswith(BUILDER_VIEWS + "."))


def test_the_sublayer_check_finds_a_widget_behind_an_import():
    """The check itself: a model module that reaches ipywidgets through a helper, or a view,
    is found; ``IPython`` alone (not its display) and numbers are allowed."""
    edges = {"m.model": {"m.helper"}, "m.helper": {"m.views"}}
    libraries = {"m.helper": {"ipywidgets", "IPython"}, "m.model": {"numbers"}}
    assert sublayer_breaks(["m.model"], edges, libraries) == ["m.helper imports ipywidgets"]
    assert sublayer_breaks(["m.model"], {"m.model": {f"{BUILDER_VIEWS}._x"}}, {}) == [
        f"{BUILDER_VIEWS} is a view", f"{BUILDER_VIEWS}._x is a view"]


def test_the_builder_model_imports_no_widget_library_and_no_view():
    edges: dict[str, set[str]] = defaultdict(set)
    for module, target, _, _, _ in _imports():
        edges[module].add(target)
    libraries = {module: _library_imports(path) for module, path in MODULES.items()}
    roots = [m for m in MODULES if m == BUILDER_MODEL or m.startswith(BUILDER_MODEL + ".")]
    assert len(roots) > 5
    assert sublayer_breaks(roots, edges, libraries) == []


def test_importing_the_builder_model_loads_no_widget_library():
    """The same at run time: a fresh interpreter imports the model, no widget module."""
    code = (f"import sys, {BUILDER_MODEL}\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{('ipywidgets', 'bokeh', 'anywidget', 'traitlets')!r} or m == 'IPython.display'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT.parent, env={**os.environ,
                                                           "PYTHONPATH": str(ROOT.parent)})
    assert out.stdout.strip() == "[]"
