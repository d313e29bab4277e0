// RunNotice: tells the user that a Run ended while the page was hidden (another browser
// tab, a minimised window). Python (interactive_recsys/ui/builder/_run_notice.py) sets the
// synced trait `ended` = {n, status, title, body} when a run ends; this view then, only if
// document.visibilityState is "hidden":
//   * shows a desktop Notification when the user allowed them, else
//   * prefixes document.title ("✓ Run finished · ...") until the page is visible again.
// Permission is asked on the first click of the builder's Run button (a user gesture, as
// browsers require), never when the page loads. The view draws nothing.

const RUN_BUTTON = ".irs-btn-run";

function askPermission() {
  const N = window.Notification;
  if (!N || N.permission !== "default" || window.__irsNoticeAsked) return;
  window.__irsNoticeAsked = true; // once per page, whatever the answer
  try {
    const asked = N.requestPermission();
    if (asked && asked.catch) asked.catch(() => {});
  } catch (err) {
    // old Safari: callback form only; a refusal is fine
  }
}

function notify(ended) {
  const N = window.Notification;
  if (N && N.permission === "granted") {
    try {
      const note = new N(ended.title, { body: ended.body, tag: "irs-run-ended" });
      note.onclick = () => { window.focus(); note.close(); };
      return "notification";
    } catch (err) {
      // some browsers allow notifications only from a service worker: use the title
    }
  }
  const original = window.__irsTitle ?? document.title;
  window.__irsTitle = original;
  document.title = `${ended.title} · ${original}`;
  const restore = () => {
    if (document.visibilityState !== "visible") return;
    if (window.__irsTitle !== undefined) document.title = window.__irsTitle;
    window.__irsTitle = undefined;
    document.removeEventListener("visibilitychange", restore);
  };
  document.addEventListener("visibilitychange", restore);
  return "title";
}

function render({ model, el }) {
  el.classList.add("irs-run-notice");
  el.style.display = "none";
  let seen = (model.get("ended") || {}).n || 0; // a run that ended before this view: old news
  const onClick = (event) => {
    if (event.target.closest && event.target.closest(RUN_BUTTON)) askPermission();
  };
  // the builder holding this view (found once attached), else the whole page
  const scope = () => (el.closest && el.closest(".irs-builder")) || document;
  let root = null;
  const listen = () => {
    root = scope();
    root.addEventListener("click", onClick, true);
  };
  setTimeout(listen, 0);
  const onEnded = () => {
    const ended = model.get("ended") || {};
    if (!ended.n || ended.n === seen) return;
    seen = ended.n;
    const how = document.visibilityState === "hidden" ? notify(ended) : "visible";
    el.dataset.lastNotice = how; // what happened, for tests and for curious users
  };
  model.on("change:ended", onEnded);
  return () => {
    model.off("change:ended", onEnded);
    if (root) root.removeEventListener("click", onClick, true);
  };
}

export default { render };
