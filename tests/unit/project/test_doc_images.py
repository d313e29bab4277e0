"""The tutorials' widgets are pictures on the docs site, made by ``python -m tools.doc_images``
from the notebooks as they are: every widget a notebook shows has a picture, and each picture
is newer than what draws it (the notebook's code, ``widgets/``, ``interactive_recsys/ui``).
The built pages show them: ``test_docs.py::test_tutorial_pages_show_the_widgets_pictures``."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from tools import doc_images

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import irs_tutorials  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
WIDGET = {"output_type": "display_data", "metadata": {},
          "data": {doc_images.WIDGET_MIME: {"model_id": "m1", "version_major": 2,
                                            "version_minor": 0},
                   "text/plain": "Studio(...)"}}


def notebook(code: str, outputs: list) -> dict:
    return {"cells": [{"cell_type": "code", "id": "c1", "source": [code], "outputs": outputs,
                       "metadata": {}, "execution_count": 1}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize("path", doc_images.widget_notebooks(), ids=lambda p: p.stem)
def test_every_widget_of_a_tutorial_has_a_current_picture(path: Path) -> None:
    redo = f"run `{doc_images.COMMAND} {path.stem[:2]}` (JupyterLab + Chromium, a few minutes)"
    entry = doc_images.read_manifest()["notebooks"].get(path.name)
    assert entry is not None, f"{path.name} shows widgets but has no pictures: {redo}"
    assert sorted(entry["images"]) == sorted(doc_images.widget_cells(path)), redo
    for name in entry["images"].values():
        picture = doc_images.OUT / name
        assert picture.read_bytes()[:8] == PNG, name
        assert picture.stat().st_size > 5_000, f"{name} is nearly empty: {redo}"
    assert entry["fingerprint"] == doc_images.fingerprint(path), \
        f"{path.name}'s widgets changed since their pictures were made: {redo}"


def test_no_picture_is_left_from_a_widget_that_is_gone() -> None:
    listed = {name for entry in doc_images.read_manifest()["notebooks"].values()
              for name in entry["images"].values()}
    assert {p.name for p in doc_images.OUT.glob("*.png")} == listed


def test_the_fingerprint_follows_the_code_not_the_outputs(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(notebook("studio", [WIDGET])))
    before = doc_images.fingerprint(path)
    path.write_text(json.dumps(notebook("studio", [])))
    assert doc_images.fingerprint(path) == before
    path.write_text(json.dumps(notebook("studio.builder", [WIDGET])))
    assert doc_images.fingerprint(path) != before
    assert doc_images.widget_cells(path) == ["c1"]


def test_the_docs_page_shows_the_picture_in_place_of_the_widget(tmp_path: Path) -> None:
    shot = tmp_path / "n-c1.png"
    shot.write_bytes(PNG + b"pixels")
    text = json.dumps(notebook("studio", [WIDGET]))
    output = json.loads(irs_tutorials.static_copy(text, {"c1": shot}))["cells"][0]["outputs"][0]
    assert base64.b64decode(output["data"]["image/png"]) == PNG + b"pixels"
    assert doc_images.WIDGET_MIME not in output["data"]
    assert output["data"]["text/plain"] == "Studio(...)"  # for readers without images
    untouched = json.loads(irs_tutorials.static_copy(text, {}))["cells"][0]["outputs"][0]
    assert doc_images.WIDGET_MIME in untouched["data"]
