"""Preview: results equal a real fit/transform on the same sample, the user's workflow is left
alone, only the first piece of the data is read, and the widget pages, toggles and shows errors
(ipywidgets' dummy comm: no browser)."""

from __future__ import annotations

import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError
from interactive_recsys.ui.preview._preview import NULL_IDS, OOV_IDS, Preview, PreviewModel
from tests.conftest import assert_frames_equal, make_criteo_frame, new_workflow
from tests.html_tables import legend_lines, read_tables


def build_graph() -> object:
    """The same two-branch graph, built anew each time."""
    cats = ["C1", "C2"] >> ops.Categorify(freq_threshold=3, num_buckets=2)
    tags = ["L1"] >> ops.Categorify()
    conts = ["I1", "F1"] >> ops.FillMissing(0) >> ops.Normalize()
    return cats + tags + conts + ["label"]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_criteo_frame(rows=600, seed=3)


@pytest.fixture(scope="module")
def dataset(frame: pd.DataFrame) -> irs.Dataset:
    return irs.Dataset(dd.from_pandas(frame, npartitions=3, sort=False))


def test_preview_equals_a_real_fit_transform_on_the_sample(
    tmp_path: object, frame: pd.DataFrame, dataset: irs.Dataset
) -> None:
    wf = irs.Workflow(build_graph())
    model = PreviewModel(wf, dataset, n_rows=150, page_size=20).run()
    sample = frame.iloc[:150].reset_index(drop=True)
    reference = new_workflow(build_graph(), tmp_path)
    expected = reference.fit(sample).transform(sample)
    assert_frames_equal(model.output, expected)
    assert_frames_equal(model.input, sample[["C1", "C2", "L1", "I1", "F1", "label"]])
    assert model.fitted_on_sample and model.fitted.fitted
    # the user's workflow is untouched: still unfitted, no statistics, no artifacts dir
    assert not wf.fitted and wf._states == {} and wf.artifacts_dir is None
    assert wf.input_schema is None


def test_a_fitted_workflow_is_used_as_is(
    tmp_path: object, frame: pd.DataFrame, dataset: irs.Dataset
) -> None:
    wf = new_workflow(build_graph(), tmp_path).fit(dataset)  # fitted on all 600 rows
    states = dict(wf._states)
    model = PreviewModel(wf, dataset, n_rows=50).run()
    assert not model.fitted_on_sample and model.fitted is wf
    assert_frames_equal(model.output, wf.transform(frame.iloc[:50].reset_index(drop=True)))
    assert wf._states == states


def test_summary_equals_pandas(frame: pd.DataFrame, dataset: irs.Dataset) -> None:
    model = PreviewModel(irs.Workflow(build_graph()), dataset, n_rows=200).run()
    out, summary = model.output, model.summary
    sample = frame.iloc[:200]
    # C1 ids: 1 null; 2..3 the two OOV buckets (values seen fewer than 3 times in the sample)
    counts = sample["C1"].value_counts()
    rare = sample["C1"].isin(counts[counts < 3].index)
    assert summary.loc["C1", NULL_IDS] == pytest.approx(100 * sample["C1"].isna().mean())
    assert summary.loc["C1", OOV_IDS] == pytest.approx(
        100 * rare.sum() / sample["C1"].notna().sum()
    )
    assert (
        summary.loc["C1", "min"] == out["C1"].min() and summary.loc["C1", "max"] == out["C1"].max()
    )
    # the list column: shares over the flattened ids
    flat = np.concatenate([np.asarray(v) for v in out["L1"] if isinstance(v, np.ndarray | list)])
    assert summary.loc["L1", NULL_IDS] == pytest.approx(100 * np.mean(flat == 1))
    assert summary.loc["L1", OOV_IDS] == 0
    assert summary.loc["L1", "dtype"] == "list<int64>"
    # continuous outputs: no nulls after FillMissing, range as pandas says
    assert summary.loc["I1", "nulls"] == 0
    assert summary.loc["I1", "max"] == pytest.approx(float(out["I1"].max()))
    assert pd.isna(summary.loc["I1", OOV_IDS])


def test_summary_shows_large_ids_in_full() -> None:
    """A 2-million-row vocabulary's largest id is read as the number it is, not 2.015e+06."""
    frame = pd.DataFrame({"item": np.arange(2_015_380, 2_015_400), "x": np.linspace(0, 1, 20)})
    wf = irs.Workflow((["x"] >> ops.Normalize()) + ["item"])
    view = Preview(wf, frame, n_rows=20)
    assert "2,015,399" in view.summary.value and "e+06" not in view.summary.value
    assert view.model.summary.loc["item", "max"] == 2_015_399


def test_summary_table_explains_and_draws_each_column(dataset: irs.Dataset) -> None:
    """The column summary: numbers right-aligned, a unit cell under each header, a legend line
    that says what "null ids" and "OOV" count and of what, and per column the bars of its
    sample: numpy's histogram for a number, pandas' most frequent values for encoded ids."""
    view = Preview(irs.Workflow(build_graph()), dataset, n_rows=300)
    out, summary = view.model.output, view.model.summary
    (table,) = read_tables(view.summary.value)
    names, units = table.head
    null_ids, oov = table.column("null ids"), table.column("OOV")
    assert units[null_ids].text == "% of lookups"
    assert units[oov].text == "% of non-null lookups"
    assert names[null_ids].attrs["title"].startswith("null ids (% of lookups): ")
    legend = legend_lines(view.summary.value)
    (null_line,) = [line for line in legend if line.startswith("null ids (% of lookups): ")]
    assert "reserved null id 1" in null_line
    (oov_line,) = [line for line in legend if line.startswith("OOV (% of non-null lookups): ")]
    assert "out-of-vocabulary id (2 to the first vocabulary id - 1" in oov_line
    assert len(legend) == len(names)  # every column explained
    rows = {row[0].text: row for row in table.body}
    c1 = rows["C1"]
    assert c1[oov].text == f"{summary.loc['C1', OOV_IDS]:.2f}"  # as the Embeddings tab
    for cell in c1[2:-1]:  # rows .. OOV: numbers, right-aligned in tabular figures
        assert "text-align:right" in cell.style and "tabular-nums" in cell.style
    # C1 (encoded ids): the five most frequent ids of the sample
    bars = c1[table.column("distribution")].bars
    counts = out["C1"].value_counts()
    assert [int(b["data-count"]) for b in bars] == counts.head(5).tolist()
    assert all(counts[int(b["title"].split(":")[0])] == int(b["data-count"]) for b in bars)
    # F1 (FillMissing, Normalize): numpy's histogram of the sample's values
    bars = rows["F1"][table.column("distribution")].bars
    counts, _ = np.histogram(out["F1"].to_numpy(dtype="float64"), bins=10)
    assert [int(b["data-count"]) for b in bars] == counts.tolist()
    # L1 (a list of encoded ids): the list elements counted
    flat = pd.Series(
        np.concatenate([np.asarray(v) for v in out["L1"] if isinstance(v, np.ndarray | list)])
    )
    bars = rows["L1"][table.column("distribution")].bars
    assert [int(b["data-count"]) for b in bars] == flat.value_counts().head(5).tolist()


def test_rows_align_numbers_right(dataset: irs.Dataset) -> None:
    view = Preview(irs.Workflow(build_graph()), dataset, n_rows=30)
    (table,) = read_tables(view.rows.value)
    header = [c.text for c in table.rows[0]]
    assert header == ["", *view.model.output.columns]
    first = dict(zip(header, table.body[0], strict=True))
    assert first["C1"].text == str(view.model.output["C1"].iloc[0])
    for name in ("C1", "I1", "F1", "label"):
        assert "text-align:right" in first[name].style, name
    assert "text-align:left" in first["L1"].style


def test_only_the_first_piece_is_read(frame: pd.DataFrame) -> None:
    pieces = [frame.iloc[:300], frame.iloc[300:]]

    def read(i: int) -> pd.DataFrame:
        if i > 0:
            raise RuntimeError("the preview read a second piece")
        return pieces[i].reset_index(drop=True)

    ds = irs.Dataset(dd.from_map(read, [0, 1], meta=frame.iloc[:0]))
    model = PreviewModel(irs.Workflow(build_graph()), ds, n_rows=100).run()
    assert len(model.output) == 100


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(
        ParameterError, match="'n_rows' parameter of Preview must be an integer >= 1. Got 0"
    ):
        PreviewModel(irs.Workflow(["c"]), pd.DataFrame({"c": [1]}), n_rows=0)
    with pytest.raises(ParameterError, match="needs an interactive_recsys.Workflow; got a list"):
        PreviewModel(["c"], pd.DataFrame({"c": [1]}))


# ---- the widget ------------------------------------------------------------------------------
def test_widget_pages_and_toggles(dataset: irs.Dataset) -> None:
    view = Preview(irs.Workflow(build_graph()), dataset, n_rows=45, page_size=20)
    assert view.error is None and view.message.layout.display == "none"
    assert "irs-preview-table" in view.rows.value and "irs-preview-output" in view.rows.value
    assert 'class="irs-preview-scroll" style="overflow-x:auto' in view.rows.value
    assert view.page_label.value == "page 1 / 3" and view.prev_button.disabled
    first = view.rows.value
    view.next_button.click()
    view.next_button.click()
    assert view.page_label.value == "page 3 / 3" and view.next_button.disabled
    assert view.rows.value != first
    view.next_button.click()  # clamped at the last page
    assert view.page_index == 2
    assert view.model.page(2).index.tolist() == list(range(40, 45))
    view.view.value = "input"
    assert "irs-preview-input" in view.rows.value and "irs-preview-output" not in view.rows.value
    view.view.value = "input | output"
    assert "irs-preview-input" in view.rows.value and "irs-preview-output" in view.rows.value
    view.prev_button.click()
    assert view.page_label.value == "page 2 / 3"
    assert "irs-preview-summary-table" in view.summary.value
    # a header row and a units row, the column names in the first column (no index row)
    (summary,) = read_tables(view.summary.value)
    assert "irs-preview-summary-table" in summary.classes and summary.head_rows == 2
    assert len(summary.body) == len(view.model.summary)
    assert summary.rows[0][0].text == "column"
    assert [row[0].text for row in summary.body] == view.model.summary.index.tolist()
    text = view._repr_mimebundle_()["text/plain"]
    assert text.startswith(
        "Preview: 45 input rows -> 45 output rows x 6 columns (workflow fitted on the sample;"
    )
    assert "page 2 / 3 of the output" in text


def test_widget_refresh_after_an_edit(dataset: irs.Dataset) -> None:
    view = Preview(irs.Workflow(["C1"] >> ops.Categorify()), dataset, n_rows=30)
    assert list(view.model.output.columns) == ["C1"]
    view.refresh(workflow=irs.Workflow(["C1", "C2"] >> ops.Categorify()))
    assert list(view.model.output.columns) == ["C1", "C2"] and view.page_index == 0
    view.refresh_button.click()
    assert view.error is None


def test_filtered_rows_are_flagged_side_by_side(dataset: irs.Dataset) -> None:
    wf = irs.Workflow(["I1", "C1"] >> ops.Filter("I1 >= 3"))
    view = Preview(wf, dataset, n_rows=40)
    view.view.value = "input | output"
    assert len(view.model.output) < 40 and not view.model.rows_align
    assert "do not line up" in view.rows.value


@pytest.mark.parametrize(
    ("workflow", "data", "message"),
    [
        (
            lambda: irs.Workflow(["C1"] >> ops.Categorify()),
            "/nonexistent/data.parquet",
            "does not exist",
        ),
        (lambda: irs.Workflow(["C1"] >> ops.Normalize()), None, "C1"),
        (lambda: irs.Workflow(["nope"] >> ops.Categorify()), None, "nope"),
    ],
)
def test_errors_are_shown_in_the_widget(
    workflow: object, data: object, message: str, dataset: irs.Dataset
) -> None:
    view = Preview(workflow(), data if data is not None else dataset)
    assert view.error is not None and message in view.error
    assert view.message.layout.display != "none" and message in view.message.value
    assert view.rows.value == "" and "Preview failed" in view.header.value
    assert repr(view).startswith("Preview failed: ")


def test_parquet_files_are_read_from_the_first_rows_of_the_first_file(
    tmp_path: object, frame: pd.DataFrame
) -> None:
    first, second = (os.path.join(str(tmp_path), f"part.{i}.parquet") for i in (0, 1))
    frame.iloc[:300].to_parquet(first, row_group_size=64)
    frame.iloc[300:].to_parquet(second)
    ds = irs.Dataset(str(tmp_path))
    os.remove(second)  # the preview must not need it
    model = PreviewModel(irs.Workflow(build_graph()), ds, n_rows=150).run()
    sample = frame.iloc[:150].reset_index(drop=True)
    assert_frames_equal(model.input, sample[["C1", "C2", "L1", "I1", "F1", "label"]])
    expected = new_workflow(build_graph(), str(tmp_path)).fit(sample).transform(sample)
    assert_frames_equal(model.output, expected)


@pytest.mark.gpu
def test_gpu_preview_equals_the_cpu_preview(tmp_path: object, frame: pd.DataFrame) -> None:
    path = os.path.join(str(tmp_path), "data.parquet")
    frame.to_parquet(path)
    runs = [
        PreviewModel(irs.Workflow(build_graph()), irs.Dataset(path, backend=b), n_rows=200).run()
        for b in ("cpu", "gpu")
    ]
    assert_frames_equal(runs[1].output, runs[0].output)
    pd.testing.assert_frame_equal(runs[1].summary, runs[0].summary)
