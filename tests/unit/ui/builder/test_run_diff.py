"""After a Run that refits a previous one, the model keeps what changed (``model.run_diff``)
and the Build tab shows it under the Run's status: against pandas, no browser."""

import html
import re

import numpy as np
import pandas as pd

from interactive_recsys.ui.builder import PipelineBuilder
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.views._run_diff import run_diff_html


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    return pd.DataFrame({"c": rng.choice([f"v{k}" for k in range(60)], 400,
                                         p=np.arange(60, 0, -1) / 1830),
                         "n": rng.normal(3.0, 1.0, 400)})


def _ids(values: pd.Series, threshold: int, buckets: int = 1) -> dict:
    """pandas: Categorify's ids (descending count, ties by value, after padding, null and
    the out-of-vocabulary ``buckets``)."""
    counts = values.value_counts()
    counts = counts[counts >= max(threshold, 1)]
    return {v: 2 + buckets + i for i, (v, _) in enumerate(sorted(counts.items(),
                                                          key=lambda kv: (-kv[1], kv[0])))}


def test_runs_after_edits_show_the_values_dropped_and_the_ids_moved():
    frame = _frame()
    m = BuilderModel(frame)
    m.add_step(["c"], "Categorify")
    m.run()
    m.wait_run(120)
    assert m.run_diff is None  # the first Run: nothing to compare with
    m.update_step(0, 0, params={"freq_threshold": 8})
    m.run()
    m.wait_run(120)
    before, after = _ids(frame["c"], 0), _ids(frame["c"], 8)
    dropped = set(before) - set(after)
    assert dropped and all(before[v] == after[v] for v in after)  # the tail goes
    (row,) = m.run_diff.changed.to_dict("records")
    assert (row["column"], row["new_values"], row["dropped_values"], row["changed_ids"],
            row["new_share"]) == ("c", 0, len(dropped), 0, 0.0)
    m.update_step(0, 0, params={"freq_threshold": 8, "num_buckets": 4})
    m.run()
    m.wait_run(120)
    hashed = _ids(frame["c"], 8, buckets=4)
    moved = sum(after[v] != hashed[v] for v in hashed)
    assert moved == len(hashed)  # 3 more out-of-vocabulary rows: every id moves
    (row,) = m.run_diff.changed.to_dict("records")
    assert (row["new_values"], row["dropped_values"], row["changed_ids"]) == (0, 0, moved)
    page = html.unescape(re.sub(r"<[^>]+>", " ", run_diff_html(m.run_diff)))
    assert "Changes since the previous Run: 1 of 1 column(s)" in page
    assert re.search(rf"\bc\s+Categorify\s+both\s+{len(after)}\s+{len(hashed)}\s+0\s+"
                     rf"0\s+{moved}\b", page), page
    m.run()  # nothing edited: every step reused, nothing changed
    m.wait_run(120)
    assert m.run_diff.changed.empty
    assert "no change in the 1 column(s)" in run_diff_html(m.run_diff)


def test_the_build_tab_shows_it_under_the_status_line():
    frame = _frame()
    builder = PipelineBuilder(frame)
    model = builder.model
    model.add_step(["c"], "Categorify")
    model.add_step(["n"], "Normalize")
    builder.buttons["run"].click()
    model.wait_run(120)
    assert builder.run_panel.diff_view.value == ""
    model.update_step(0, 0, params={"freq_threshold": 8})
    builder.buttons["run"].click()
    model.wait_run(120)
    shown = builder.run_panel.diff_view.value
    assert shown == run_diff_html(model.run_diff) and "Changes since the previous Run" in shown
    root = builder.run_panel.root.children
    assert root.index(builder.run_panel.diff_view) == root.index(builder.run_panel.status) + 1
    assert model.run_diff.table["column"].tolist() == ["c", "n"]  # n: reused, unchanged
    assert model.run_diff.changed["column"].tolist() == ["c"]
