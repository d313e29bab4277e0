"""A local overwrite never leaves its path without an output (issue 40, item 7).

On Linux the new folder and the old one are swapped in one atomic step
(``renameat2(RENAME_EXCHANGE)``). Where that is not available the writer renames the old
output aside and the new one into place; a writer killed between the two renames is
recovered: the next write or ``irs clean`` gives the path the complete new output."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.cli._main import main
from interactive_recsys.errors import DatasetError
from interactive_recsys.store import _outputs as outputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _frame(rows: int, start: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"x": range(start, start + rows)})


def _values(path: Path) -> list[int]:
    return sorted(irs.Dataset(str(path)).compute()["x"].tolist())


@pytest.mark.skipif(outputs._RENAMEAT2 is None,
                    reason="renameat2 is Linux-only")
def test_an_overwrite_swaps_the_folders_in_one_step(tmp_path, monkeypatch):
    out = tmp_path / "out"
    irs.Dataset(_frame(30)).to_parquet(str(out))
    seen: list[bool] = []
    real_remove = outputs.remove_path

    def remove(path, *args, **kwargs):  # the old output goes only once the new one is there
        seen.append(out.is_dir() and (out / "_SUCCESS").exists())
        return real_remove(path, *args, **kwargs)

    def no_rename(src, dst):
        raise AssertionError(f"a rename of {src} to {dst}: the path would be missing between two")

    monkeypatch.setattr(outputs, "remove_path", remove)
    monkeypatch.setattr(outputs.os, "rename", no_rename)
    irs.Dataset(_frame(12, 100)).to_parquet(str(out), overwrite=True)
    monkeypatch.undo()
    assert seen and all(seen)
    assert _values(out) == list(range(100, 112))
    assert sorted(os.listdir(tmp_path)) == ["out"]  # the old output removed, nothing left


def _killed_between_renames(tmp_path: Path) -> Path:
    """Overwrite ``out`` in a process without the atomic swap, killed (SIGKILL) right after
    it renamed the old output aside, before the new one took the path."""
    out = tmp_path / "out"
    irs.Dataset(_frame(30)).to_parquet(str(out))
    script = textwrap.dedent(f"""
        import os, signal
        import pandas as pd
        import interactive_recsys as irs
        from interactive_recsys.store import _outputs as outputs
        outputs.exchange = lambda src, dst: False  # a system without RENAME_EXCHANGE
        def killed(src, dst):
            os.kill(os.getpid(), signal.SIGKILL)
        outputs.rename_noreplace = killed
        irs.Dataset(pd.DataFrame({{"x": range(100, 112)}})).to_parquet({str(out)!r},
                                                                     overwrite=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert proc.returncode == -9
    assert not out.exists()  # the window: both outputs only under temporary names
    kinds = sorted(n.split(".")[2].split("-")[0] for n in os.listdir(tmp_path))
    assert kinds == ["old", "tmp"]
    return out


def test_irs_clean_restores_the_output_of_a_writer_killed_between_renames(tmp_path, capsys):
    out = _killed_between_renames(tmp_path)
    assert main(["clean", str(out)]) == 0
    assert _values(out) == list(range(100, 112))  # the complete new output, as being published
    assert sorted(os.listdir(tmp_path)) == ["out"]  # the old copy removed after


def test_the_next_write_restores_it_first(tmp_path):
    out = _killed_between_renames(tmp_path)
    with pytest.raises(DatasetError, match="already exists"):  # restored, so not written over
        irs.Dataset(_frame(3)).to_parquet(str(out))
    assert _values(out) == list(range(100, 112))
    irs.Dataset(_frame(3, 500)).to_parquet(str(out), overwrite=True)
    assert _values(out) == [500, 501, 502]
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_an_incomplete_temporary_is_never_restored(tmp_path):
    """A killed writer's temporary still holding its owner file was not finished: it is
    removed, not published, and the old output (if only moved aside) is not guessed at."""
    out = tmp_path / "out"
    tmp = Path(outputs._temp_name(str(out), "tmp"))
    tmp.mkdir()
    (tmp / outputs._OWNER_FILE).write_text('{"pid": 1, "host": "h", "started": 0}')
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp.with_name(tmp.name.replace(f"-{os.getpid()}-", f"-{dead}-"))
    tmp.rename(stale)
    assert outputs.recover(str(out)) is None and not out.exists()
    assert outputs.clean_stale(str(out)) == [str(stale)] and not stale.exists()
