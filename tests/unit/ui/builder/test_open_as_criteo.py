"""Raw Criteo TSV in the builder's dataset row: Open refuses it and offers "Open as Criteo",
which reads it with read_criteo (column names and types of the Criteo layout); other files
never get the button (ipywidgets' dummy comm, real files)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.studio._studio import find_button


def write_raw_criteo(path, rows: int = 60, seed: int = 0) -> list[list[str]]:
    """``rows`` lines of label, 13 counts (some empty) and 26 8-digit hex ids, no header."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(rows):
        label = [str(rng.integers(0, 2))]
        counts = ["" if rng.random() < 0.2 else str(rng.integers(0, 50)) for _ in range(13)]
        ids = [f"{rng.integers(0, 16**8):08x}" for _ in range(26)]
        lines.append(label + counts + ids)
    path.write_text("".join("\t".join(line) + "\n" for line in lines))
    return lines


def test_raw_criteo_is_offered_and_opened_as_criteo(tmp_path):
    path = tmp_path / "day_0"
    lines = write_raw_criteo(path)
    b = PipelineBuilder(str(path))
    message = b.feedback.areas["dataset"].value
    assert b.model is None and "raw Criteo" in message and "Open as Criteo" in message
    button = find_button(b, "irs-btn-open-criteo")
    assert button.layout.display != "none"
    button.click()
    assert b.model is not None and button.layout.display == "none"
    assert "Opened" in b.feedback.areas["dataset"].value
    names = b.model.schema.names
    assert names == ["label"] + [f"I{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)]
    frame = b.model.dataset.to_ddf().compute()
    assert len(frame) == len(lines)
    assert frame["C1"].tolist() == [line[14] for line in lines]
    assert frame["label"].tolist() == [int(line[0]) for line in lines]
    assert frame["I1"].isna().tolist() == [line[1] == "" for line in lines]


def test_other_files_get_no_criteo_button(tmp_path):
    path = tmp_path / "clicks.csv"
    pd.DataFrame({"user": ["a", "b"], "clicks": [1, 2]}).to_csv(path, index=False)
    b = PipelineBuilder(str(tmp_path / "missing.csv"))  # an error, but not raw Criteo
    assert b.model is None and b.criteo_button.layout.display == "none"
    b.path_text.value = str(path)
    find_button(b, "irs-btn-open").click()
    assert b.model is not None and b.criteo_button.layout.display == "none"


def test_a_glob_of_day_files_opens_every_day(tmp_path):
    days = [write_raw_criteo(tmp_path / f"day_{i}", rows=20 + 10 * i, seed=i) for i in range(2)]
    b = PipelineBuilder(str(tmp_path / "day_*"))
    assert b.model is None
    find_button(b, "irs-btn-open-criteo").click()
    frame = b.model.dataset.to_ddf().compute()
    assert sorted(frame["C26"]) == sorted(line[39] for day in days for line in day)
