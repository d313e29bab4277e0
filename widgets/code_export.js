// CodeExport: the Copy and "Insert as a new cell" buttons beside the builder's exported code.
// Python (interactive_recsys/ui/builder/views/_code_export.py) sets the synced traits:
//   code:  the exported text (what both buttons use, exactly);
//   hosts: model ids of the widgets that may be displayed in the Studio's cell (the builder,
//          the Studio), to find that cell in the notebook.
// Copy: navigator.clipboard.writeText; when the browser refuses it (no secure context, no
// permission), the code area's text is selected and the note says "press Ctrl+C".
// Insert: through the notebook's model that JupyterLab's widget manager holds (JupyterLab 4,
// Notebook 7): a new code cell below the cell showing a host, not run. Elsewhere the note
// says why and what to run instead. Every click leaves its outcome in the note and in
// el.dataset.lastAction ("copied", "selected", "inserted", "refused").

const WIDGET_VIEW = "application/vnd.jupyter.widget-view+json";
const PY_HELP = "run builder.insert_code_cell() in a cell (studio.builder for a Studio)";

function button(text, css, tip) {
  const b = document.createElement("button");
  b.className = `jupyter-button widget-button irs-btn-${css}`;
  b.textContent = text;
  b.title = tip;
  b.style.marginRight = "4px";
  return b;
}

// the code area (the builder's textarea) beside this view, else null
function codeArea(el) {
  const builder = el.closest && el.closest(".irs-builder");
  return builder ? builder.querySelector(".irs-builder-code textarea") : null;
}

function selectText(el, code) {
  const area = codeArea(el);
  if (!area || area.value !== code) return false;
  area.focus();
  area.select();
  return true;
}

async function copy(el, code) {
  try {
    if (!navigator.clipboard || !window.isSecureContext) throw new Error("no clipboard API");
    await navigator.clipboard.writeText(code);
    return ["copied", "Copied"];
  } catch (err) {
    if (selectText(el, code)) {
      return ["selected", "The browser refused the clipboard: the code is selected, " +
              "press Ctrl+C (⌘C on a Mac)"];
    }
    return ["refused", `The browser refused the clipboard (${err.message || err})`];
  }
}

// index of the cell whose outputs show one of the host widgets, else -1
function hostCell(cells, hosts) {
  for (let i = 0; i < cells.length; i++) {
    const json = cells[i].toJSON();
    for (const out of json.outputs || []) {
      const view = out.data && out.data[WIDGET_VIEW];
      if (view && hosts.includes(view.model_id)) return i;
    }
  }
  return -1;
}

function insert(model, code) {
  const manager = model.widget_manager;
  const notebook = manager && manager.context && manager.context.model;
  const shared = notebook && notebook.sharedModel;
  if (!shared || typeof shared.insertCell !== "function" || !shared.cells) {
    return ["refused", `This page gives widgets no access to the notebook: ${PY_HELP}`];
  }
  const index = hostCell(shared.cells, model.get("hosts") || []);
  if (index < 0) {
    return ["refused", `The Studio's cell was not found in this notebook: ${PY_HELP}`];
  }
  shared.insertCell(index + 1, { cell_type: "code", source: code, metadata: {} });
  return ["inserted", `Inserted as cell ${index + 2}, below the Studio (not run)`];
}

function render({ model, el }) {
  el.classList.add("irs-code-export");
  const copyButton = button("Copy", "copy-code", "Copy the exported code to the clipboard");
  const insertButton = button("Insert as a new cell", "insert-code",
                              "Insert the exported code as a new cell below the Studio's " +
                              "cell, without running it");
  const note = document.createElement("span");
  note.className = "irs-code-export-note";
  note.style.cssText = "margin-left:8px;color:var(--jp-ui-font-color2,#555);font-size:12px";
  const tell = ([action, text]) => {
    el.dataset.lastAction = action;
    note.textContent = text;
    note.style.color = action === "refused" ? "var(--jp-error-color1,#d32f2f)" : "";
  };
  copyButton.addEventListener("click", async () => tell(await copy(el, model.get("code"))));
  insertButton.addEventListener("click", () => {
    try {
      tell(insert(model, model.get("code")));
    } catch (err) {
      tell(["refused", `Insert failed (${err.message || err}): ${PY_HELP}`]);
    }
  });
  const clear = () => { note.textContent = ""; delete el.dataset.lastAction; };
  model.on("change:code", clear);
  el.append(copyButton, insertButton, note);
  return () => model.off("change:code", clear);
}

export default { render };
