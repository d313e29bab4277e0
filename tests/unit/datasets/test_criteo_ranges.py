"""A big plain Criteo day is cut into byte ranges on line boundaries, parsed by many tasks
and joined in file order: every line is read exactly once, in order, and the output is the
same bytes as when the whole file is one range."""

from __future__ import annotations

import gzip
import itertools
import os
import shutil

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from interactive_recsys.datasets import criteo_to_torchrec, synthetic_criteo
from interactive_recsys.datasets._criteo_tsv import (
    line_ranges,
    read_criteo_blocks,
    write_criteo_tsv,
)

LINES = st.lists(st.text("ab\t", max_size=12), min_size=1, max_size=30)


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _check_ranges(data: bytes, ranges: list[tuple[int, int]]) -> None:
    """The ranges tile the file, each starts a line and ends one (or the file), none is empty."""
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    for (_, stop), (start, _) in itertools.pairwise(ranges):
        assert stop == start
    for start, stop in ranges:
        assert stop > start
        assert start == 0 or data[start - 1:start] == b"\n"
        assert stop == len(data) or data[stop - 1:stop] == b"\n"


@settings(max_examples=150, deadline=None)
@given(lines=LINES, crlf=st.booleans(), trailing=st.booleans(),
       range_bytes=st.integers(1, 400))
def test_ranges_hold_every_line_once_in_order(tmp_path_factory, lines, crlf, trailing,
                                              range_bytes):
    end = "\r\n" if crlf else "\n"
    text = end.join(lines) + (end if trailing else "")
    if not text:
        return
    path = tmp_path_factory.mktemp("r") / "day_0"
    data = text.encode()
    path.write_bytes(data)
    ranges = line_ranges(path, range_bytes)
    _check_ranges(data, ranges)
    pieces = [data[a:b] for a, b in ranges]
    # each line (with its ending) in exactly one range, in file order
    assert [line for piece in pieces for line in piece.splitlines(keepends=True)] \
        == data.splitlines(keepends=True)
    # a range covers about range_bytes: it ends on the first line end at or after its cut
    for (start, stop), (next_start, _) in itertools.pairwise(ranges):
        cut = next(c for c in range(range_bytes, len(data) + range_bytes, range_bytes)
                   if c > start)
        assert data[cut - 1:].find(b"\n") + cut == next_start == stop


def test_cuts_on_and_off_a_newline_and_inside_a_line(tmp_path):
    path = tmp_path / "day_0"
    path.write_bytes(b"aaaa\nbbbbbbbbbb\nc\nd")  # lines start at 0, 5, 16, 18
    # cut 5 is a line start (byte 4 is a newline): the first range ends there; cut 10 is
    # inside line 2, which ends at 15; the next cut after 16 (20) is past the end
    assert line_ranges(path, 5) == [(0, 5), (5, 16), (16, 19)]
    assert line_ranges(path, 4) == [(0, 5), (5, 16), (16, 19)]  # cuts 4, 8 inside lines
    assert line_ranges(path, 6) == [(0, 16), (16, 18), (18, 19)]  # cut 12 adds nothing
    assert line_ranges(path, 1) == [(0, 5), (5, 16), (16, 18), (18, 19)]  # one line each
    assert line_ranges(path, 19) == line_ranges(path, 10**9) == [(0, 19)]
    (tmp_path / "day_1.gz").write_bytes(gzip.compress(b"x\n" * 100))
    assert line_ranges(tmp_path / "day_1.gz", 1) == [None]  # cannot be cut by offset


def _day(root, name: str, rows: int, seed: int, crlf: bool = False) -> str:
    path = os.path.join(root, name)
    write_criteo_tsv(synthetic_criteo(rows, seed=seed, path=os.path.join(root, f"pq{seed}"),
                                      profile="kaggle"), path)
    if crlf:
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data.replace(b"\n", b"\r\n")[:-2])  # and no newline at the end
    return path


def test_blocks_of_ranges_are_the_blocks_of_the_file(tmp_path):
    for crlf in (False, True):
        path = _day(str(tmp_path), f"day_{int(crlf)}", 700, seed=3, crlf=crlf)
        whole = list(read_criteo_blocks(path, block_size=1 << 16))
        ranges = line_ranges(path, 3000)
        assert len(ranges) > 30
        parts = [b for r in ranges for b in read_criteo_blocks(path, block_size=1 << 16,
                                                               byte_range=r)]
        for field in ("labels", "dense", "sparse"):
            want = np.concatenate([getattr(b, field) for b in whole])
            got = np.concatenate([getattr(b, field) for b in parts])
            assert len(want) == 700 and np.array_equal(got, want), (crlf, field)


def test_tiny_ranges_give_the_bytes_of_one_range(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for d in range(2):
        _day(str(tmp_path), f"in/day_{d}", 1500, seed=d)
    with open(folder / "day_1", "a") as f:  # a long line crosses several cuts
        f.write("\t".join(["1"] + ["7"] * 13 + ["0" * 99 + "a"] * 26) + "\n")
    whole = criteo_to_torchrec(folder, tmp_path / "whole", frequency_threshold=2,
                               progress=False)
    assert len(line_ranges(folder / "day_0", 2000)) > 100
    cut = criteo_to_torchrec(folder, tmp_path / "cut", frequency_threshold=2, progress=False,
                             range_bytes=2000, block_size=1 << 12, chunk_rows=97)
    assert cut["files"] == whole["files"] == {"day_0": 1500, "day_1": 1501}
    assert cut["num_embeddings"] == whole["num_embeddings"]
    names = sorted(os.listdir(tmp_path / "whole"))
    assert names == sorted(os.listdir(tmp_path / "cut"))
    assert len([n for n in names if n.endswith(".npy")]) == 8
    for name in names:
        if name.endswith(".npy"):
            assert _read(tmp_path / "cut" / name) == _read(tmp_path / "whole" / name), name


def test_on_a_cluster_a_gz_day_is_one_task_and_a_plain_day_many(tmp_path, client):
    folder = tmp_path / "in"
    folder.mkdir()
    for d in range(2):
        _day(str(tmp_path), f"in/day_{d}", 800, seed=d)
    whole = criteo_to_torchrec(folder, tmp_path / "whole", frequency_threshold=2,
                               progress=False)
    with open(folder / "day_0", "rb") as src, gzip.open(folder / "day_0.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(folder / "day_0")
    summary = criteo_to_torchrec(folder, tmp_path / "cut", frequency_threshold=2,
                                 progress=False, client=client, range_bytes=10_000)
    assert summary["cluster"] == "2 workers" and summary["files"] == whole["files"]
    for name in sorted(os.listdir(tmp_path / "whole")):
        if name.endswith(".npy"):
            assert _read(tmp_path / "cut" / name) == _read(tmp_path / "whole" / name), name
