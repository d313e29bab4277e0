"""pyproject's package list is the package's folders: a new subpackage cannot be left out of
the wheel (``packages.find`` cannot list ``interactive_recsys._widgets``, which is mapped from
the top-level ``widgets/`` folder, so the list is written out and checked here)."""

from __future__ import annotations

import pathlib
import tomllib

import interactive_recsys

ROOT = pathlib.Path(interactive_recsys.__file__).parent
PYPROJECT = ROOT.parent / "pyproject.toml"


def listed_packages(text: str) -> set[str]:
    return set(tomllib.loads(text)["tool"]["setuptools"]["packages"])


def package_folders(root: pathlib.Path) -> set[str]:
    return {".".join(p.parent.relative_to(root.parent).parts) for p in root.rglob("__init__.py")}


def test_the_check_sees_a_missing_package(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    listed = listed_packages('[tool.setuptools]\npackages = ["pkg"]\n')
    assert package_folders(tmp_path / "pkg") - listed == {"pkg.sub"}


def test_every_package_folder_is_listed_in_pyproject():
    listed = listed_packages(PYPROJECT.read_text())
    assert package_folders(ROOT) == listed - {"interactive_recsys._widgets"}
    mapped = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-dir"]
    assert (ROOT.parent / mapped["interactive_recsys._widgets"] / "dag.js").is_file()


def test_the_repository_folders_beside_the_package_are_not_shipped():
    """``tools/`` (the browser driver), ``benchmarks/`` and ``tests/`` are importable from a
    checkout, never from the wheel: no listed package is one of them or inside them."""
    listed = listed_packages(PYPROJECT.read_text())
    for folder in ("tools", "benchmarks", "tests"):
        assert (ROOT.parent / folder / "__init__.py").is_file() or folder == "tests"
        assert not {p for p in listed if p == folder or p.startswith(f"{folder}.")}, folder
    assert not (ROOT / "tools").exists()


def test_the_data_files_the_package_reads_are_shipped():
    """``irs criteo --plan`` reads its model from a JSON file beside its module."""
    import fnmatch

    data = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]
    model = ROOT / "datasets" / "_criteo_plan_model.json"
    assert model.is_file()
    assert any(fnmatch.fnmatch(model.name, p) for p in data["interactive_recsys.datasets"])
