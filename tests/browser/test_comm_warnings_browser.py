"""In JupyterLab + headless Chromium: changing the Embeddings view's settings replaces its
memory-plan widget, and the page's view of the old one still sends its last layout changes.
The kernel must not answer them with "No such comm" warnings (ipykernel logs them on the
``Comm`` logger; JupyterLab shows them in its log and in cell outputs).

Failed before the old widget's comm was kept open a few seconds (8 warnings per change)."""

from __future__ import annotations

import json
import time

from interactive_recsys.ui._bokeh_widget import CLOSE_DELAY_S

#: The kernel collects the Comm logger's records and writes them to comm-log.json.
SETUP = '''import json, logging, threading, time
records = []

class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())

logging.getLogger("Comm").addHandler(Keep())

def dump():
    while True:
        with open("comm-log.tmp", "w") as f:
            json.dump(records, f)
        import os; os.replace("comm-log.tmp", "comm-log.json")
        time.sleep(0.3)

threading.Thread(target=dump, daemon=True).start()'''

VIEW = '''import pandas as pd
import interactive_recsys as irs
view = irs.ui.EmbeddingView(pd.DataFrame({"c": list("aaabbc") * 100, "d": list("xyzxyz") * 100}))
view'''


def test_settings_changes_leave_no_comm_warnings(lab):
    name = lab.write_notebook("comms.ipynb", [SETUP, VIEW])
    lab.open_notebook(name)
    lab.run_all(timeout=120)
    page = lab.page
    page.locator(".irs-embedding-plan-plot .bk-Figure canvas").first.wait_for(timeout=30_000)
    gpus = page.locator(".irs-embedding-view .widget-inline-hbox input").first
    for value in ("2", "3", "4"):
        gpus.fill(value)  # applied as typed: a new plan widget each time
        page.locator(".irs-embedding-plan-plot .bk-Figure canvas").first.wait_for()
        time.sleep(1.0)
    time.sleep(CLOSE_DELAY_S + 2)  # the replaced widgets are closed by now
    plan = lab.bokeh_source("irs-embedding-plan")
    assert len(plan["gib"]) == 8  # 4 GPUs x 2 placements: the changes were applied
    log = json.loads((lab.server.root_dir / "comm-log.json").read_text())
    assert not [m for m in log if "No such comm" in m], log
    assert lab.errors == []
