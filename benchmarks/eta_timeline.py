"""The Studio's time left against the time a Run really had left, second by second.

A 2-worker cluster, the Studio's model on ``--data`` with Suggest's pipeline, then two Runs
of it through the Studio's own controller (the second paces its write on the first): each
second the status line's first line (:func:`~interactive_recsys.ui._run_progress.run_text`)
is printed beside the seconds the Run turned out to have left. Not a test: it reads the data
several times.

``python -m benchmarks.eta_timeline --data PATH --out FOLDER``
"""

from __future__ import annotations

import argparse
import time

import interactive_recsys as irs
from interactive_recsys.ui._run_progress import run_text
from interactive_recsys.ui.builder.model import BuilderModel
from interactive_recsys.ui.builder.model._controller import RunController


def timeline(controller: RunController, output: str, rows: int | None) -> list[str]:
    """One Run: its lines ``t=…  actual left …  said: …``."""
    controller.check(output, overwrite=True)
    started = time.time()
    job = controller.start(output, overwrite=True)
    said = []
    while not job.done():
        time.sleep(1.0)
        said.append((time.time() - started,
                     run_text([p.to_dict() for p in job.phases], rows, time.time())))
    job.result()
    total = time.time() - started
    return [f"Run of {total:.1f} s"] + [f"  t={t:5.1f}  actual left {total - t:5.1f}  said: {text}"
                                       for t, text in said]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a parquet folder")
    parser.add_argument("--out", required=True, help="where the Runs write (replaced)")
    parser.add_argument("--memory-limit", default="3GB", help="per Dask worker")
    args = parser.parse_args(argv)
    client = irs.start_cluster(2, memory_limit=args.memory_limit, dashboard=False)
    try:
        model = BuilderModel(args.data)
        model.suggest()
        controller = RunController(model)
        controller.client = client
        for _ in range(2):
            print("\n".join(timeline(controller, args.out, model.dataset.known_num_rows)))
    finally:
        client.close()


if __name__ == "__main__":
    main()
