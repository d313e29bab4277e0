"""The raw Criteo reader's errors name the input (issue 50, item 4): a compressed day file
that is truncated or corrupt is said to be so, with the file and how to check it, never
blamed on the output."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from interactive_recsys.datasets._criteo_tsv import check_decompresses, read_criteo_blocks
from interactive_recsys.errors import DatasetError

LINE = "\t".join(["1", "5"] + ["1"] * 12 + ["68fd1e64"] * 26) + "\n"
#: Extension, pyarrow codec and the command the error names, of each compressed kind.
KINDS = [
    (".gz", "gzip", "gzip -t"),
    (".bz2", "bz2", "bzip2 -t"),
    (".zst", "zstd", "zstd -t"),
    (".lz4", "lz4", "lz4 -t"),
]


def compressed_day(path: str, codec: str, rows: int = 5_000) -> bytes:
    """A day file of ``rows`` lines compressed with ``codec``; returns its bytes."""
    with pa.CompressedOutputStream(path, codec) as out:
        out.write((LINE * rows).encode())
    with open(path, "rb") as f:
        return f.read()


def damage(path: str, data: bytes, how: str) -> None:
    """Write ``data`` truncated at its middle, or with bytes of its middle overwritten."""
    middle = len(data) // 2
    if how == "truncated":
        data = data[:middle]
    else:
        data = (
            data[:middle]
            + bytes(b ^ 0x5A for b in data[middle : middle + 64])
            + data[middle + 64 :]
        )
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize(("ext", "codec", "check"), KINDS)
@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_a_damaged_compressed_file_is_named_as_corrupt(tmp_path, ext, codec, check, how):
    path = str(tmp_path / f"day_0{ext}")
    good = compressed_day(path, codec)
    assert sum(len(b.labels) for b in read_criteo_blocks(path)) == 5_000  # as written
    check_decompresses(path)  # a sound file passes
    damage(path, good, how)
    expected = (
        f"Criteo input {path!r} is corrupt or truncated: it cannot be decompressed to its end"
    )
    with pytest.raises(DatasetError) as exc:
        for _ in read_criteo_blocks(path, block_size=1 << 16):
            pass
    assert str(exc.value).startswith(expected)
    assert f"Download it again; check it with {check} {path!r}" in str(exc.value)
    with pytest.raises(DatasetError) as exc:
        check_decompresses(path, chunk=1 << 16)
    assert str(exc.value).startswith(expected)


def test_a_plain_file_is_not_read_by_the_check(tmp_path):
    path = tmp_path / "day_0"
    path.write_bytes(b"\xff\xfe not even text")
    check_decompresses(path)  # plain: nothing to decompress, the reader's errors apply


def test_a_folder_and_an_unreadable_file_are_named(tmp_path):
    os.mkdir(tmp_path / "day_0")
    with pytest.raises(DatasetError, match=r"'.*day_0' is a folder, not a file"):
        next(read_criteo_blocks(str(tmp_path / "day_0")))
    with pytest.raises(DatasetError, match=r"Cannot read Criteo input '.*day_9.gz' \("):
        next(read_criteo_blocks(str(tmp_path / "day_9.gz")))
