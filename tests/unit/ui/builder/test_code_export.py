"""Export code's Copy and Insert buttons, its code area, and ``model.export_code()`` (the
same text as the area), with ipywidgets' dummy comm; the clicks in a browser are in
``tests/browser/test_export_browser.py``."""

from __future__ import annotations

import IPython
import pytest

from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder.views._code_export import (
    LINE_PX,
    MAX_LINES,
    CodeExport,
    code_height,
    insert_code_cell,
)
from interactive_recsys.ui.studio._studio import Studio, find_button
from tests.conftest import make_criteo_frame


@pytest.fixture
def data_dir(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    make_criteo_frame(100).to_parquet(folder / "part.parquet")
    return folder


def exported(b: PipelineBuilder) -> str:
    b.select_columns(["C1", "C2"])
    find_button(b, "irs-op-Categorify").click()
    find_button(b, "irs-btn-export").click()
    return b.code.value


def test_export_shows_the_buttons_with_the_area_text(data_dir, tmp_path):
    b = PipelineBuilder(str(data_dir), autosave=False)
    assert b.code_bar.layout.display == "none" and b.code_bar in b.children
    assert b.children.index(b.code_bar) + 1 == b.children.index(b.code)
    b.file_text.value = str(tmp_path / "wf")
    b.output_text.value = str(tmp_path / "out")
    code = exported(b)
    assert b.code_bar.layout.display is None and b.code_bar.code == code
    # the fields' folders are in the code, and export_code() without arguments agrees
    assert repr(str(tmp_path / "wf")) in code and repr(str(tmp_path / "out")) in code
    assert b.model.export_code() == code
    assert b.model.export_code("other/") != code  # arguments still win


def test_export_code_defaults_before_any_export(data_dir):
    b = PipelineBuilder(str(data_dir), autosave=False)
    assert b.model.export_places == ("my_workflow/", None)
    assert exported(b) == b.model.export_code()
    assert "'my_workflow/'" in b.code.value


def test_the_area_fits_its_lines_up_to_a_maximum(data_dir):
    b = PipelineBuilder(str(data_dir), autosave=False)
    code = exported(b)
    lines = code.count("\n") + 1
    assert b.code.layout.height == code_height(code)
    assert code_height("x\n" * 9 + "x") == f"{10 * LINE_PX + 22}px"
    assert code_height("x\n" * 500) == code_height("x\n" * (MAX_LINES + 5))
    assert int(code_height(code)[:-2]) == min(lines, MAX_LINES) * LINE_PX + 22


def test_insert_looks_for_the_builder_and_the_studio_cells(data_dir):
    b = PipelineBuilder(str(data_dir), autosave=False)
    assert b.code_bar.hosts == [b.model_id]
    studio = Studio(str(data_dir))
    assert studio.builder.code_bar.hosts == [studio.builder.model_id, studio.model_id]
    studio.close()
    bar = CodeExport()
    bar.add_host("x")
    bar.add_host("x")
    assert bar.hosts == ["x"]


class Shell:
    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    def set_next_input(self, text: str, replace: bool = False) -> None:
        self.calls.append((text, replace))


def test_insert_code_cell_asks_ipython_for_the_next_input(data_dir, monkeypatch):
    shell = Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    b = PipelineBuilder(str(data_dir), autosave=False)
    code = exported(b)
    b.insert_code_cell()
    assert shell.calls == [(code, False)]


def test_insert_code_cell_outside_ipython(monkeypatch):
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    with pytest.raises(RuntimeError, match="needs IPython"):
        insert_code_cell("x = 1")
