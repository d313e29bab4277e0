"""HTML reports of executed notebooks, readable offline (``irs report``).

The notebook is converted with nbconvert's ``HTMLExporter`` (the JupyterLab look). Widget
outputs, which need a kernel or a CDN to show in a static page, are drawn as plain HTML
from the saved widget state instead: boxes, labels, HTML, progress bars, buttons, output
areas, Bokeh figures inside ``jupyter_bokeh.BokehModel`` (the dashboard, the embedding
plots) with BokehJS inlined in the page, and the package's own anywidgets (the Studio's
column list and workflow graph, see :mod:`.ui.static_html`) with their CSS inlined. No
script is fetched from the network, and no script saved in the notebook is run.

With ``execute=True`` the notebook is run first (nbclient, widget state stored,
``BOKEH_RESOURCES=inline``); after each code cell a small snippet (not counted in the
execution numbers) asks the kernel for the *current* document of every live
``BokehModel``, so dashboard figures show the data they had at the end of the run (or when
they were closed), not only the state they were created with. Without ``execute``, the
saved widget state is all there is: Bokeh figures show the data they were created with.

>>> import nbformat
>>> nb = nbformat.v4.new_notebook()
>>> nb.cells = [nbformat.v4.new_code_cell("1 + 1", execution_count=1, outputs=[
...     nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)])]
>>> html = notebook_html(nb, title="demo")
>>> "<title>demo</title>" in html and "cdn.bokeh.org" not in html
True
"""

from __future__ import annotations

import contextlib
import copy
import html
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.redact import redact_text
from interactive_recsys.report._sanitize import clean_bokeh_doc, clean_html, is_base64
from interactive_recsys.report._widget_state import missing_state_note, widgets_without_state
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.ui._static_html import anywidget_html, kind_of, widget_css

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
BOKEH_LOAD = "application/vnd.bokehjs_load.v0+json"
BOKEH_EXEC = "application/vnd.bokehjs_exec.v0+json"
_SNAPSHOT_MIME = "application/x-irs-bokeh-snapshots+json"
_BOKEH_SHOW = "application/x-irs-bokeh-bundle+json"  # set by sanitize_notebook only

#: Run in the kernel after each cell: the current documents of the live BokehModels.
_SNAPSHOT_CODE = f"""\
def _irs_bokeh_snapshots():
    import json
    from IPython.display import display
    from bokeh.core.json_encoder import serialize_json
    from ipywidgets.widgets.widget import _instances
    try:
        from jupyter_bokeh import BokehModel
    except ImportError:
        return
    bundles = {{model_id: w._model_to_traits(w._model) for model_id, w in list(_instances.items())
               if isinstance(w, BokehModel)}}
    display({{"{_SNAPSHOT_MIME}": json.loads(serialize_json(bundles))}}, raw=True)
_irs_bokeh_snapshots()
del _irs_bokeh_snapshots
"""

#: nbconvert's JupyterLab template without its CDN scripts (require.js, MathJax, mermaid,
#: the widget manager), with BokehJS inlined when a Bokeh figure is in the page.
_TEMPLATE = """\
{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}
<style>.irs-widget-box{display:flex;gap:6px}.irs-widget-vbox{flex-direction:column}
.irs-widget-hbox{flex-direction:row;flex-wrap:wrap;align-items:center}</style>
{{ resources.get("irs_head", "") }}
{%- endblock extra_css -%}
{%- block body_header -%}{{ super() }}{{ resources.get("irs_note", "") }}{%- endblock -%}
"""


class ReportError(IRSError, ValueError):
    """A notebook cannot be turned into a report (missing, unreadable, not run, failing)."""


# ---- widgets as static HTML ----------------------------------------------------------------
class StaticWidgets:
    """Draws widget outputs as HTML from a notebook's saved widget state.

    Parameters
    ----------
    state : the ``state`` mapping of the notebook's widget-state metadata (model id ->
        ``{"model_name", "model_module", "state"}``).
    bokeh_snapshots : current render bundles of BokehModels by model id (they replace the
        bundle saved in the state, which is the one the figure was created with).
    """

    def __init__(self, state: dict[str, Any], bokeh_snapshots: dict[str, Any] | None = None
                 ) -> None:
        self.state = state
        self.bokeh_snapshots = bokeh_snapshots or {}
        self.uses_bokeh = False
        self.anywidget_kinds: set[str] = set()  # of ours drawn: their CSS goes in the head

    def render(self, model_id: str, fallback: str = "") -> str:
        """HTML of the widget ``model_id`` (``fallback`` text when it has no saved state)."""
        model = self.state.get(model_id)
        if model is None:
            return f"<pre>{html.escape(fallback)}</pre>" if fallback else ""
        name = model.get("model_name", "")
        st = model.get("state", {})
        if model.get("model_module") == "@bokeh/jupyter_bokeh":
            return self._bokeh(model_id, st)
        if model.get("model_module") == "anywidget":
            return self._anywidget(st)
        if name in ("VBoxModel", "BoxModel", "GridBoxModel", "AccordionModel", "TabModel",
                    "StackModel"):
            return self._box(st, "irs-widget-vbox")
        if name == "HBoxModel":
            return self._box(st, "irs-widget-hbox")
        if name in ("HTMLModel", "HTMLMathModel"):
            return self._described(st, clean_html(str(st.get("value", ""))))
        if name == "LabelModel":
            return self._described(st, html.escape(str(st.get("value", ""))))
        if name in ("FloatProgressModel", "IntProgressModel"):
            lo, hi, value = (float(st.get(k, d)) for k, d in
                             (("min", 0), ("max", 100), ("value", 0)))
            share = (value - lo) / (hi - lo) if hi > lo else 0.0
            bar = (f'<progress value="{value - lo:g}" max="{hi - lo:g}"></progress> '
                   f"{share:.0%}")
            return self._described(st, bar)
        if name in ("ButtonModel", "ToggleButtonModel"):
            pressed = " aria-pressed=\"true\"" if st.get("value") is True else ""
            return (f"<button disabled{pressed}>{html.escape(str(st.get('description', '')))}"
                    "</button>")
        if name == "CheckboxModel":
            checked = " checked" if st.get("value") else ""
            return self._described(st, f'<input type="checkbox" disabled{checked}>')
        if "_options_labels" in st:  # Dropdown, Select, RadioButtons, ToggleButtons, ...
            labels = st["_options_labels"]
            index = st.get("index")
            chosen = [index] if isinstance(index, int) else list(index or [])
            text = ", ".join(str(labels[i]) for i in chosen if 0 <= i < len(labels))
            return self._described(st, f"<code>{html.escape(text)}</code>")
        if name == "OutputModel":
            return "".join(self.render_output(out) for out in st.get("outputs", []))
        if "value" in st:
            return self._described(st, f"<code>{html.escape(str(st['value']))}</code>")
        return ""

    def render_output(self, output: dict[str, Any]) -> str:
        """HTML of one output of an ``Output`` widget."""
        if output.get("output_type") == "stream":
            return f"<pre>{html.escape(''.join(output.get('text', '')))}</pre>"
        if output.get("output_type") == "error":
            return f"<pre>{html.escape(output.get('ename', ''))}: " \
                   f"{html.escape(output.get('evalue', ''))}</pre>"
        data = output.get("data", {})
        if WIDGET_VIEW in data:
            return self.render(data[WIDGET_VIEW]["model_id"], _text(data.get("text/plain")))
        if "text/html" in data:
            return clean_html(_text(data["text/html"]))
        for mime in ("image/png", "image/jpeg"):
            if mime in data and is_base64(data[mime]):
                return f'<img src="data:{mime};base64,{_text(data[mime]).strip()}">'
        return f"<pre>{html.escape(_text(data.get('text/plain', '')))}</pre>"

    def _box(self, st: dict[str, Any], kind: str) -> str:
        children = "".join(self.render(_ref(c)) for c in st.get("children", []))
        return f'<div class="irs-widget-box {kind}">{children}</div>'

    def _anywidget(self, st: dict[str, Any]) -> str:
        body = anywidget_html(st)
        if body is None:  # someone else's anywidget: its JavaScript is not run here
            return ""
        self.anywidget_kinds.add(str(kind_of(st)))
        return body

    def head(self) -> str:
        """What the page's head needs for the widgets drawn: BokehJS, the widgets' CSS."""
        return (_bokeh_head() if self.uses_bokeh else "") + widget_css(self.anywidget_kinds)

    @staticmethod
    def _described(st: dict[str, Any], inner: str) -> str:
        desc = st.get("description") or ""
        label = f"<b>{html.escape(desc)}</b> " if desc else ""
        return f"<div>{label}{inner}</div>"

    def _bokeh(self, model_id: str, st: dict[str, Any]) -> str:
        bundle = self.bokeh_snapshots.get(model_id) or st.get("render_bundle")
        if isinstance(bundle, str):
            bundle = json.loads(bundle)
        return self.bokeh_html(bundle) if bundle else ""

    def bokeh_html(self, bundle: dict[str, Any]) -> str:
        """The element and the embedding script (ours) of a Bokeh bundle (``docs_json`` +
        ``render_items``), its document cleaned (:func:`.sanitize.clean_bokeh_doc`)."""
        bundle = {**bundle, "docs_json": clean_bokeh_doc(bundle["docs_json"])}
        self.uses_bokeh = True
        element = f"irs-bokeh-{uuid.uuid4().hex}"
        items = copy.deepcopy(bundle["render_items"])
        for item in items:
            item["roots"] = {root: element for root in item.get("roots", {})}
        root_ids = [r for item in items for r in item.get("roots", {})]
        root_attr = f' data-root-id="{html.escape(root_ids[0])}"' if root_ids else ""
        return (f'<div id="{element}"{root_attr} style="display: contents;"></div>\n'
                f'<script type="application/json" id="{element}-docs">'
                f"{_script_json(bundle['docs_json'])}</script>\n"
                "<script>Bokeh.embed.embed_items(JSON.parse(document.getElementById("
                f'"{element}-docs").textContent), {_script_json(items)});</script>')


def _ref(child: str) -> str:
    return child.removeprefix("IPY_MODEL_")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element."""
    return json.dumps(value).replace("</", "<\\/").replace("<!--", "<\\!--")


def _widget_state(nb: Any) -> dict[str, Any]:
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


_IMAGE_MIMES = ("image/png", "image/jpeg")


def sanitize_notebook(nb: Any) -> None:
    """Clean, in place, what the notebook itself carries into the page (see
    :mod:`.sanitize`): ``text/html`` outputs and raw cells through the sanitizer,
    ``application/javascript`` dropped, images that are not plain base64 dropped, image
    sizes that are not numbers dropped, mermaid text escaped; a ``bokeh.io.show`` output
    keeps only its document, read as JSON (drawn later by our own embedding code). Markdown
    is cleaned after it is rendered (:class:`_ReportExporter`)."""
    for cell in nb.cells:
        if cell.cell_type == "raw":
            cell.source = clean_html(cell.source)
        for out in cell.get("outputs", []):
            data = out.get("data")
            if not isinstance(data, dict):
                continue
            data.pop(_BOKEH_SHOW, None)  # set only here, from a parsed show() output
            if BOKEH_EXEC in data:
                bundle = _bokeh_show_bundle(_text(data.get("application/javascript", "")))
                data.clear()
                data.update({_BOKEH_SHOW: bundle, "text/plain": ""} if bundle else
                            {"text/plain": "[Bokeh figure: its document could not be read]"})
            data.pop("application/javascript", None)
            if "text/html" in data:
                data["text/html"] = clean_html(_text(data["text/html"]))
            if "text/vnd.mermaid" in data:
                data["text/vnd.mermaid"] = html.escape(_text(data["text/vnd.mermaid"]))
            for mime in _IMAGE_MIMES:
                if mime in data and not is_base64(data[mime]):
                    del data[mime]
                    data.setdefault("text/plain", f"[{mime} output dropped: not base64]")
            _clean_image_metadata(out.get("metadata", {}))


def _bokeh_show_bundle(script: str) -> dict[str, Any] | None:
    """``docs_json`` and ``render_items`` of the script ``bokeh.io.show`` puts in a notebook
    (read as JSON data, never run), or None."""
    decoder, bundle = json.JSONDecoder(), {}
    for name in ("docs_json", "render_items"):
        start = script.find(f"const {name} = ")
        if start < 0:
            return None
        try:
            bundle[name] = decoder.raw_decode(script, start + len(f"const {name} = "))[0]
        except ValueError:
            return None
    return bundle if isinstance(bundle["render_items"], list) else None


def _clean_image_metadata(metadata: dict[str, Any]) -> None:
    for scope in [metadata, *(v for v in metadata.values() if isinstance(v, dict))]:
        for key in ("width", "height"):
            if key in scope and not (isinstance(scope[key], int | float)
                                     and not isinstance(scope[key], bool)):
                del scope[key]
        scope.pop("filenames", None)


def static_widget_outputs(nb: Any, bokeh_snapshots: dict[str, Any] | None = None
                          ) -> StaticWidgets:
    """Replace, in place, widget outputs by static HTML and drop BokehJS loader outputs.

    Returns the :class:`StaticWidgets` that drew them: its ``uses_bokeh`` tells whether the
    page needs BokehJS (a Bokeh figure or a ``bokeh.io.show`` output is in it), its
    :meth:`~StaticWidgets.head` what goes in the page's head.
    """
    widgets = StaticWidgets(_widget_state(nb), bokeh_snapshots)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.outputs:
            data = out.get("data", {})
            if BOKEH_LOAD in data:
                continue  # loads BokehJS in a live notebook; the report inlines it once
            if _BOKEH_SHOW in data:  # a bokeh.io.show output, its document parsed
                out["data"] = {"text/html": widgets.bokeh_html(data[_BOKEH_SHOW]),
                               "text/plain": data.get("text/plain", "")}
            if WIDGET_VIEW in data:
                text = _text(data.get("text/plain"))
                body = widgets.render(data[WIDGET_VIEW]["model_id"], text)
                if not body.strip() and text:  # a widget type drawn by its own JavaScript
                    body = f"<pre>{html.escape(text)}</pre>"
                out["data"] = {"text/html": body, "text/plain": data.get("text/plain", "")}
            kept.append(out)
        cell.outputs = kept
    nb.metadata.pop("widgets", None)
    return widgets


# ---- executing -----------------------------------------------------------------------------
@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _snapshot_client(nb: Any, **kwargs: Any) -> Any:
    """An nbclient ``NotebookClient`` that, after each code cell, runs :data:`_SNAPSHOT_CODE`
    (not stored in the history, not counted) and keeps the latest bundle of each BokehModel:
    a figure whose widget a later cell closes (``dash.close()``) keeps its last data."""
    import nbformat
    from nbclient import NotebookClient

    class SnapshotClient(NotebookClient):
        snapshots: dict[str, Any]

        async def async_execute_cell(self, cell: Any, cell_index: int,
                                     execution_count: int | None = None,
                                     store_history: bool = True) -> Any:
            cell = await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
            if store_history and cell.cell_type == "code":
                scratch = nbformat.v4.new_code_cell(_SNAPSHOT_CODE)
                self.nb.cells.append(scratch)
                try:
                    await super().async_execute_cell(scratch, len(self.nb.cells) - 1,
                                                     store_history=False)
                finally:
                    self.nb.cells.remove(scratch)
                    self.code_cells_executed -= 1
                for out in scratch.outputs:
                    self.snapshots.update(out.get("data", {}).get(_SNAPSHOT_MIME, {}))
            return cell

    client = SnapshotClient(nb, **kwargs)
    client.snapshots = {}
    return client


def execute_notebook(nb: Any, cwd: str | os.PathLike, *, timeout: int = 600,
                     kernel_name: str | None = None) -> dict[str, Any]:
    """Run ``nb`` in place in a new kernel started in ``cwd``; return the latest render
    bundles of its BokehModels (see the module docstring)."""
    from nbclient.exceptions import CellExecutionError

    kwargs = {"kernel_name": kernel_name} if kernel_name else {}
    client = _snapshot_client(nb, timeout=timeout, store_widget_state=True,
                              resources={"metadata": {"path": os.fspath(cwd)}}, **kwargs)
    try:
        with _environ(BOKEH_RESOURCES="inline"):
            client.execute()
    except CellExecutionError as exc:
        raise ReportError(f"the notebook failed while executing; fix the cell or run without "
                          f"--execute:\n{exc}") from exc
    return dict(client.snapshots)


# ---- rendering -----------------------------------------------------------------------------
def _bokeh_head() -> str:
    from bokeh.resources import INLINE

    return INLINE.clone(components=["bokeh", "bokeh-gl", "bokeh-widgets",
                                    "bokeh-tables"]).render_js()


def notebook_html(nb: Any, *, title: str, bokeh_snapshots: dict[str, Any] | None = None
                  ) -> str:
    """The HTML page of an executed notebook node (a copy is converted; ``nb`` is unchanged)."""
    from jinja2 import DictLoader, pass_context
    from nbconvert import HTMLExporter

    class _ReportExporter(HTMLExporter):
        """nbconvert's exporter with rendered markdown (cells and outputs) sanitized."""

        @pass_context
        def markdown2html(self, context: Any, source: str) -> str:
            return clean_html(super().markdown2html(context, source))

    nb = copy.deepcopy(nb)
    sanitize_notebook(nb)
    redact_outputs(nb)
    note = missing_state_note(widgets_without_state(nb))
    drawn = static_widget_outputs(nb, bokeh_snapshots)
    exporter = _ReportExporter(template_name="lab", template_file="irs-report.html.j2",
                               extra_loaders=[DictLoader({"irs-report.html.j2": _TEMPLATE})])
    resources = {"metadata": {"name": title},
                 "irs_head": drawn.head(), "irs_note": note}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body


def redact_outputs(nb: Any) -> None:
    """Mask the secrets (:mod:`.redact`) in the text of every code cell's outputs: streams,
    errors and plain-text/HTML results (a traceback may name a URL with its password)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if "text" in out:
                out["text"] = redact_text(out["text"])
            if "evalue" in out:
                out["evalue"] = redact_text(out["evalue"])
                out["traceback"] = [redact_text(t) for t in out.get("traceback", [])]
            for mime in ("text/plain", "text/html", "text/markdown"):
                value = out.get("data", {}).get(mime)
                if isinstance(value, str):
                    out["data"][mime] = redact_text(value)
                elif isinstance(value, list):
                    out["data"][mime] = [redact_text(v) for v in value]


def _has_outputs(nb: Any) -> bool:
    return any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")


def notebook_report(notebook: str | os.PathLike, output: str | os.PathLike | None = None, *,
                    execute: bool = False, timeout: int = 600,
                    kernel_name: str | None = None) -> Path:
    """Write an HTML report of ``notebook`` and return its path.

    Parameters
    ----------
    notebook : path of a ``.ipynb`` file.
    output : path of the HTML file (default: the notebook's path with ``.html``); written
        atomically, its directory must exist.
    execute : run the notebook first (in a new kernel, in the notebook's directory); the
        ``.ipynb`` file itself is not modified.
    timeout : seconds allowed per cell when executing.
    kernel_name : kernel to execute with (default: the notebook's own).
    """
    import nbformat

    src = Path(notebook)
    if src.suffix != ".ipynb":
        raise ReportError(f"notebook {str(src)!r} is not a .ipynb file: pass a Jupyter "
                          "notebook")
    if not src.is_file():
        raise ReportError(f"notebook {str(src)!r} does not exist: check the path")
    try:
        nb = nbformat.read(src, as_version=4)
    except Exception as exc:
        raise ReportError(f"notebook {str(src)!r} cannot be read ({exc}): is it a valid "
                          ".ipynb file?") from exc
    dest = Path(output) if output is not None else src.with_suffix(".html")
    if dest.resolve() == src.resolve():
        raise ReportError(f"output {str(dest)!r} is the notebook itself: writing the report "
                          "there would replace it; choose an .html path")
    if not dest.parent.is_dir():
        raise ReportError(f"output directory {str(dest.parent)!r} does not exist: create it "
                          "or choose another --output")
    snapshots = None
    if execute:
        snapshots = execute_notebook(nb, src.parent.resolve(), timeout=timeout,
                                     kernel_name=kernel_name)
    elif not _has_outputs(nb):
        raise ReportError(f"notebook {str(src)!r} has no outputs: run it first, or pass "
                          f"--execute (irs report {src} --execute)")
    page = notebook_html(nb, title=src.stem, bokeh_snapshots=snapshots)
    with atomic_file(dest, mode=0o644) as tmp:  # a report is meant to be shared
        Path(tmp).write_text(page, encoding="utf-8")
    return dest
