// ColumnList: the pipeline builder's column rows (interactive_recsys/ui/builder/_column_list.py).
// Synced traits: rows (name, dtype, role, null, distinct, title), shown and selected (names).
// A click sends {event: "click", name, shift} to Python, which owns the selection rules
// (shift-click ranges included) and sends the new `selected` back.

const FIELDS = ["dtype", "role", "null", "distinct"];

function cssName(text) {
  return String(text).replace(/[^A-Za-z0-9_-]/g, "_");
}

function render({ model, el }) {
  el.classList.add("irs-cl");
  const head = document.createElement("div");
  head.className = "irs-cl-head";
  for (const title of ["", "column", "dtype", "role", "null %", "distinct"]) {
    const cell = document.createElement("span");
    cell.textContent = title;
    head.appendChild(cell);
  }
  const body = document.createElement("div");
  body.className = "irs-cl-body";
  body.setAttribute("role", "listbox");
  body.setAttribute("aria-multiselectable", "true");
  el.append(head, body);
  let byName = new Map();

  const build = () => {
    body.replaceChildren();
    byName = new Map();
    for (const row of model.get("rows") || []) {
      const line = document.createElement("label");
      line.className = `irs-cl-row irs-col irs-col-${cssName(row.name)} irs-role-${row.role}`;
      line.title = row.title || row.name;
      line.dataset.name = row.name;
      const box = document.createElement("input");
      box.type = "checkbox";
      const name = document.createElement("span");
      name.className = "irs-cl-name";
      name.textContent = row.name;
      line.append(box, name);
      for (const field of FIELDS) {
        const cell = document.createElement("span");
        cell.className = `irs-cl-${field}`;
        cell.textContent = row[field] ?? "";
        line.appendChild(cell);
      }
      line.addEventListener("click", (event) => {
        if (event.target !== box) {
          event.preventDefault(); // the label would toggle the box a second time
          box.checked = !box.checked;
        }
        if (event.shiftKey) window.getSelection()?.removeAllRanges();
        model.send({ event: "click", name: row.name, shift: event.shiftKey });
      });
      body.appendChild(line);
      byName.set(row.name, { line, box });
    }
    update();
  };

  const update = () => {
    const shown = new Set(model.get("shown") || []);
    const selected = new Set(model.get("selected") || []);
    for (const [name, { line, box }] of byName) {
      line.style.display = shown.has(name) ? "" : "none";
      box.checked = selected.has(name);
      line.classList.toggle("irs-cl-selected", selected.has(name));
      line.setAttribute("aria-selected", String(selected.has(name)));
    }
  };

  build();
  model.on("change:rows", build);
  model.on("change:shown", update);
  model.on("change:selected", update);
  return () => {
    model.off("change:rows", build);
    model.off("change:shown", update);
    model.off("change:selected", update);
  };
}

export default { render };
