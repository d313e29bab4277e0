"""The loader's sources against an output written again while they read it (issue 50, item 3).

A local overwrite swaps the output folder atomically and keeps the file names, so a loader
that reopened its listed files by path read the new output's files after the swap: an
epoch of old and new rows. Every test here writes an *old* output (``x == 1.0``, row ids
``0..``) with the project's writer, reads part of an epoch, writes a *new* output over it
(``x == 2.0``, row ids from ``NEW_IDS``), and finishes the epoch: it must give only old
rows, all of them or up to the "make the Loader again" error; never a new row.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError
from interactive_recsys.loader import _reader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROWS, BATCH, NEW_IDS = 1200, 100, 1_000_000
TAGS = {"c": ["categorical"], "x": ["continuous"], "y": ["target"]}

WRITER = textwrap.dedent("""
    import sys

    import numpy as np
    import pandas as pd

    import interactive_recsys as irs

    def write_output(path, value, rows, files, first_id):
        frame = pd.DataFrame({"c": np.arange(rows) % 7, "x": np.full(rows, value),
                              "y": np.arange(rows) % 2,
                              "row_id": first_id + np.arange(rows)})
        irs.Dataset(frame, tags={"c": ["categorical"], "x": ["continuous"],
                                 "y": ["target"]}).to_parquet(
            path, overwrite=True, out_files_per_proc=files, row_group_size=50)

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


def fitted_workflow(path: str) -> irs.Workflow:
    wf = irs.Workflow(
        (["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing(0.0)) + ["y", "row_id"]
    )
    wf.fit(irs.Dataset(path, tags={"y": ["target"]}))
    return wf


def rows_of(batch) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(batch.dense[:, 0]), np.asarray(batch.extras["row_id"])


def finish_epoch(it, seen: list) -> bool:
    """Read the rest of the epoch into ``seen``; whether it stopped with the error."""
    try:
        for batch in it:
            seen.append(rows_of(batch))
    except DatasetError as exc:
        assert "was written again" in str(exc) and "Make the Loader again" in str(exc)
        return True
    return False


def assert_only_old_rows(seen: list, stopped: bool) -> None:
    x = np.concatenate([s[0] for s in seen])
    ids = np.concatenate([s[1] for s in seen])
    assert set(x.tolist()) == {1.0}, f"rows of the new output were read: {sorted(set(x))}"
    assert ids.max() < ROWS and len(np.unique(ids)) == len(ids)  # old rows, each once
    if not stopped:
        assert sorted(ids.tolist()) == list(range(ROWS))  # the whole old output


@pytest.mark.parametrize("online", [False, True], ids=["plain", "online"])
@pytest.mark.parametrize("readers", [0, 2])
def test_an_overwrite_by_another_process_during_an_epoch_is_never_mixed(tmp_path, online, readers):
    path = write_old(str(tmp_path / "out"))
    extra = {"workflow": fitted_workflow(path)} if online else {}
    loader = irs.Loader(
        path, BATCH, shuffle=False, output="numpy", extra_cols=["row_id"], readers=readers, **extra
    )
    it = iter(loader)
    seen = [rows_of(next(it)) for _ in range(3)]
    write_new(path, process=True)
    stopped = finish_epoch(it, seen)
    assert_only_old_rows(seen, stopped)
    assert stopped  # the writer removes the old files at once: the loader cannot go on
    again = irs.Loader(path, BATCH, shuffle=False, output="numpy", extra_cols=["row_id"], **extra)
    ids = np.concatenate([rows_of(b)[1] for b in again])
    assert sorted(ids.tolist()) == list(range(NEW_IDS, NEW_IDS + ROWS))  # made again: new


@pytest.mark.parametrize("files", [2, 4, 7], ids=["fewer-files", "same-files", "more-files"])
@pytest.mark.parametrize("source", ["folder", "glob", "list"])
def test_an_overwrite_with_another_file_count_is_never_mixed(tmp_path, files, source):
    path = write_old(str(tmp_path / "out"))
    parts = sorted(str(p) for p in (tmp_path / "out").glob("part.*.parquet"))
    named = {"folder": path, "glob": path + "/part.*.parquet", "list": parts}[source]
    loader = irs.Loader(
        named,
        BATCH,
        shuffle=True,
        seed=3,
        shuffle_window=2 * BATCH,
        output="numpy",
        extra_cols=["row_id"],
    )
    it = iter(loader)
    seen = [rows_of(next(it)) for _ in range(3)]
    write_new(path, files=files, rows=ROWS + 150)
    assert_only_old_rows(seen, finish_epoch(it, seen))


def test_a_loader_over_a_dataset_is_never_mixed(tmp_path):
    path = write_old(str(tmp_path / "out"))
    wf = fitted_workflow(path)
    for make in (
        lambda: irs.Dataset(path, part_size="8KB"),
        lambda: wf.transform(irs.Dataset(path, part_size="8KB")),
    ):
        write_old(path)  # then the Dataset: one opened before a write refuses to read
        data = make()
        assert data.npartitions > 4
        it = iter(irs.Loader(data, BATCH, shuffle=False, output="numpy", extra_cols=["row_id"]))
        seen = [rows_of(next(it)) for _ in range(3)]
        write_new(path)
        stopped = finish_epoch(it, seen)
        assert_only_old_rows(seen, stopped)
        assert stopped


def test_a_write_beside_the_output_does_not_stop_the_loader(tmp_path):
    path = write_old(str(tmp_path / "out"))
    it = iter(irs.Loader(path, BATCH, shuffle=False, output="numpy", extra_cols=["row_id"]))
    seen = [rows_of(next(it)) for _ in range(3)]
    write_new(str(tmp_path / "other"))  # another output in the same parent folder
    assert not finish_epoch(it, seen)
    assert_only_old_rows(seen, stopped=False)


def test_an_output_replaced_while_the_loader_lists_it_is_listed_again(tmp_path, monkeypatch):
    path = write_old(str(tmp_path / "out"))
    listings = []
    list_files = _reader._files_and_schema

    def listed_then_replaced(*args, **kwargs):
        found = list_files(*args, **kwargs)
        listings.append(len(found[0]))
        if len(listings) == 1:  # the old files listed, then the new output swapped in
            write_new(path, files=7, rows=ROWS + 150)
        return found

    monkeypatch.setattr(_reader, "_files_and_schema", listed_then_replaced)
    loader = irs.Loader(path, BATCH, shuffle=False, output="numpy", extra_cols=["row_id"])
    assert listings == [4, 7]
    x, ids = (np.concatenate(a) for a in zip(*(rows_of(b) for b in loader), strict=True))
    assert set(x.tolist()) == {2.0}
    assert sorted(ids.tolist()) == list(range(NEW_IDS, NEW_IDS + ROWS + 150))


def test_an_output_replaced_at_every_listing_is_refused(tmp_path, monkeypatch):
    path = write_old(str(tmp_path / "out"))
    list_files = _reader._files_and_schema

    def always_replaced(*args, **kwargs):
        found = list_files(*args, **kwargs)
        write_new(path)
        return found

    monkeypatch.setattr(_reader, "_files_and_schema", always_replaced)
    with pytest.raises(
        DatasetError,
        match=f"written again while the Loader was listing it, {_reader.LIST_ATTEMPTS} times",
    ):
        irs.Loader(path, BATCH, output="numpy")


def test_a_cached_epoch_keeps_the_output_it_read(tmp_path):
    path = write_old(str(tmp_path / "out"))
    loader = irs.Loader(
        path, BATCH, shuffle=True, output="numpy", extra_cols=["row_id"], cache=True, epochs=2
    )
    it = iter(loader)
    seen = [rows_of(next(it)) for _ in range(ROWS // BATCH)]  # the first epoch, cached
    write_new(path)
    assert not finish_epoch(it, seen)  # the second epoch: from the cache, the old rows
    x = np.concatenate([s[0] for s in seen])
    ids = np.concatenate([s[1] for s in seen])
    assert set(x.tolist()) == {1.0} and sorted(ids.tolist()) == sorted(2 * list(range(ROWS)))


def test_plain_parquet_files_of_another_tool_are_read_as_they_are(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    frame = pd.DataFrame({"x": np.arange(10.0), "y": np.zeros(10)})
    frame.to_parquet(folder / "a.parquet")
    loader = irs.Loader(
        str(folder), 4, shuffle=False, output="numpy", cont_cols=["x"], label_cols=["y"]
    )
    assert loader.source._pins.folders == set()  # no manifest: nothing to hold
    assert np.concatenate([b.dense[:, 0] for b in loader]).tolist() == list(range(10))
