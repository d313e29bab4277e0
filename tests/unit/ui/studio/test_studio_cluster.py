"""The Studio's Cluster tab over a cluster's life: live dashboard, the cluster closing, a new
cluster started in a cell picked up, Run working again (ipywidgets' dummy comm)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd

import interactive_recsys as irs
from interactive_recsys.ui.studio._studio import TITLES, Studio
from tests.conftest import make_criteo_frame

CLUSTER = TITLES.index("Cluster")


def _wait(condition: Callable[[], bool], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _categorify_all(studio: Studio, frame: pd.DataFrame) -> None:
    b = studio.builder
    b.select_columns([c for c in frame.columns if c.startswith("C")][:3])
    b.choose_operator("Categorify")
    b.add_button.click()


def test_closed_cluster_start_again_and_a_new_cluster_is_picked_up() -> None:
    frame = make_criteo_frame(200)
    first = irs.start_cluster(1, memory_limit="500MB", dashboard=False, gpu=False)
    studio = Studio(frame)
    second = None
    try:
        studio.tabs.selected_index = CLUSTER
        dash = studio.dashboard
        assert dash is not None and dash.monitor.client is first
        assert studio.cluster_tab.children == (dash,)

        first.close()
        first.cluster.close()
        # the closed client is detected: the dashboard freezes, Start is offered again
        assert _wait(lambda: dash.closed and studio.dashboard is None)
        kids = studio.cluster_tab.children
        assert "irs-studio-no-cluster" in kids[0]._dom_classes
        assert "closed" in kids[0].value
        assert kids[1].description == "Start a local cluster" and not kids[1].disabled
        assert kids[-1] is dash  # the last picture stays below
        assert "the Dask cluster closed" in dash.status.value
        assert "live" not in dash.status.value

        # a cluster started in a cell is picked up without any click
        second = irs.start_cluster(1, memory_limit="500MB", dashboard=False, gpu=False)
        assert _wait(lambda: studio.dashboard is not None)
        assert studio.dashboard.monitor.client is second
        assert studio.cluster_tab.children == (studio.dashboard,)
        assert dash.comm is None  # the old, frozen one disposed of

        # and Run works on it
        _categorify_all(studio, frame)
        studio.run_button.click()
        job = studio.builder.model.wait_run(timeout=60)
        assert job.status == "finished", job.exception()
        assert "cancelled" not in studio.builder.message
        assert job._client is second
    finally:
        studio.close()
        if second is not None:
            second.close()
            second.cluster.close()


def test_start_button_shows_a_busy_state_while_the_cluster_starts(monkeypatch) -> None:
    import interactive_recsys.runtime.cluster as cluster

    studio = Studio(make_criteo_frame(50))
    seen = []

    def fake_start(n: int) -> None:  # what the button shows while starting
        start, busy = studio.cluster_tab.children[1:3]
        seen.append((start.disabled, start.description, busy.value))
        raise RuntimeError("no cluster in this test")

    monkeypatch.setattr(cluster, "start_cluster", fake_start)
    try:
        studio.tabs.selected_index = CLUSTER
        studio.cluster_tab.children[1].click()
        assert seen == [(True, "Starting a local cluster…",
                         "<i>starting 2 workers, a few seconds…</i>")]
        start, busy = studio.cluster_tab.children[1:3]
        assert (start.disabled, start.description, busy.value) == (
            False, "Start a local cluster", "")
        assert "no cluster in this test" in studio.message.value  # the error is shown
    finally:
        studio.close()


def test_the_cluster_tab_is_filled_once_when_two_threads_show_it(monkeypatch) -> None:
    """The watcher thread and the Start button (kernel thread) may both find the new
    cluster: one dashboard is made, and the tab shows it."""
    import threading

    import interactive_recsys.ui.dashboard as dashboard

    made = []

    class SlowDashboard(dashboard.Dashboard):
        def __init__(self, *args: object, **kwargs: object) -> None:
            made.append((threading.current_thread(), self))
            time.sleep(0.3)  # widens the window in which a second caller would make another
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(dashboard, "Dashboard", SlowDashboard)
    client = irs.start_cluster(1, memory_limit="500MB", dashboard=False, gpu=False)
    studio = Studio(make_criteo_frame(50), client=client)
    try:
        callers = [threading.Thread(target=studio.show_cluster) for _ in range(2)]
        for t in callers:
            t.start()
        for t in callers:
            t.join(30)
        # only the two callers' dashboards count: a Studio left open by an earlier test has a
        # watcher thread that may show this new cluster in its own tab
        ours = [d for thread, d in made if thread in callers]
        assert len(ours) == 1
        assert studio.cluster_tab.children == (ours[0],) and studio.dashboard is ours[0]
    finally:
        studio.close()
        client.close()
        client.cluster.close()


def test_a_failed_start_keeps_watching_for_a_cluster_started_in_a_cell(monkeypatch) -> None:
    import interactive_recsys.runtime.cluster as cluster

    studio = Studio(make_criteo_frame(50))
    real_start, second = cluster.start_cluster, None

    def failing_start(n: int) -> None:
        raise RuntimeError("no cluster in this test")

    monkeypatch.setattr(cluster, "start_cluster", failing_start)
    try:
        studio.tabs.selected_index = CLUSTER
        studio.cluster_tab.children[1].click()
        assert "no cluster in this test" in studio.message.value
        second = real_start(1, memory_limit="500MB", dashboard=False, gpu=False)
        assert _wait(lambda: studio.dashboard is not None)  # the watcher still runs
        assert studio.dashboard.monitor.client is second
    finally:
        studio.close()
        if second is not None:
            second.close()
            second.cluster.close()
