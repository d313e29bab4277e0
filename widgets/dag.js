// DagView: draws a workflow laid out by interactive_recsys/ui/builder/_dag.py as plain SVG.
// Synced traits: nodes (id, kind, label, detail, tooltip, x, y, width, height, status:
// "reused" / "refinished" / "computed" after a Run, drawn as a badge), edges
// (source, target), selected (id of the clicked node), message. No external libraries.
// A click on an operator node (or Enter on it) also brings the builder's parameter form
// (.irs-builder-params, far above the graph) into view and focuses its first field.

const SVG_NS = "http://www.w3.org/2000/svg";
const PAD = 8;
const CHAR_PX = 6.2; // average width of one character at the node font size

function make(tag, attrs, parent) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    node.setAttribute(key, String(value));
  }
  if (parent) parent.appendChild(node);
  return node;
}

function fit(text, width) {
  const room = Math.max(3, Math.floor((width - 12) / CHAR_PX));
  return text.length <= room ? text : text.slice(0, room - 1) + "\u2026";
}

function setLabel(text, name, shown) {
  // The operator or column name in one tspan, its detail (dtype, parameters) in another.
  text.replaceChildren();
  const head = make("tspan", { class: "irs-dag-label" }, text);
  head.textContent = shown.slice(0, Math.min(name.length, shown.length));
  if (shown.length > name.length) {
    const rest = make("tspan", { class: "irs-dag-detail" }, text);
    rest.textContent = shown.slice(name.length);
  }
}

function badge(group, node) {
  // "reused" / "refinished" / "computed" at the node's right end; returns the width it takes.
  const text = node.status;
  const width = text.length * 5.6 + 8;
  const x = node.width - width - 3;
  const tag = make("g", { class: "irs-dag-badge", transform: `translate(${x},4)` }, group);
  make("rect", { width, height: node.height - 8, rx: 3, ry: 3 }, tag);
  const label = make("text", { x: width / 2, y: (node.height - 8) / 2,
    "text-anchor": "middle", "dominant-baseline": "central" }, tag);
  label.textContent = text;
  return width + 4;
}

function edgePath(source, target) {
  const x1 = source.x + source.width, y1 = source.y + source.height / 2;
  const x2 = target.x, y2 = target.y + target.height / 2;
  const bend = Math.max(20, (x2 - x1) / 2);
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
}

function revealForm(el) {
  // The builder (Python) loads the clicked step into its form after the click: show the
  // form now, and again (with its first field focused) once its new fields have arrived.
  const builder = el.closest && el.closest(".irs-builder");
  const form = builder && builder.querySelector(".irs-builder-params");
  if (!form) return;
  const show = () => {
    form.scrollIntoView({ block: "nearest" });
    const field = form.querySelector(
      "input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea");
    if (field) field.focus({ preventScroll: true });
  };
  show();
  let timer = null;
  const observer = new MutationObserver(() => {
    clearTimeout(timer);
    timer = setTimeout(show, 50);
  });
  observer.observe(form, { childList: true, subtree: true });
  setTimeout(() => observer.disconnect(), 2000);
}

function draw(model, root, tooltip, hover) {
  const nodes = model.get("nodes") || [];
  const edges = model.get("edges") || [];
  const selected = model.get("selected") || "";
  root.replaceChildren();
  const message = model.get("message") || "";
  if (!nodes.length) {
    const empty = document.createElement("div");
    empty.className = "irs-dag-empty";
    empty.textContent = message || "Empty workflow.";
    root.appendChild(empty);
    refreshTooltip(tooltip, hover, new Map());
    return;
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const width = Math.max(...nodes.map((n) => n.x + n.width)) + 2 * PAD;
  const height = Math.max(...nodes.map((n) => n.y + n.height)) + 2 * PAD;
  const svg = make("svg", {
    class: "irs-dag-svg", width, height,
    viewBox: `${-PAD} ${-PAD} ${width} ${height}`, role: "img",
    "aria-label": `workflow graph with ${nodes.length} nodes`,
  }, root);
  const edgeLayer = make("g", { class: "irs-dag-edges" }, svg);
  const paths = [];
  for (const edge of edges) {
    const source = byId.get(edge.source), target = byId.get(edge.target);
    if (!source || !target) continue;
    const path = make("path", { class: "irs-dag-edge", d: edgePath(source, target) }, edgeLayer);
    path.dataset.source = edge.source;
    path.dataset.target = edge.target;
    paths.push(path);
  }
  const nodeLayer = make("g", { class: "irs-dag-nodes" }, svg);
  for (const node of nodes) {
    const classes = ["irs-dag-node", `irs-dag-${node.kind}`];
    if (node.id === selected) classes.push("irs-dag-selected");
    if (node.status) classes.push(`irs-dag-${node.status}`);
    const group = make("g", {
      class: classes.join(" "), transform: `translate(${node.x},${node.y})`, tabindex: 0,
    }, nodeLayer);
    group.dataset.id = node.id;
    make("rect", { width: node.width, height: node.height, rx: 4, ry: 4 }, group);
    const badgeWidth = node.status ? badge(group, node) : 0;
    const label = make("text", { x: 6, y: node.height / 2, "dominant-baseline": "central" },
      group);
    const detail = node.detail ? ` ${node.detail}` : "";
    const full = node.label + detail;
    setLabel(label, node.label, full);
    const measure = () => (label.getComputedTextLength ? label.getComputedTextLength() : 0);
    if (measure() === 0) {
      // not laid out (hidden tab): estimate
      setLabel(label, node.label, fit(full, node.width - badgeWidth));
    } else {
      let shown = full;
      while (measure() > node.width - 10 - badgeWidth && shown.length > 4) {
        shown = shown.slice(0, shown.length - 2) + "\u2026";
        setLabel(label, node.label, shown);
      }
    }
    const linked = paths.filter((p) => p.dataset.source === node.id || p.dataset.target === node.id);
    group.addEventListener("mouseenter", (event) => {
      linked.forEach((p) => p.classList.add("irs-dag-edge-hover"));
      hover.id = node.id;
      tooltip.textContent = node.tooltip || full;
      tooltip.style.display = "block";
      const box = tooltip.parentElement.getBoundingClientRect(); // the widget: position relative
      tooltip.style.left = `${event.clientX - box.left + 12}px`;
      tooltip.style.top = `${event.clientY - box.top + 12}px`;
    });
    group.addEventListener("mouseleave", () => {
      linked.forEach((p) => p.classList.remove("irs-dag-edge-hover"));
      hover.id = null;
      tooltip.style.display = "none";
    });
    const choose = () => {
      model.set("selected", node.id);
      model.save_changes();
      if (node.kind === "op") revealForm(root.parentElement);
    };
    group.addEventListener("click", choose);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") choose();
    });
  }
  refreshTooltip(tooltip, hover, byId);
}

// A redraw replaces the node under the pointer without a mouseleave: an open tooltip takes
// the redrawn node's text (an edit's new parameters), or closes when that node is gone.
function refreshTooltip(tooltip, hover, byId) {
  if (tooltip.style.display === "none" || hover.id === null) return;
  const node = byId.get(hover.id);
  if (node) {
    tooltip.textContent = node.tooltip || (node.detail ? `${node.label} ${node.detail}` : node.label);
  } else {
    hover.id = null;
    tooltip.style.display = "none";
  }
}

function render({ model, el }) {
  el.classList.add("irs-dag");
  const root = document.createElement("div");
  root.className = "irs-dag-canvas";
  const tooltip = document.createElement("div");
  tooltip.className = "irs-dag-tooltip";
  tooltip.style.display = "none";
  el.append(root, tooltip);
  const hover = { id: null }; // the node under the pointer, across redraws
  const redraw = () => draw(model, root, tooltip, hover);
  redraw();
  model.on("change:nodes", redraw);
  model.on("change:edges", redraw);
  model.on("change:selected", redraw);
  model.on("change:message", redraw);
  return () => {
    model.off("change:nodes", redraw);
    model.off("change:edges", redraw);
    model.off("change:selected", redraw);
    model.off("change:message", redraw);
  };
}

export default { render };
