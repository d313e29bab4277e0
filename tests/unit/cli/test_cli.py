"""The `irs` command line: the demo main job and applying a saved workflow."""

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from interactive_recsys.cli import _main as cli


def test_demo_in_process_then_run_the_saved_workflow(tmp_path, capsys):
    assert cli.main(["demo", "--rows", "20000", "--local", "--quiet",
                     "--output", str(tmp_path / "demo")]) == 0
    printed = capsys.readouterr().out
    assert "Processed 20,000 rows" in printed and "C3:" in printed
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert summary["rows"] == 20000
    processed = pq.read_table(tmp_path / "demo" / "processed")
    assert processed.num_rows == 20000
    assert processed.column_names[:2] == ["C1", "C2"] and "label" in processed.column_names
    assert summary["embedding_sizes"]["C1"][0] == max(processed["C1"].to_pylist()) + 1 or \
        summary["embedding_sizes"]["C1"][0] > max(processed["C1"].to_pylist())
    assert cli.main(["run", "--workflow", str(tmp_path / "demo" / "workflow"), "--local",
                     "--input", str(tmp_path / "demo" / "input"),
                     "--output", str(tmp_path / "again")]) == 0
    assert pq.read_table(tmp_path / "again").equals(processed)


@pytest.mark.slow
def test_demo_on_a_local_cluster(tmp_path):
    out = subprocess.run([sys.executable, "-m", "interactive_recsys.cli", "demo", "--rows",
                          "30000", "--workers", "2", "--memory-limit", "1GB", "--output",
                          str(tmp_path / "d")], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert "on 2 workers at tcp://127.0.0.1:" in out.stdout
    assert pq.read_table(tmp_path / "d" / "processed").num_rows == 30000


def test_help_and_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "demo" in text and "run" in text
    code = cli.main(["run", "--workflow", str(tmp_path), "--input", "x", "--output", "y",
                     "--local"])
    assert code == 2
    assert "holds no workflow.json" in capsys.readouterr().err


def test_names_the_cli_imports_on_first_use_resolve():
    """``cli`` loads the workflow layer lazily; its names still import as before."""
    from interactive_recsys.cli._main import Dataset, Workflow, standard_criteo_workflow
    from interactive_recsys.datasets._criteo_workflow import standard_criteo_workflow as defined

    assert standard_criteo_workflow is defined
    assert (Workflow.__module__, Dataset.__module__) == ("interactive_recsys.workflow._workflow",
                                                          "interactive_recsys.io._dataset")


def test_irs_criteo_help_says_what_is_kept_and_when_it_goes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["criteo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--plan", "--restart", "--no-space-check",
                  "keeps its finished work", "redoes only what was not finished",
                  "thrown away by --restart, by `irs clean OUTPUT` once the killed run's "
                  "process is gone", "--storage-options",
                  "the workers read their byte ranges from the store",
                  "the output's mirror, under the system's temporary folder"):
        assert words in text, words
