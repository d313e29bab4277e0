"""PinnedOutputs: the manifests of local outputs a reader started with, held open (issue 50,
item 3). The outputs are written by the project's writer."""

from __future__ import annotations

import gc
import os
import threading

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import DatasetError
from interactive_recsys.store._pinned import (
    HOST,
    PinnedOutputs,
    folders_of,
    rewritten_error,
    same_output,
)


def _write(path: str, value: int) -> str:
    irs.Dataset(pd.DataFrame({"x": [value] * 3})).to_parquet(path, overwrite=True)
    return path


def test_an_overwrite_is_seen_and_named(tmp_path):
    out = _write(str(tmp_path / "out"), 1)
    other = _write(str(tmp_path / "other"), 1)
    pins = PinnedOutputs("Loader")
    pins.pin([out, other])
    assert pins.folders == {out, other} and pins.changed() == []
    pins.check(out)
    _write(out, 2)
    assert pins.changed() == [out]
    pins.check(other)  # the other output is unchanged
    pins.check(None)
    for check in (lambda: pins.check(out), pins.check_all):
        with pytest.raises(
            DatasetError, match="output '.*out' was written again .* Make the Loader again"
        ):
            check()
    pins.release([out])
    assert pins.folders == {other} and pins.unheld([out]) == [out]
    pins.close()
    assert pins.folders == set()


def test_a_removed_output_counts_as_changed(tmp_path):
    out = _write(str(tmp_path / "out"), 1)
    pins = PinnedOutputs("Loader")
    pins.pin([out])
    os.remove(os.path.join(out, "_SUCCESS"))
    assert pins.changed() == [out]


def test_folders_without_a_manifest_file_are_not_held(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "_SUCCESS")  # opened without blocking, and not held
    folder = tmp_path / "folder"
    (folder / "_SUCCESS").mkdir(parents=True)
    pins = PinnedOutputs("Loader")
    done = threading.Thread(
        target=pins.pin,
        args=([str(plain), str(fifo), str(folder), str(tmp_path / "missing")],),
        daemon=True,
    )
    done.start()
    done.join(60)
    assert not done.is_alive() and pins.folders == set()
    assert pins.unheld([str(plain), str(fifo), str(folder)]) == []


def _open_on(path: str) -> int:
    """How many descriptors of this process are open on ``path``."""
    return sum(
        os.readlink(f"/proc/self/fd/{fd}") == path
        for fd in os.listdir("/proc/self/fd")
        if os.path.exists(f"/proc/self/fd/{fd}")
    )


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_the_descriptors_are_closed_with_the_pins(tmp_path):
    out = _write(str(tmp_path / "out"), 1)
    manifest = os.path.realpath(os.path.join(out, "_SUCCESS"))
    pins = PinnedOutputs("Loader")
    pins.pin([out])
    pins.pin([out])  # held once
    assert _open_on(manifest) == 1
    del pins  # garbage: its finalizer closes what it held
    assert _open_on(manifest) == 0
    loader = irs.Loader(out, 2, output="numpy", cont_cols=["x"], label_cols=[])
    assert _open_on(manifest) == 1  # the loader's source holds it
    del loader
    gc.collect()
    assert _open_on(manifest) == 0


def test_folders_of_files_and_folders(tmp_path):
    out = _write(str(tmp_path / "out"), 1)
    assert folders_of(
        [out, os.path.join(out, "part.00000.parquet"), os.path.join(out, "part.*.parquet")]
    ) == {out}


def test_the_identity_travels_and_is_checked_by_inode_on_another_machine(tmp_path):
    out = _write(str(tmp_path / "out"), 1)
    pins = PinnedOutputs("Dataset")
    pins.pin([out])
    st = os.stat(os.path.join(out, "_SUCCESS"))
    assert pins.keys == {out: (st.st_dev, st.st_ino)}
    (dev, ino), elsewhere = pins.keys[out], HOST + "-another"
    assert same_output(out, (dev, ino)) and same_output(out, (dev, ino), elsewhere)
    # another machine numbers the shared file system's device its own way: the inode decides
    assert same_output(out, (dev + 1, ino), elsewhere) and not same_output(out, (dev + 1, ino))
    assert not same_output(out, (dev, ino + 1), elsewhere)
    _write(out, 2)
    assert not same_output(out, (dev, ino)) and not same_output(out, (dev, ino), elsewhere)
    assert not same_output(str(tmp_path / "missing"), (dev, ino))
    with pytest.raises(DatasetError, match="after this Dataset was opened.*Open the Dataset again"):
        raise rewritten_error(out, "Dataset", "open")
    pins.close()
