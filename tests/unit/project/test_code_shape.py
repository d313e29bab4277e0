"""The package's code stays readable and cohesive: no function over 80 lines (40 in the
builder, ``ui/builder``), counted from ``def`` to its last line, docstring included; no
module over 800 lines; no class assembled from two or more of the package's own classes
(mixins); and in the builder, no class that reads a ``self.`` attribute defined in another
file (a mixin's contract with the class it is mixed into)."""

from __future__ import annotations

import ast
import importlib
import pathlib

import interactive_recsys

ROOT = pathlib.Path(interactive_recsys.__file__).parent
BUILDER = ROOT / "ui" / "builder"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80
MAX_BUILDER_FUNCTION_LINES = 40
MAX_BUILDER_CLASS_LINES = 350
MAX_PIPELINE_BUILDER_LINES = 250


def long_functions(source: str, limit: int) -> list[str]:
    return [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > limit]


def test_the_scan_finds_a_long_function():
    assert long_functions("def f():\n" + "    x = 1\n" * 3, 3) == ["f (4 lines)"]
    assert long_functions("class C:\n    def g(self):\n        pass\n", 1) == ["g (2 lines)"]


def test_no_module_over_800_lines_and_no_function_over_80():
    modules = sorted(ROOT.rglob("*.py"))
    assert len(modules) > 100
    too_long = {}
    for path in modules:
        text = path.read_text()
        limit = MAX_BUILDER_FUNCTION_LINES if BUILDER in path.parents else MAX_FUNCTION_LINES
        found = long_functions(text, limit)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"module ({len(text.splitlines())} lines)")
        if found:
            too_long[str(path.relative_to(ROOT))] = found
    assert too_long == {}


def _classes(tree: ast.AST) -> list[ast.ClassDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def _base_name(base: ast.expr) -> str:
    """The class name a base expression ends with (``w.VBox`` -> ``VBox``)."""
    while isinstance(base, ast.Subscript):  # Generic[T], ...
        base = base.value
    return base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")


def mixed_classes(sources: dict[str, str]) -> list[str]:
    """``file:Class`` of every class with two or more bases that are classes defined in
    ``sources`` (``{file: source}``): a class assembled from the package's own mixins."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    ours = {c.name for tree in trees.values() for c in _classes(tree)}
    return sorted(f"{name}:{c.name}" for name, tree in trees.items() for c in _classes(tree)
                  if sum(_base_name(b) in ours for b in c.bases) >= 2)


def test_the_scan_finds_a_class_made_of_mixins():
    mixins = {"a.py": "class Runs:\n    pass\nclass Store:\n    pass\n",
              "b.py": "import ipywidgets as w\nfrom a import Runs, Store\n"
                      "class Model(Runs, Store):\n    pass\n"
                      "class View(Runs, w.VBox):\n    pass\n"}
    assert mixed_classes(mixins) == ["b.py:Model"]


#: Classes outside the builder still assembled from two of the package's classes (NVTabular's
#: operator methods mixed into compat steps, a statistics operator that also filters rows):
#: none may be added, and one rebuilt from parts leaves this list.
ASSEMBLED_ELSEWHERE = ["compat/nvtabular/groupby.py:_NvtGroupby",
                       "compat/nvtabular/ops/_sequences.py:_Shifts",
                       "compat/nvtabular/ops/_steps.py:Steps",
                       "ops/_join_external.py:JoinExternal"]


def test_no_class_is_assembled_from_two_project_classes():
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in sorted(ROOT.rglob("*.py"))}
    found = mixed_classes(sources)
    assert [name for name in found if name.startswith("ui/builder/")] == []
    assert found == ASSEMBLED_ELSEWHERE


def _defined(cls: ast.ClassDef) -> set[str]:
    """Names a class defines: in its body (methods, attributes, properties, unpacked
    forwards) and as ``self.X = ...`` anywhere in it."""
    names = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return names


def _imported(tree: ast.Module) -> dict[str, str]:
    """``{name bound in the module: dotted path}`` of its imports."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.asname or a.name.split(".")[0]: a.name if a.asname else
                    a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return out


def _resolve(dotted: str) -> object | None:
    """The object a dotted path names (a class of another library), or None."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            found = getattr(found, part, None)
        return found
    return None


def foreign_reads(source: str) -> list[str]:
    """``Class.attr`` for each ``self.attr`` a class reads that it does not define, that no
    base of the same file defines, and that no base from another library has: an attribute
    some other file (a class it is mixed with) is expected to supply."""
    tree = ast.parse(source)
    imported, local = _imported(tree), {c.name: c for c in _classes(tree)}
    found = []
    for cls in local.values():
        known, others, todo = set(), [], list(cls.bases)
        known |= _defined(cls)
        while todo:
            base = todo.pop()
            if isinstance(base, ast.Name) and base.id in local:
                known |= _defined(local[base.id])
                todo += local[base.id].bases
            elif not (isinstance(base, ast.Name) and base.id == "object"):
                name = ast.unparse(base).split("[")[0]
                head, _, rest = name.partition(".")
                others.append(_resolve(".".join(filter(None, [imported.get(head, head),
                                                              rest]))))
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self" \
                    and node.attr not in known \
                    and not any(o is not None and hasattr(o, node.attr) for o in others):
                found.append(f"{cls.name}.{node.attr}")
    return sorted(set(found))


def test_the_scan_finds_an_attribute_defined_elsewhere():
    source = ("import ipywidgets as w\nfrom other import Mixin\n"
              "class Base:\n    def __init__(self):\n        self.x = 1\n"
              "class Panel(Base, w.VBox):\n    size = 2\n"
              "    def draw(self):\n        self.y = self.x + self.size\n"
              "        return self.children, self.y, self.status\n"
              "class Mixed(Mixin):\n    def run(self):\n        return self.model\n")
    assert foreign_reads(source) == ["Mixed.model", "Panel.status"]


def test_builder_classes_read_only_their_own_attributes():
    found = {str(p.relative_to(ROOT)): reads for p in sorted(BUILDER.rglob("*.py"))
             if (reads := foreign_reads(p.read_text()))}
    assert found == {}


def _class_lengths(path: pathlib.Path) -> dict[str, int]:
    return {c.name: c.end_lineno - c.lineno + 1 for c in _classes(ast.parse(path.read_text()))}


def test_builder_classes_stay_small():
    """No class of the builder over 350 lines; :class:`PipelineBuilder`, the composition
    root, at most 250."""
    lengths = {f"{p.relative_to(ROOT)}:{name}": n for p in sorted(BUILDER.rglob("*.py"))
               for name, n in _class_lengths(p).items()}
    assert {k: n for k, n in lengths.items() if n > MAX_BUILDER_CLASS_LINES} == {}
    assert lengths["ui/builder/_builder.py:PipelineBuilder"] <= MAX_PIPELINE_BUILDER_LINES
