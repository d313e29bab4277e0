"""`irs demo`, `irs run` and `irs update` show a bar per phase with rows/s and the stages, on
stderr (none with --quiet); the demo's errors are one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pandas as pd
import pytest

import interactive_recsys as irs


def irs_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.run([sys.executable, "-m", "interactive_recsys.cli", *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def lines(stderr: str) -> list[str]:
    """What a terminal would show last of each bar: the stderr split at carriage returns."""
    return [line for line in re.split(r"[\r\n]", stderr) if line.strip()]


def rates(stderr: str, phase: str) -> list[float]:
    return [float(m.replace(",", "")) for line in lines(stderr) if phase in line
            for m in re.findall(r"([\d,]+) rows/s", line)]


@pytest.mark.parametrize("cluster", [["--local"], ["--workers", "1"]])
def test_demo_run_and_update_show_phases_with_rows_per_second(tmp_path, cluster):
    out = irs_cli("demo", "--rows", "20000", "--output", str(tmp_path / "d"), *cluster)
    assert out.returncode == 0, out.stderr
    err = out.stderr
    assert "Traceback" not in err
    for stage in ("generating 20,000 rows", "fitting the standard Criteo workflow",
                  "transforming and writing parquet", "saving the workflow"):
        assert f"irs demo: {stage}" in err, stage
    assert "irs demo: fit 1/1" in err and "irs demo: write" in err
    assert "20000/20000 rows" in err
    assert rates(err, "fit 1/1") and max(rates(err, "fit 1/1")) > 0
    assert any("Categorify" in line or "partial statistics" in line for line in lines(err)
               if "fit 1/1" in line)  # the stage names, not only the phase
    assert any("write parquet" in line for line in lines(err) if "write" in line)

    workflow, data = tmp_path / "d" / "workflow", tmp_path / "d" / "input"
    out = irs_cli("run", "--workflow", str(workflow), "--input", str(data), "--output",
                  str(tmp_path / "r"), *cluster)
    assert out.returncode == 0, out.stderr
    assert "irs run: write" in out.stderr and "20000/20000 rows" in out.stderr
    assert max(rates(out.stderr, "irs run: write")) > 0 and "Traceback" not in out.stderr

    day = tmp_path / "day2"
    day.mkdir()
    pd.read_parquet(data).head(5000).to_parquet(day / "part-0.parquet")
    out = irs_cli("update", "--workflow", str(workflow), "--input", str(day), "--output",
                  str(tmp_path / "u"), *cluster)
    assert out.returncode == 0, out.stderr
    assert "irs update: " in out.stderr and "5000/5000 rows" in out.stderr
    assert rates(out.stderr, "irs update") and "Traceback" not in out.stderr

    out = irs_cli("run", "--workflow", str(workflow), "--input", str(data), "--output",
                  str(tmp_path / "q"), "--quiet", *cluster)
    assert out.returncode == 0 and "rows/s" not in out.stderr, out.stderr


def test_demo_errors_are_one_line(tmp_path):
    assert irs_cli("demo", "--rows", "2000", "--local", "--quiet", "--output",
                   str(tmp_path / "d")).returncode == 0
    out = irs_cli("demo", "--rows", "3000", "--local", "--output", str(tmp_path / "d"))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    (line,) = [x for x in lines(out.stderr) if x.startswith("irs: error")]
    assert "holds other data" in line and "--data" in line
    assert lines(out.stderr)[-1] == line
    out = irs_cli("demo", "--rows", "3000", "--local", "--output", str(tmp_path / "e"),
                  "--part-size", "lots")
    assert out.returncode in (1, 2) and "Traceback" not in out.stderr
    assert len([x for x in lines(out.stderr) if x.startswith("irs: error")]) == 1


def test_bars_count_local_tasks_without_a_cluster():
    import io

    from interactive_recsys import ops
    from interactive_recsys.cli._progress import run_with_bars

    frame = pd.DataFrame({"c": list("abcab") * 200, "n": range(1000)})
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.Normalize()))
    err = io.StringIO()
    run_with_bars(lambda: wf.fit(frame), name="fit", rows=1000, file=err)
    final = [line for line in lines(err.getvalue()) if "100%" in line]
    assert final and "1000/1000 rows" in final[-1] and "rows/s" in final[-1]
    err = io.StringIO()
    run_with_bars(lambda: wf.fit(frame), name="fit", rows=1000, file=err, quiet=True)
    assert err.getvalue() == ""
    with pytest.raises(ZeroDivisionError):  # the function's error, as raised
        run_with_bars(lambda: 1 / 0, name="x", rows=1, file=io.StringIO())


def test_one_time_left_for_the_whole_job_on_the_running_bar_only():
    """A job of two fit phases: the running bar carries the job's time left (both phases),
    each bar once closed carries none: a terminal shows one time left, not one per bar."""
    import io
    import time

    import dask

    from interactive_recsys.cli._progress import job_left, run_with_bars
    from interactive_recsys.runtime import jobs

    def two_phases():
        with dask.config.set(scheduler="sync"):
            for k in (1, 2):
                jobs.compute(*[dask.delayed(time.sleep)(0.1) for _ in range(8)],
                             phase=f"fit {k}/2")

    err = io.StringIO()
    run_with_bars(two_phases, name="irs fit", rows=800, file=err, poll=0.05)
    segments = lines(err.getvalue())
    for phase in ("fit 1/2", "fit 2/2"):
        drawn = [s for s in segments if f"irs fit: {phase}:" in s]
        assert drawn and "800/800 rows" in drawn[-1] and "left" not in drawn[-1], drawn
        assert any("left" in s for s in drawn[:-1]), drawn  # while it ran
    assert all(len(re.findall(r"\bleft\b", s)) <= 1 for s in segments)
    # the estimate it shows: fit 1/2 a quarter done after 3 s: 9 s more, then 12 s for fit 2/2
    phase = jobs.Phase("fit 1/2", total=8, observed=2, started=0.0)
    assert job_left([phase], 800, 3.0) == "about 21 s left (phase 1 of 2)"
