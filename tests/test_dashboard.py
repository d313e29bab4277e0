"""Dashboard widget without a browser (ipywidgets' dummy comm), on the session cluster."""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterator

import dask.dataframe as dd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.monitor import Monitor
from interactive_recsys.ui.dashboard import Dashboard
from tests.conftest import make_criteo_frame


@pytest.fixture
def dash(client: object) -> Iterator[Dashboard]:
    """A dashboard over a monitor that samples only when a test says so."""
    monitor = Monitor(client, start=False)
    board = Dashboard(monitor)
    yield board
    board.close()
    monitor.close()


def _fit(tmp_path: object, parts: int = 4) -> irs.Workflow:
    path = os.path.join(str(tmp_path), "in")
    dd.from_pandas(make_criteo_frame(1000), npartitions=parts).to_parquet(path)
    node = (["C1"] >> ops.Categorify() >> ops.Normalize()) + (["F1"] >> ops.FillMissing(0))
    return irs.Workflow(node, artifacts_dir=os.path.join(str(tmp_path), "a")).fit(
        irs.Dataset(path))


def test_sources_follow_the_monitor_samples(dash: Dashboard, tmp_path: object) -> None:
    names = {s.name for s in dash.sources.values()}
    assert names == {"irs-memory", "irs-spill", "irs-utilization", "irs-tasks"}
    assert dash.sources["memory"].data["worker"] == []
    sample = dash.monitor.sample()
    memory = dash.sources["memory"].data
    workers = sorted(sample["workers"].values(), key=lambda w: str(w["name"]))
    assert memory["worker"] == [f"worker {w['name']}" for w in workers]
    assert memory["managed"] == [w["managed"] for w in workers]
    assert memory["unmanaged"] == [w["unmanaged"] for w in workers]
    assert memory["limit"] == [1_000_000_000] * 2
    assert list(dash.figures["memory"].y_range.factors) == memory["worker"]
    assert len(dash.sources["spill"].data["time"]) == 1

    _fit(tmp_path)
    dash.monitor.sample()
    tasks = dash.sources["tasks"].data
    assert len(tasks["start"]) > 8  # this fit's tasks (the stream is read incrementally)
    assert {"categorify", "normalize", "fit"} <= set(tasks["group"])
    assert all(a <= b for a, b in zip(tasks["start"], tasks["stop"], strict=True))
    colours = {}
    for group, colour in zip(tasks["group"], tasks["color"], strict=True):
        assert colours.setdefault(group, colour) == colour  # one colour per operator
    assert len(set(colours.values())) == len(colours)
    assert set(tasks["worker"]) <= set(memory["worker"])
    spill = dash.sources["spill"].data
    assert len(spill["time"]) == 2 and spill["time"][0] < spill["time"][1]
    assert spill["disk"] == [0, 0]
    assert "gpu" not in dash.figures and "device" not in spill  # no GPU: absent, not zero
    assert all(0 <= c <= 100 * os.cpu_count() for c in dash.sources["utilization"].data["cpu"]
               if not math.isnan(c))


def test_progress_bars_reach_100_percent(dash: Dashboard, tmp_path: object) -> None:
    dash.monitor.sample()
    job = _fit(tmp_path).fit  # a second fit, in the background
    result = job(irs.Dataset(os.path.join(str(tmp_path), "in")), background=True)
    result.result(timeout=60)
    dash.monitor.sample()
    assert dash.progress()["fit 1/2"] == 1.0 and dash.progress()["fit 2/2"] == 1.0
    rows = dash.progress_box.children
    labels = [row.children[2].value for row in rows[-2:]]
    assert labels[0].startswith("fit 1/2 (fit): ") and labels[0].endswith("finished")
    assert all(row.children[1].bar_style == "success" for row in rows)
    assert [row.children[1].value for row in rows[-2:]] == [1.0, 1.0]


def test_pause_resume_and_errors_in_the_log(dash: Dashboard) -> None:
    dash.monitor.sample()
    dash.pause_button.value = True  # what a click does
    assert dash.paused and dash.pause_button.description == "Resume"
    dash.monitor.sample()
    assert len(dash.sources["spill"].data["time"]) == 1  # paused: not drawn
    dash.pause_button.value = False
    dash.monitor.sample()
    assert not dash.paused and len(dash.sources["spill"].data["time"]) == 2

    dash._on_sample(dash.monitor, {"time": 0.0}, [])  # a broken sample: logged, not raised
    [entry] = dash.log_area.outputs
    assert "KeyError" in entry["text"] and "workers" in entry["text"]


def test_close_stops_the_owned_monitor_thread(client: object) -> None:
    board = Dashboard(client, interval_ms=100)
    assert board.monitor.running
    assert repr(board) == "Dashboard(2 workers, no GPU, every 100 ms)"
    board.close_button.click()
    assert not board.monitor.running
    assert not [t for t in threading.enumerate() if t.name == "irs-monitor"]
    assert board.plots.comm is None  # widgets closed


def test_save_html_is_standalone_and_atomic(dash: Dashboard, tmp_path: object) -> None:
    dash.monitor.sample()
    path = dash.save_html(tmp_path / "run.html")  # type: ignore[operator]
    assert os.listdir(tmp_path) == ["run.html"]  # no temporary file left
    text = open(path, encoding="utf-8").read()
    assert "irs-memory" in text and "irs-tasks" in text  # the named sources, with data
    assert "cdn.bokeh.org" not in text and "Bokeh" in text  # BokehJS inline: opens offline
    assert "worker 0" in text


def test_plots_go_live_only_once_displayed(dash: Dashboard) -> None:
    sent: list[dict] = []
    dash.plots.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    dash.monitor.sample()
    assert sent == []  # not displayed yet: no patch a late view could half-read
    dash._repr_mimebundle_()
    dash._displayed_at -= 10  # type: ignore[operator]  # the view had time to appear
    dash.monitor.sample()  # sends the plots whole ...
    bundle = json.dumps(dash.plots.render_bundle)
    assert "worker 1" in bundle and "irs-memory" in bundle
    assert sent == []
    dash.monitor.sample()  # ... then streams patches
    assert sent and all(m["msg"] == "patch" for m in sent)


def test_updates_create_no_new_widgets(dash: Dashboard, tmp_path: object) -> None:
    from ipywidgets.widgets.widget import _instances  # every open widget

    _fit(tmp_path)
    dash.monitor.sample()
    before = len(_instances)
    for _ in range(3):
        dash.monitor.sample()
    assert len(_instances) == before  # progress rows are made once per phase


@pytest.mark.gpu
def test_gpu_memory_figure_with_device_limits() -> None:
    client = irs.start_cluster(gpu=True, dashboard=False, device_memory_limit=0.5)
    try:
        board = Dashboard(Monitor(client, start=False))
        assert "gpu" in board.figures and "device" in board.sources["spill"].data
        board.monitor.sample()
        gpu = board.sources["gpu-memory"].data
        assert gpu["device"] and all(0 < u <= t for u, t in zip(gpu["used"], gpu["total"],
                                                                  strict=True))
        assert all(0 < limit < t for limit, t in zip(gpu["limit"], gpu["total"], strict=True))
        assert list(board.figures["gpu"].y_range.factors) == gpu["device"]
        assert "gpu" in board.sources["utilization"].data
        board.close()
        board.monitor.close()
    finally:
        client.close()
        client.cluster.close()
