// RunWatch: ends the builder's "Running..." spinner with a message when the kernel stops.
// Synced traits: running (true from Run until the run has ended), message (the text shown
// when the kernel stops while running is true). While a run is in progress the kernel is
// watched three ways: the widget model's "comm_live_update" event (the widget manager marks
// every model disconnected when the kernel restarts), the kernel connection's status
// ("restarting", "autorestarting", "dead") and, as a fallback, a check every second for
// the "jupyter-widgets-disconnected" class JupyterLab puts on the view. Then the spinner and
// the "Running..." and progress lines of the enclosing builder are hidden and the message is shown.

const STOPPED = new Set(["restarting", "autorestarting", "dead"]);

function render({ model, el }) {
  el.classList.add("irs-run-watch");
  const box = document.createElement("div");
  box.className = "irs-kernel-stopped";
  box.setAttribute("role", "alert");
  box.style.display = "none";
  el.appendChild(box);
  let stopped = false;

  function stop(why) {
    if (stopped || !model.get("running")) return;
    stopped = true;
    box.textContent = model.get("message");
    box.dataset.why = why;
    box.style.display = "";
    const builder = el.closest(".irs-builder");
    if (builder) {
      // the spinners, "Running..." notes and progress lines (their rows/s and time left
      // are frozen now) of this builder end here: the kernel that would have replaced
      // them is gone
      const running = ".irs-msg-busy, .irs-run-running, .irs-run-progress-more";
      builder.querySelectorAll(running).forEach((node) => {
        node.classList.add("irs-kernel-stopped-replaced");
        node.style.display = "none";
      });
      builder.querySelectorAll(".irs-spinner").forEach((node) => node.remove());
      builder.classList.add("irs-builder-kernel-stopped");
    }
  }

  function disconnected() {
    const view = el.closest(".jupyter-widgets-disconnected");
    return view !== null || el.classList.contains("jupyter-widgets-disconnected");
  }

  const kernel = (model.widget_manager && model.widget_manager.kernel) || null;
  const onStatus = (_, status) => {
    if (STOPPED.has(status)) stop(status);
  };
  if (kernel && kernel.statusChanged) kernel.statusChanged.connect(onStatus);
  const onLive = () => {
    // comm_live_update fires when the manager disconnects (restart) or reconnects
    if (disconnected() || (kernel && STOPPED.has(kernel.status))) stop("comm");
    else setTimeout(() => { if (disconnected()) stop("comm"); }, 0);
  };
  model.on("comm_live_update", onLive);
  const timer = setInterval(() => {
    if (model.get("running") && disconnected()) stop("disconnected");
  }, 1000);
  model.on("change:running", () => {
    if (!model.get("running") && !stopped) box.style.display = "none";
  });

  return () => {
    clearInterval(timer);
    if (kernel && kernel.statusChanged) kernel.statusChanged.disconnect(onStatus);
    model.off("comm_live_update", onLive);
  };
}

export default { render };
