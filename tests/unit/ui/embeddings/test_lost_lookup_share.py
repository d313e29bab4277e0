"""The lookups a column loses, one number in the Build tab and the Embeddings tab: the share of
its non-null lookups sent out of vocabulary, said as such, equal to pandas' count."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

from tests.html_tables import read_tables

THRESHOLD = 5


def _frame(rows: int = 20_000) -> pd.DataFrame:
    """A long-tailed column with 10% nulls: the share of all rows and the share of the
    non-null ones differ in the second decimal."""
    rng = np.random.default_rng(3)
    ids = (rng.zipf(1.3, rows) % 5000).astype(str).astype(object)
    ids[rng.random(rows) < 0.10] = None
    return pd.DataFrame({"C3": pd.array(ids, dtype="string"), "label": rng.integers(0, 2, rows)})


def _pandas_share(frame: pd.DataFrame) -> float:
    """Independent: non-null rows whose value occurs fewer than ``THRESHOLD`` times."""
    counts = frame["C3"].value_counts()  # nulls left out
    return float(counts[counts < THRESHOLD].sum() / frame["C3"].notna().sum())


def _embeddings_cell(page: str, table: str) -> tuple[str, str]:
    """The header (name and unit) and the value of the OOV column of ``table``'s row in the
    Embeddings tab's table."""
    (main,) = [t for t in read_tables(page) if "irs-embedding-table" in t.classes]
    names, units = main.head
    i = main.column("OOV")
    (row,) = [r for r in main.body if r[0].text == table]
    return f"{names[i].text} {units[i].text}", row[i].text


def test_build_and_embeddings_tabs_show_one_share_of_non_null_lookups(tmp_path):
    from interactive_recsys.ui.builder._builder import PipelineBuilder
    from interactive_recsys.ui.studio._studio import Studio

    frame = _frame()
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    expected = _pandas_share(frame)
    everything = frame["C3"].value_counts()
    assert f"{expected:.2%}" != f"{everything[everything < THRESHOLD].sum() / len(frame):.2%}"

    builder = PipelineBuilder(str(path), output="")
    model = builder.model
    model.add_step(["C3"], "Categorify", {"freq_threshold": THRESHOLD})
    builder.buttons["run"].click()
    assert model.wait_run(120).status == "finished"
    # the Build tab: the over-budget alert of the Run
    build = re.search(
        r"C3 lost ([\d.]+)% of its non-null lookups", html.unescape(builder.oov_alert.value)
    )
    assert build is not None, builder.oov_alert.value
    # the Embeddings tab of the same fitted workflow
    studio = Studio(str(path), workflow=model.fitted_workflow)
    try:
        assert studio.builder.model.fitted_workflow is model.fitted_workflow
        head, shown = _embeddings_cell(studio.embeddings.summary.value, "C3")
    finally:
        studio.close()
    assert head == "OOV % of non-null lookups"
    assert build.group(1) == shown == f"{100 * expected:.2f}"
    (warning,) = model.oov_warnings
    assert warning.lost == pytest.approx(expected, abs=1e-12)
    assert studio.embeddings.report.tables["C3"].oov_share == pytest.approx(expected, abs=1e-12)
