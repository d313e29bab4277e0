"""The preview says what it computed on: the sample size and the dataset's row count (real
parquet files; the count is read back from their footers), or an unknown count (a CSV file)."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.preview._preview import PreviewModel
from interactive_recsys.ui.studio._studio import find_button
from tests.conftest import make_criteo_frame


def write_parts(folder, parts: int = 3, rows: int = 400) -> int:
    """``parts`` parquet files of ``rows`` rows; returns the rows their footers count."""
    folder.mkdir()
    for i in range(parts):
        make_criteo_frame(rows, seed=i).to_parquet(folder / f"part.{i}.parquet", index=False)
    return sum(pq.ParquetFile(p).metadata.num_rows for p in folder.glob("*.parquet"))


def test_builder_preview_names_sample_and_total(tmp_path):
    total = write_parts(tmp_path / "data")
    assert total == 1200
    b = PipelineBuilder(str(tmp_path / "data"), preview_rows=50)
    b.select_columns(["C1", "C2"])
    find_button(b, "irs-op-Categorify").click()
    find_button(b, "irs-btn-preview").click()
    assert len(b.last_preview.input) == 50 and b.last_preview.total_rows == total
    assert "Preview computed on 50 of 1,200 rows" in b.preview_html.value
    assert "computed on 50 of 1,200 rows" in b.feedback.areas["run"].value


def test_preview_model_total_known_unknown_and_whole(tmp_path):
    total = write_parts(tmp_path / "data", parts=2, rows=300)
    wf = irs.Workflow(["C1"] >> ops.Categorify())
    model = PreviewModel(wf, str(tmp_path / "data"), n_rows=100).run()
    assert model.total_rows == total == 600
    assert "computed on 100 of 600 rows" in model.describe()
    csv = tmp_path / "data.csv"  # a CSV file's row count is not known without reading it
    make_criteo_frame(80).to_csv(csv, index=False)
    model = PreviewModel(wf, str(csv), n_rows=30).run()
    assert model.total_rows is None
    assert "computed on 30 of an unknown number of rows" in model.describe()
    model = PreviewModel(wf, make_criteo_frame(40), n_rows=100).run()  # fewer rows than asked
    assert "computed on all 40 rows" in model.describe()


def test_builder_preview_after_run_shows_the_ids_the_run_wrote(tmp_path):
    """The first rows hold rare values, the rest one frequent value: a fit on the sample
    numbers them otherwise than the Run's fit on all rows. After Run, Preview shows the
    Run's ids (those written); after an edit it fits on the sample again."""
    data = tmp_path / "data"
    data.mkdir()
    head = pd.DataFrame({"item": ["r1", "r2", "r3", "r1"] * 5})
    tail = pd.DataFrame({"item": ["top"] * 900 + ["r3"] * 300 + ["r2"] * 100})
    head.to_parquet(data / "part.0.parquet", index=False)
    tail.to_parquet(data / "part.1.parquet", index=False)
    b = PipelineBuilder(str(data), preview_rows=20, output=str(tmp_path / "out"))
    b.select_columns(["item"])
    find_button(b, "irs-op-Categorify").click()

    find_button(b, "irs-btn-preview").click()
    on_sample = b.last_preview.output["item"].tolist()
    assert b.last_preview.fitted_on_sample

    job = b.model.run(str(tmp_path / "out"))
    assert b.model.wait_run(120) is job and job.status == "finished"
    find_button(b, "irs-btn-preview").click()
    written = pd.read_parquet(tmp_path / "out")["item"].head(20).tolist()
    after = b.last_preview.output["item"].tolist()
    assert not b.last_preview.fitted_on_sample and after == written
    assert on_sample != written  # the sample's frequencies number r1, r2, r3 otherwise
    assert "with the fitted workflow (its vocabularies, not a refit" in b.feedback.areas["run"].value

    b.model.add_step(["item"], "FillMissing")  # an edit: the Run's fit no longer applies
    find_button(b, "irs-btn-preview").click()
    assert b.last_preview.fitted_on_sample
    assert "fitted and transformed 20 sample rows" in b.feedback.areas["run"].value
