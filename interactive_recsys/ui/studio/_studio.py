"""Studio: the builder, the preview, the embedding statistics and the cluster in one widget.

Tabs: **Build** (:class:`.PipelineBuilder`) | **Preview** (:class:`.Preview` of the workflow
being built, refreshed by the builder's Preview and Run buttons) | **Embeddings**
(:class:`.EmbeddingView` of the fitted workflow, after Run) | **Cluster**
(:class:`.Dashboard` of the active Dask client, created when the tab is first opened).

>>> import pandas as pd
>>> studio = Studio(pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, None, 3.0]}))
>>> studio.titles
('Build', 'Preview', 'Embeddings', 'Cluster')
>>> b = studio.builder
>>> b.select_columns(["c"]); b.choose_operator("Categorify"); b.add_button.click()
>>> studio.preview_button.click()
>>> studio.preview.model.output["c"].tolist()
[3, 4, 3]
"""

from __future__ import annotations

import html
import os
import threading
import traceback
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from interactive_recsys.redact import redact_text
from interactive_recsys.runtime import cluster
from interactive_recsys.runtime.jobs import active_client
from interactive_recsys.stats._embedding_report import EmbeddingReport
from interactive_recsys.ui.builder._builder import PipelineBuilder

TITLES = ("Build", "Preview", "Embeddings", "Cluster")
#: Seconds between looks for a running cluster while the Cluster tab has none.
WATCH_SECONDS = 1.0


def _note(text: str, css: str) -> w.HTML:
    note = w.HTML(f"<i>{html.escape(text)}</i>")
    note.add_class(css)
    return note


class Studio(w.VBox):
    """One tabbed widget: Build | Preview | Embeddings | Cluster.

    Parameters
    ----------
    dataset : a Dataset, a DataFrame or a path (errors are shown in the Build tab).
    workflow : open an existing workflow in the builder (``PipelineBuilder.from_workflow``).
    client : the Dask client of the Cluster tab and of Run (default: the active one).
    preview_rows, output : as :class:`.PipelineBuilder`.
    """

    def __init__(self, dataset: Any = None, *, workflow: Any = None, client: Any = None,
                 preview_rows: int = 1000, output: str | os.PathLike | None = None) -> None:
        super().__init__()
        from interactive_recsys.ui.embeddings._embeddings import (  # lazy: bokeh (seconds)
            load_bokeh,
        )

        load_bokeh()  # BokehJS on the page now, from this thread: the tabs' plots need it later
        self.add_class("irs-studio")
        self.client = client
        self._watcher: threading.Thread | None = None
        self._frozen: Any = None  # the closed dashboard shown under "start again"
        self._watch_stop = threading.Event()
        # the Cluster tab is filled from the kernel thread (tab, Start) and the watcher thread
        self._cluster_lock = threading.RLock()
        self.preview_rows = preview_rows
        self.preview: Any = None
        self.embeddings: Any = None
        self.dashboard: Any = None
        if workflow is not None:
            self.builder = PipelineBuilder.from_workflow(workflow, dataset,
                                                         preview_rows=preview_rows, output=output)
        else:
            self.builder = PipelineBuilder(dataset, preview_rows=preview_rows, output=output)
        self.builder.client = client
        self.preview_tab = w.VBox([_note("Click Preview (or Run) in the Build tab to see the "
                                         "processed rows here.", "irs-studio-preview-empty")])
        self.embeddings_tab = w.VBox([_note("Click Run in the Build tab: the embedding "
                                            "statistics of the fitted workflow appear here.",
                                            "irs-studio-embeddings-empty")])
        self.cluster_tab = w.VBox([_note("Open this tab to see the cluster.",
                                         "irs-studio-cluster-empty")])
        self.message = w.HTML()
        self.message.add_class("irs-studio-messages")
        self.tabs = w.Tab(children=[self.builder, self.preview_tab, self.embeddings_tab,
                                    self.cluster_tab], titles=TITLES)
        self.tabs.add_class("irs-studio-tabs")
        self.tabs.observe(self._on_tab, "selected_index")
        self.children = [self.message, self.tabs]
        self.builder.code_bar.add_host(self.model_id)  # Insert: below the Studio's cell
        self.builder.on_preview(self._after_preview)
        self.builder.on_run(self._after_run)
        self.builder.before_run(lambda: self._safely(self._before_run))
        self._own_client: Any = None  # a cluster Run started: closed with the Studio
        self._lock = threading.Lock()
        model = self.builder.model
        if model is not None and model.fitted_workflow is not None:  # a fitted workflow given
            self._safely(self.show_embeddings)
            self._safely(self.show_preview)

    @property
    def titles(self) -> tuple[str, ...]:
        return tuple(self.tabs.titles)

    @property
    def preview_button(self) -> w.Button:
        return self._find_button("irs-btn-preview")

    @property
    def run_button(self) -> w.Button:
        return self._find_button("irs-btn-run")

    def _find_button(self, css: str) -> w.Button:
        return find_button(self.builder, css)

    # ---- errors -----------------------------------------------------------------------------
    def _safely(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as exc:  # shown in the Studio, never only in the console
            self.message.value += (
                f'<div class="irs-msg irs-msg-error" style="color:var(--jp-error-color1, #b00020)">'
                f"{html.escape(type(exc).__name__)}: {html.escape(redact_text(str(exc)))}"
                f"</div><details><summary>details</summary><pre>"
                f"{html.escape(redact_text(traceback.format_exc()))}</pre></details>")

    # ---- tabs -------------------------------------------------------------------------------
    def show_preview(self) -> None:
        """Fill the Preview tab with the workflow being built (fitted on a sample copy, or the
        workflow fitted by the last Run)."""
        from interactive_recsys.ui.preview._preview import (  # lazy: loaded when the tab opens
            Preview,
        )

        model = self.builder.model
        if model is None:
            raise RuntimeError("No dataset is open in the Build tab.")
        workflow = model.fitted_workflow or model.to_workflow()
        if self.preview is None:
            self.preview = Preview(workflow, model.dataset, n_rows=self.preview_rows)
            self.preview_tab.children = [self.preview]
        else:
            self.preview.refresh(workflow, model.dataset)

    def show_embeddings(self) -> None:
        """Fill the Embeddings tab with the statistics of the fitted workflow."""
        from interactive_recsys.ui.embeddings import EmbeddingView  # lazy: bokeh, on opening

        model = self.builder.model
        if model is None or model.fitted_workflow is None:
            raise RuntimeError("The workflow is not fitted yet: click Run in the Build tab.")
        report = EmbeddingReport(model.fitted_workflow, dataset=model.dataset)
        if model.suggest_current:  # the dimensions Suggest lowered to fit the memory budget
            for name, dim in model.vocab_dims.items():
                if name in report.tables:
                    report.set_dim(name, dim)
        if not report.tables:
            self.embeddings_tab.children = [_note(
                "The workflow has no Categorify step, so no embedding tables.",
                "irs-studio-embeddings-empty")]
            return
        self.embeddings = EmbeddingView(report)
        self.embeddings_tab.children = [self.embeddings]

    def live_client(self) -> Any:
        """The client of the Cluster tab and of Run: the one given (or started here) while it
        runs, else the active one (a cluster started later with ``irs.start_cluster()``)."""
        if self.client is not None and self.client.status != "running":
            self.client = None  # a closed client is never used again
        if getattr(self.builder.client, "status", "running") != "running":
            self.builder.client = None  # Run then uses the active client
        return self.client or active_client()

    def show_cluster(self) -> None:
        """Fill the Cluster tab: the live dashboard of the client, or (no cluster, or it
        closed) a button to start one; a cluster started elsewhere is picked up by itself.
        Safe to call from several threads: one dashboard per client."""
        with self._cluster_lock:
            self._show_cluster()

    def _show_cluster(self) -> None:
        client = self.live_client()
        old = self.dashboard
        stale = old is not None and (old.closed or old.monitor.client is not client)
        if stale:
            self._frozen = old  # its last picture, until replaced
        if client is None:
            self._show_no_cluster(self._frozen)
            if stale:  # after the tab shows it: the tab and `dashboard` change together
                self.dashboard = None
            return
        if stale:
            self.dashboard = None
        self._stop_watching()
        if self.builder.client is None:  # Run goes where the Cluster tab looks
            self.builder.client = client
        dashboard = self.dashboard
        if dashboard is None:
            from interactive_recsys.ui.dashboard import Dashboard  # lazy: bokeh, on opening the tab

            job = getattr(self.builder.model, "last_job", None)
            running = job is not None and job.started and self.builder.model.running
            # opened while a run goes on: show it from its start (phases, tasks, one clock)
            dashboard = Dashboard(client, since=job.started if running else None)
            dashboard.on_closed(self._on_dashboard_closed)
        dashboard.rows = self._rows()
        self.cluster_tab.children = [dashboard]
        if self._frozen is not None:
            self._frozen.dispose()
            self._frozen = None
        self.dashboard = dashboard  # last: whoever sees it sees the tab and the old one gone

    def _show_no_cluster(self, frozen: Any = None) -> None:
        start = w.Button(description="Start a local cluster", button_style="primary",
                         icon="play", layout=w.Layout(width="auto"))
        start.add_class("irs-btn-start-cluster")
        busy = w.HTML()
        busy.add_class("irs-cluster-busy")
        start.on_click(lambda _: self._safely(lambda: self._start_cluster(start, busy)))
        closed = frozen is not None and frozen.closed
        text = ("The Dask cluster closed: Preview uses this process, and Run starts a local "
                "cluster, until one runs again. " if closed else "No Dask cluster is active: "
                "Preview uses this process; Run starts a local one. ") + (
            "Start a local cluster (2 workers), or start or connect one in a cell "
            "(irs.start_cluster(), irs.connect('tcp://host:8786')): this tab picks it up by "
            "itself.")
        children = [_note(text, "irs-studio-no-cluster"), start, busy]
        if closed:  # the last picture of the closed cluster stays below
            children.append(frozen)
        self.cluster_tab.children = children
        self._watch_for_cluster()

    def _start_cluster(self, button: w.Button | None = None, busy: w.HTML | None = None
                       ) -> None:
        if button is not None:  # the busy state shows while the cluster starts (seconds)
            button.disabled, button.description, button.icon = (
                True, "Starting a local cluster…", "hourglass-half")
        if busy is not None:
            busy.value = "<i>starting 2 workers, a few seconds…</i>"
        self._stop_watching()  # this cluster is shown below, not by the watcher too
        try:
            self.client = cluster.start_cluster(2)  # the default client now: Run uses it too
        except BaseException:
            self._watch_for_cluster()  # still none: keep looking for one started in a cell
            raise
        finally:
            if button is not None:
                button.disabled, button.description, button.icon = (
                    False, "Start a local cluster", "play")
            if busy is not None:
                busy.value = ""
        self.show_cluster()

    def _before_run(self) -> None:
        """Run always has a dashboard: without a cluster, start a local one (its dashboard
        starts sampling before the fit, so the Cluster tab shows the whole run, however
        late it is opened); with one, make sure its dashboard watches from now on."""
        if self.live_client() is None:
            self.builder.say("No Dask cluster is active: starting a local one (2 workers) "
                             "for the run and its dashboard…", "busy", "run")
            self._start_cluster()
            self._own_client = self.client
        else:
            self.show_cluster()
        self.builder.client = self.live_client()
        if self.dashboard is not None:  # its header: rows/s and time left of this run
            self.dashboard.rows = self._rows()

    def _rows(self) -> int | None:
        """The rows of the builder's dataset if known without reading it (else ``None``)."""
        model = self.builder.model
        return model.dataset.known_num_rows if model is not None else None

    def _on_dashboard_closed(self, dashboard: Any) -> None:
        """The dashboard closed (its cluster closed, or Close was clicked): offer to start a
        cluster again when none runs."""
        if dashboard is self.dashboard and self.live_client() is None:
            self._safely(self.show_cluster)

    def _watch_for_cluster(self) -> None:
        """While the tab says "no cluster", look for one every second (a cluster started in
        a cell with ``irs.start_cluster()``) and show its dashboard when found."""
        if self._watcher is not None and self._watcher.is_alive() \
                and not self._watch_stop.is_set():
            return
        stop = self._watch_stop = threading.Event()  # a stopping watcher keeps its own

        def watch() -> None:
            while not stop.wait(WATCH_SECONDS):
                if active_client() is not None:
                    self._safely(self.show_cluster)
                    return

        self._watcher = threading.Thread(target=watch, name="irs-studio-watch", daemon=True)
        self._watcher.start()

    def _stop_watching(self) -> None:
        self._watch_stop.set()

    def _on_tab(self, change: dict[str, Any]) -> None:
        if change["new"] == TITLES.index("Cluster") and (
                self.dashboard is None or self.dashboard.closed):
            self._safely(self.show_cluster)

    def _after_preview(self, result: Any) -> None:
        self.message.value = ""
        self._safely(self.show_preview)

    def _after_run(self, job: Any) -> None:
        if job.status != "finished":
            return
        with self._lock:
            self.message.value = ""
            self._safely(self.show_embeddings)
            self._safely(self.show_preview)

    def stop_cluster(self) -> bool:
        """Stop the local cluster that Run started for this Studio, quietly (no Dask
        warnings in the cell); the widgets stay, the Cluster tab keeps the run's last
        picture. Returns whether there was one (a cluster given or started elsewhere is
        left alone). The end of a notebook that ran the Studio."""
        client, self._own_client = self._own_client, None
        if client is None:
            return False
        cluster.stop_cluster(client)
        return True

    def close(self) -> None:
        self._stop_watching()
        for dashboard in (self.dashboard, self._frozen):
            if dashboard is not None:
                dashboard.dispose()
        self.stop_cluster()  # the cluster Run started for this Studio
        super().close()

    def __repr__(self) -> str:
        return f"Studio({self.builder!r}; tabs: {' | '.join(TITLES)})"


def find_button(root: Any, css: str) -> w.Button:
    """The button inside ``root`` carrying CSS class ``css`` (what a browser test clicks)."""
    stack: list[Any] = [root]
    while stack:
        widget = stack.pop()
        if isinstance(widget, w.Button) and css in widget._dom_classes:
            return widget
        stack.extend(getattr(widget, "children", ()))
    raise LookupError(css)
