"""A killed ``irs criteo`` resumes (issue 54): the run is killed (SIGKILL of its whole process
group) at a named point, through the test hook ``IRS_CRITEO_TEST_PAUSE``, and run again. The
rerun's output must be the bytes of an uninterrupted run, and it must not redo the units of
work the killed run recorded: the task functions are counted as they are called."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import interactive_recsys
from interactive_recsys.cli._main import main
from interactive_recsys.datasets import _criteo_plan as plans
from interactive_recsys.datasets import _criteo_torchrec as ct
from interactive_recsys.datasets import criteo_to_torchrec, synthetic_criteo
from interactive_recsys.datasets._criteo_input import criteo_input_files
from interactive_recsys.datasets._criteo_resume import (
    FORMAT_VERSION,
    PAUSE_ENV,
    Ledger,
    recorded,
)
from interactive_recsys.datasets._criteo_tsv import write_criteo_tsv
from interactive_recsys.errors import DatasetError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(interactive_recsys.__file__)))
ROWS = 1500
# small blocks, ranges and chunks: day_0 and day_1 (about 360 KB each) are cut in 4 ranges of
# several blocks, day_2.gz is one part mapped in 3 chunks
OPTIONS = {"frequency_threshold": 2, "block_size": 16 << 10, "chunk_rows": 500,
           "range_bytes": 96 << 10, "progress": False}
PHASE_TASKS = {"parse": "_parse_range", "join": "_join_day", "dense": "_dense_part",
               "fit": "_lookup_file", "map": "_map_rows"}


def _write_days(folder: Path, seed: int = 0) -> None:
    folder.mkdir()
    for d in range(3):
        write_criteo_tsv(synthetic_criteo(ROWS, seed=seed + d, path=str(folder.parent / f"pq{d}"),
                                          profile="kaggle"), str(folder / f"day_{d}"))
        shutil.rmtree(folder.parent / f"pq{d}")
    with open(folder / "day_2", "rb") as src, gzip.open(folder / "day_2.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(folder / "day_2")


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("resume") / "in"
    _write_days(folder)
    return folder


def _digests(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())
            if p.suffix == ".npy"}


def _same_fields(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("seconds", "cluster", "units",
                                                          "output")}


@pytest.fixture(scope="module")
def reference(days, tmp_path_factory) -> tuple[dict, dict]:
    out = tmp_path_factory.mktemp("reference") / "out"
    summary = criteo_to_torchrec(days, out, **OPTIONS)
    assert summary["units"]["parse"] == {"kept": 0, "done": 9}  # 4 + 4 ranges + 1 gz day
    return _digests(out), summary


def _killed_at(point: str, command: list[str], out: Path) -> Path:
    """Run ``command`` in a new session until it pauses at ``point``, SIGKILL its process
    group, and return the temporary folder it left beside ``out``."""
    paused = out.parent / f"paused-{point.replace(':', '-')}"
    env = dict(os.environ, **{PAUSE_ENV: point, PAUSE_ENV + "D": str(paused)},
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(command, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240  # a hang guard, not a timing check
    while not paused.exists():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {point}: {proc.communicate()[1].decode()[-2000:]}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the run never reached {point}")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    (temp,) = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-")]
    assert not out.exists()
    return temp


def _python_run(days: Path, out: Path, **options) -> list[str]:
    code = ("from interactive_recsys.datasets import criteo_to_torchrec as run; "
            f"run({str(days)!r}, {str(out)!r}, **{dict(OPTIONS, **options)!r})")
    return [sys.executable, "-c", code]


def _recorded_units(temp: Path) -> dict[str, int]:
    """Per phase, the units whose marker the killed run wrote."""
    units = temp / "_staging" / "units"
    names = [p.name for p in units.glob("*.json")] if units.is_dir() else []
    return {phase: sum(n.startswith(phase + ".") for n in names) for phase in PHASE_TASKS}


@pytest.fixture
def calls(monkeypatch) -> dict[str, int]:
    """How often each phase's task function really runs in this process."""
    counted = dict.fromkeys(PHASE_TASKS, 0)
    for phase, name in PHASE_TASKS.items():
        real = getattr(ct, name)

        def counting(*args, real=real, phase=phase):
            counted[phase] += 1
            return real(*args)

        monkeypatch.setattr(ct, name, counting)
    return counted


POINTS = ["parse:day_1.2", "count:day_0.1", "join:day_1", "join:day_2", "dense:day_0.1",
          "fit:C3", "map:day_1.0", "map:day_2.1", "summary", "publish"]


@pytest.mark.parametrize("point", POINTS)
def test_a_run_killed_at_any_point_resumes_to_the_same_bytes(point, days, reference, calls,
                                                             tmp_path):
    out = tmp_path / "out"
    temp = _killed_at(point, _python_run(days, out), out)
    recorded_before = _recorded_units(temp)
    summary = criteo_to_torchrec(days, out, **OPTIONS)
    digests, whole = reference
    assert _digests(out) == digests  # the same bytes as an uninterrupted run
    assert _same_fields(summary) == _same_fields(whole)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    if point in ("summary", "publish"):  # everything was done: only the publish is left
        assert summary["units"] == {"publish": {"kept": 1, "done": 0}}
        assert calls == dict.fromkeys(PHASE_TASKS, 0)
        return
    total = {p: u["kept"] + u["done"] for p, u in whole["units"].items()}
    for phase in PHASE_TASKS:  # the recorded units are kept, and only the others done
        assert summary["units"][phase] == {"kept": recorded_before[phase],
                                           "done": total[phase] - recorded_before[phase]}
        assert calls[phase] == total[phase] - recorded_before[phase]
    killed_phase = point.split(":")[0].replace("count", "parse")
    assert summary["units"][killed_phase]["done"] >= 1  # the unit killed half-way: again


def test_a_changed_day_or_threshold_is_done_again_not_reused(days, tmp_path, calls):
    folder = tmp_path / "in"
    shutil.copytree(days, folder)
    out = tmp_path / "out"
    temp = _killed_at("join:day_0", _python_run(folder, out), out)  # every range parsed
    assert _recorded_units(temp)["parse"] == 9
    with open(folder / "day_0", "a") as f:  # day_0 changes: one more line
        f.write("\t".join(["1", "5"] + [""] * 12 + ["abc"] * 26) + "\n")
    summary = criteo_to_torchrec(folder, out, **dict(OPTIONS, frequency_threshold=3))
    assert summary["changed"] == ["day_0 changed (size or modification time)",
                                  "frequency_threshold 2 -> 3"]
    # kept: the 4 ranges of day_1 and day_2.gz; day_0's 4 were made from other bytes
    assert summary["units"]["parse"] == {"kept": 5, "done": 4}
    assert calls["parse"] == 4
    assert summary["units"]["fit"] == {"kept": 0, "done": 26}  # the plan changed: all again
    assert calls["fit"] == 26
    criteo_to_torchrec(folder, tmp_path / "fresh", **dict(OPTIONS, frequency_threshold=3))
    assert _digests(out) == _digests(tmp_path / "fresh")
    assert summary["rows"] == 3 * ROWS + 1


def test_the_cli_resumes_restarts_and_clean_throws_the_work_away(days, tmp_path, capsys):
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "interactive_recsys.cli", "criteo", str(days), str(out),
           "--local", "--quiet", "--frequency-threshold", "2"]
    run = ["criteo", str(days), str(out), "--local", "--quiet", "--frequency-threshold", "2"]
    temp = _killed_at("map:day_1.0", cli, out)
    recorded_before = _recorded_units(temp)
    assert main([*run, "--plan"]) == 0  # the kept work counts as disk already taken
    text = capsys.readouterr().out
    assert "already held by a killed run's work" in text and not out.exists()
    disk = plans.criteo_plan(criteo_input_files(days), out)["disk"]
    held = sum(p.stat().st_blocks * 512 for p in temp.rglob("*") if p.is_file())
    assert disk["kept"] == held > 0
    assert disk["need"] == disk["output"] + disk["staging"] - held
    assert main(run) == 0
    text = capsys.readouterr().out
    assert (f"resumed a killed run: kept parse 3/3, join 3/3, dense 3/3, fit 26/26, map "
            f"{recorded_before['map']}/3 units of work") in text
    reference = _digests(out)

    shutil.rmtree(out)
    _killed_at("dense:day_0.0", cli, out)
    assert main([*run, "--restart"]) == 0  # from zero: nothing kept, nothing left behind
    assert "resumed" not in capsys.readouterr().out
    assert _digests(out) == reference
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []

    shutil.rmtree(out)
    temp = _killed_at("fit:C1", cli, out)
    assert main(["clean", str(out)]) == 0
    assert (f"removed {temp} (the work a killed irs criteo kept to resume: its next run "
            "starts from zero)") in capsys.readouterr().out
    assert not temp.exists()
    assert main(run) == 0
    assert "resumed" not in capsys.readouterr().out
    assert _digests(out) == reference


def test_a_run_on_a_cluster_killed_with_its_workers_resumes(days, reference, tmp_path):
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "interactive_recsys.cli", "criteo", str(days), str(out),
           "--workers", "2", "--memory-limit", "1GB", "--quiet", "--frequency-threshold", "2"]
    temp = _killed_at("map:day_0.0", cli, out)  # paused inside a worker process
    assert _recorded_units(temp)["fit"] == 26  # recorded by the workers themselves
    summary = criteo_to_torchrec(days, out, frequency_threshold=2, progress=False)
    assert summary["units"]["fit"] == {"kept": 26, "done": 0}
    assert _digests(out) == reference[0]  # the ranges and chunks do not change the bytes


def test_a_marker_counts_only_whole_and_of_the_same_key_and_version(tmp_path):
    plan = {"format": FORMAT_VERSION, "inputs": []}
    ledger = Ledger(str(tmp_path), plan)
    consumed = tmp_path / "raw.npy"
    consumed.write_bytes(b"x")
    assert recorded(len, ledger.marker("dense.day_0.0"), "k", [str(consumed)], "abc") == 3
    assert not consumed.exists()  # removed once the unit was recorded
    again = Ledger(str(tmp_path), plan)
    assert again.kept_result("dense.day_0.0", "k") == (True, 3)
    assert again.kept_result("dense.day_0.0", "other key") == (False, None)
    marker = Path(again.marker("dense.day_0.0"))
    record = json.loads(marker.read_text())
    marker.write_text(json.dumps(dict(record, version=FORMAT_VERSION + 1)))
    assert again.kept_result("dense.day_0.0", "k") == (False, None)
    marker.write_text(json.dumps(record)[:-5])  # half-written
    assert again.kept_result("dense.day_0.0", "k") == (False, None)
    marker.write_text(json.dumps(record))
    changed = Ledger(str(tmp_path), dict(plan, inputs=[{"stem": "day_0"}]))
    assert not changed.same_plan and changed.changes == ["days added: day_0"]
    # with another plan a unit is kept only if the files its result names are all there
    assert changed.kept_result("dense.day_0.0", "k") == (False, None)
    assert changed.kept_result("dense.day_0.0", "k", lambda r: [str(tmp_path)]) == (True, 3)
    assert changed.kept_result("dense.day_0.0", "k", lambda r: [str(consumed)]) == (False, None)


def test_ctrl_c_keeps_the_work_for_the_next_call_in_the_same_process(days, reference,
                                                                    tmp_path, monkeypatch):
    real, seen = ct._map_rows, []

    def interrupted(*args):
        seen.append(args)
        if len(seen) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(ct, "_map_rows", interrupted)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        criteo_to_torchrec(days, out, **OPTIONS)
    (temp,) = [p for p in tmp_path.iterdir() if p.name.startswith(".out.tmp-")]
    recorded_before = _recorded_units(temp)
    monkeypatch.setattr(ct, "_map_rows", real)
    summary = criteo_to_torchrec(days, out, **OPTIONS)  # this process: its owner released it
    assert summary["units"]["fit"] == {"kept": 26, "done": 0}
    assert summary["units"]["map"]["kept"] == recorded_before["map"] >= 1
    assert _digests(out) == reference[0]


def test_an_error_of_the_resumed_run_removes_the_work(days, tmp_path):
    folder = tmp_path / "in"
    shutil.copytree(days, folder)
    out = tmp_path / "out"
    _killed_at("fit:C1", _python_run(folder, out), out)
    with open(folder / "day_1", "a") as f:
        f.write("\t".join(["0"] + ["1"] * 13 + ["zz"] + ["a"] * 25) + "\n")
    with pytest.raises(DatasetError, match=r"Column 'C1' of 'day_1' holds 'zz'"):
        criteo_to_torchrec(folder, out, **OPTIONS)
    assert not out.exists()
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
