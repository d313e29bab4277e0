"""An ``irs.Dataset`` over a local output written again while it reads (issue 50, item 3).

A local overwrite swaps the output folder atomically and keeps the file names, so a Dataset
that reopened its listed files by path after the swap read the new output's files: rows of
two outputs. Every test here writes an *old* output (``x == 1.0``, row ids ``0..``) with the
project's writer, opens a Dataset over it, writes a *new* output over it (``x == 2.0``, row
ids from ``NEW_IDS``), and reads: it must give only old rows, all of them or up to the "open
the Dataset again" error; never a new row.
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError
from interactive_recsys.io import _dataset, _output_pins
from interactive_recsys.store import _pinned
from interactive_recsys.store._outputs import exchange
from interactive_recsys.store.storage import local_manifest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROWS, NEW_IDS, PART = 1200, 1_000_000, "2KB"
REWRITTEN = (
    r"output '.*out' was written again .* after this Dataset was opened.*Open the Dataset again"
)

WRITER = textwrap.dedent("""
    import sys

    import numpy as np
    import pandas as pd

    import interactive_recsys as irs

    def write_output(path, value, rows, files, first_id):
        frame = pd.DataFrame({"x": np.full(rows, value), "row_id": first_id + np.arange(rows)})
        irs.Dataset(frame).to_parquet(path, overwrite=True, out_files_per_proc=files,
                                      row_group_size=50)

    if __name__ == "__main__":
        path, value, rows, files, first_id = sys.argv[1:]
        write_output(path, float(value), int(rows), int(files), int(first_id))
""")
_namespace: dict = {}
exec(compile(WRITER, "writer", "exec"), _namespace)  # the same writer, in this process
write_output = _namespace["write_output"]


def write_old(path: str) -> str:
    write_output(path, 1.0, ROWS, 4, 0)
    return path


def write_new(path: str, files: int = 4, rows: int = ROWS, *, process: bool = False) -> None:
    """The new output (``x == 2.0``), by this process's writer or another process's."""
    if not process:
        write_output(path, 2.0, rows, files, NEW_IDS)
        return
    done = subprocess.run(
        [sys.executable, "-c", WRITER, path, "2.0", str(rows), str(files), str(NEW_IDS)],
        env=dict(os.environ, PYTHONPATH=ROOT),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def finish(parts, seen: list) -> bool:
    """Read the rest of ``parts`` into ``seen``; whether it stopped with the error."""
    try:
        for part in parts:
            seen.append(pd.DataFrame(part))
    except DatasetError as exc:
        assert re.search(REWRITTEN, str(exc)), str(exc)
        return True
    return False


def assert_only_old_rows(seen: list, stopped: bool) -> None:
    frame = pd.concat(seen) if seen else pd.DataFrame({"x": [], "row_id": []})
    x, ids = frame["x"].astype(float).to_numpy(), frame["row_id"].astype(int).to_numpy()
    assert set(x.tolist()) <= {1.0}, f"rows of the new output were read: {sorted(set(x))}"
    assert (ids < ROWS).all() and len(np.unique(ids)) == len(ids)  # old rows, each once
    if not stopped:
        assert sorted(ids.tolist()) == list(range(ROWS))  # the whole old output


def read_mid_way(path: str, **write) -> tuple[list, bool]:
    """A Dataset's partitions: the first one, then the output written again, then the rest."""
    ds = irs.Dataset(path, part_size=PART)
    assert ds.npartitions > 4
    parts = ds.to_iter()
    seen = [pd.DataFrame(next(parts))]
    write_new(path, **write)
    return seen, finish(parts, seen)


def test_an_overwrite_by_another_process_during_a_read_is_never_mixed(tmp_path):
    path = write_old(str(tmp_path / "out"))
    seen, stopped = read_mid_way(path, process=True)
    assert_only_old_rows(seen, stopped)
    assert stopped  # the old files left with the swap: the Dataset cannot go on
    again = irs.Dataset(path, part_size=PART).compute()  # opened again: the new output
    assert sorted(again["row_id"].tolist()) == list(range(NEW_IDS, NEW_IDS + ROWS))


def test_an_overwrite_during_a_read_on_the_cluster_is_never_mixed(tmp_path, client):
    path = write_old(str(tmp_path / "out"))
    seen, stopped = read_mid_way(path, process=True)  # partitions read by the workers
    assert_only_old_rows(seen, stopped)
    assert stopped


def test_every_read_on_the_cluster_refuses_an_output_written_again(tmp_path, client):
    path = write_old(str(tmp_path / "out"))
    dest = str(tmp_path / "dest")
    write_output(dest, 5.0, 10, 1, 0)  # an earlier output, which a failed write keeps
    wf = irs.Workflow(["x"] >> ops.FillMissing(0.0)).fit(irs.Dataset(path))
    ds = irs.Dataset(path, part_size=PART)
    transformed = wf.transform(ds)
    reads = {
        "compute": ds.compute,
        "to_ddf": ds.to_ddf().compute,
        "arrow_ddf": irs.Dataset(path, part_size=PART).arrow_ddf(["x"]).compute,
        "transform": lambda: transformed.to_parquet(dest, overwrite=True),
        "to_parquet": lambda: ds.to_parquet(dest, overwrite=True),
        "fit": lambda: irs.Workflow(["x"] >> ops.Normalize()).fit(ds),
    }
    write_new(path, process=True)
    for read in reads.values():
        with pytest.raises(DatasetError, match=REWRITTEN):
            read()
    assert sorted(irs.Dataset(dest).compute()["x"].tolist()) == [5.0] * 10, "dest changed"


@pytest.mark.parametrize("files", [2, 7], ids=["fewer-files", "more-files"])
@pytest.mark.parametrize("source", ["folder", "glob", "list"])
def test_an_overwrite_with_another_file_count_is_never_mixed(tmp_path, files, source):
    path = write_old(str(tmp_path / "out"))
    parts = sorted(str(p) for p in (tmp_path / "out").glob("part.*.parquet"))
    named = {"folder": path, "glob": path + "/part.*.parquet", "list": parts}[source]
    ds = irs.Dataset(named, part_size=PART)
    it = ds.to_iter()
    seen = [pd.DataFrame(next(it))]
    write_new(path, files=files, rows=ROWS + 150)
    stopped = finish(it, seen)
    assert_only_old_rows(seen, stopped)
    assert stopped


def test_a_write_beside_the_output_does_not_stop_the_dataset(tmp_path):
    path = write_old(str(tmp_path / "out"))
    ds = irs.Dataset(path, part_size=PART)
    it = ds.to_iter()
    seen = [pd.DataFrame(next(it))]
    write_new(str(tmp_path / "other"))  # another output in the same parent folder
    assert not finish(it, seen)
    assert_only_old_rows(seen, stopped=False)


def test_an_output_replaced_while_the_dataset_opens_is_opened_again(tmp_path, monkeypatch):
    path = write_old(str(tmp_path / "out"))
    listings = []
    expand = _dataset.expand_paths

    def listed_then_replaced(*args, **kwargs):
        found = expand(*args, **kwargs)
        listings.append(len(found))
        if len(listings) == 1:  # the old files listed, then the new output swapped in
            write_new(path, files=7, rows=ROWS + 150)
        return found

    monkeypatch.setattr(_dataset, "expand_paths", listed_then_replaced)
    frame = irs.Dataset(path, part_size=PART).compute()
    assert listings == [4, 7]
    assert set(frame["x"].tolist()) == {2.0}
    assert sorted(frame["row_id"].tolist()) == list(range(NEW_IDS, NEW_IDS + ROWS + 150))


def test_an_output_replaced_at_every_opening_is_refused(tmp_path, monkeypatch):
    path = write_old(str(tmp_path / "out"))
    expand = _dataset.expand_paths

    def always_replaced(*args, **kwargs):
        found = expand(*args, **kwargs)
        write_new(path)
        return found

    monkeypatch.setattr(_dataset, "expand_paths", always_replaced)
    with pytest.raises(
        DatasetError,
        match="written again while the Dataset was being opened, "
        f"{_output_pins.OPEN_ATTEMPTS} times in a row",
    ):
        irs.Dataset(path)


def test_a_hive_output_is_checked_from_its_subfolders(tmp_path):
    def hive(folder, value: float) -> str:
        for day in ("d1", "d2"):
            sub = folder / f"day={day}"
            sub.mkdir(parents=True)
            pd.DataFrame({"x": [value] * 50, "row_id": np.arange(50)}).to_parquet(
                sub / "part.parquet"
            )
        local_manifest(str(folder))  # the library's manifest: every file with its size
        return str(folder)

    path = hive(tmp_path / "out", 1.0)
    ds = irs.Dataset(path)
    assert sorted(ds.compute()["day"].tolist()) == ["d1"] * 50 + ["d2"] * 50
    assert exchange(hive(tmp_path / ".new", 2.0), path)  # swapped in, as an overwrite does
    with pytest.raises(DatasetError, match=REWRITTEN):
        ds.compute()


def test_folders_without_a_manifest_are_read_as_they_are(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    pd.DataFrame({"x": np.arange(10.0)}).to_parquet(folder / "a.parquet")
    pd.DataFrame({"x": np.arange(3.0)}).to_csv(tmp_path / "c.csv", index=False)
    ds, csv = irs.Dataset(str(folder)), irs.Dataset(str(tmp_path / "c.csv"))
    assert ds._outputs is None and csv._outputs is None  # nothing held
    pd.DataFrame({"x": np.arange(10.0, 20.0)}).to_parquet(folder / "a.parquet")
    assert ds.compute()["x"].tolist() == list(range(10, 20))  # read as it is, as before


def test_each_read_costs_one_stat_of_its_manifest(tmp_path, monkeypatch):
    path = write_old(str(tmp_path / "out"))
    ds = irs.Dataset(path, part_size=PART)
    stats = []
    current_key = _pinned.current_key

    def counted(folder):
        stats.append(folder)
        return current_key(folder)

    monkeypatch.setattr(_pinned, "current_key", counted)
    assert len(ds.compute()) == ROWS
    assert stats == [path] * ds.npartitions
    stats.clear()
    assert sum(len(p) for p in ds.to_iter(["x"])) == ROWS
    assert stats == [path] * ds.npartitions


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists descriptors from /proc")
def test_the_manifest_is_held_while_a_graph_of_the_dataset_lives(tmp_path):
    path = write_old(str(tmp_path / "out"))
    manifest = os.path.realpath(os.path.join(path, "_SUCCESS"))

    def held() -> int:
        links = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                links.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the descriptor of the listing itself, closed since
                pass
        return sum(link.startswith(manifest) for link in links)

    ddf = irs.Dataset(path).to_ddf()
    gc.collect()
    assert held() == 1
    del ddf
    gc.collect()
    assert held() == 0


def test_an_nvtabular_per_file_write_refuses_an_output_written_again(tmp_path):
    """``nvt.Dataset(...).to_parquet(preserve_files=True)`` opens each input file again by
    path: after the output was written again it stops, and publishes nothing."""
    import interactive_recsys.compat.nvtabular as nvt

    path = write_old(str(tmp_path / "out"))
    ds = nvt.Dataset(path, engine="parquet")
    write_new(path)  # the same file names, new rows
    dest = tmp_path / "dest"
    with pytest.raises(DatasetError, match=REWRITTEN):
        ds.to_parquet(str(dest), preserve_files=True)
    assert not dest.exists()
