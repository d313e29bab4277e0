"""The input of ``irs criteo`` / ``criteo_to_torchrec`` (issue 50, items 4, 8, 11, 12): the
day files are checked before any read. A day that is a folder or a FIFO, two files of one
day, a ``--days`` range as wide as 10**11 and a URL each end in an error that names the
input and the fix, at once."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading

import pytest

from interactive_recsys.cli._input import criteo_paths
from interactive_recsys.cli._main import main
from interactive_recsys.datasets import criteo_to_torchrec
from interactive_recsys.datasets._criteo_input import criteo_input_files, days_text, parse_days
from interactive_recsys.errors import DatasetError, ParameterError
from tests.helpers import HANG_S

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
LINE = "\t".join(["1", "5"] + ["1"] * 12 + ["68fd1e64"] * 26) + "\n"


def _folder(tmp_path, *names: str) -> str:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in names:
        (folder / name).write_text(LINE)
    return str(folder)


def test_days_are_ranges_never_listed():
    assert parse_days("5,0-2,3") == [(0, 3), (5, 5)]
    assert parse_days(" 1 - 2 , 2-4,9") == [(1, 4), (9, 9)]
    assert parse_days([7, 1, 2, 2]) == [(1, 2), (7, 7)]
    assert parse_days(None) is None
    assert parse_days("0-99999999999") == [(0, 99999999999)]
    assert days_text(parse_days("0-3,5,7-9")) == "0-3,5,7-9"
    for bad in ("3-1", "a", "1,,2", "-1", ""):
        with pytest.raises(ParameterError, match="days must look like '0-23'"):
            parse_days(bad)
    with pytest.raises(ParameterError, match="integers >= 0"):
        parse_days([1, -2])


def test_days_pick_files_and_a_missing_day_is_named(tmp_path):
    folder = _folder(tmp_path, "day_0", "day_1", "day_2", "day_5")
    assert [s for _, s in criteo_input_files(folder, parse_days("1-2,5"))] == [
        "day_1",
        "day_2",
        "day_5",
    ]
    assert [s for _, s in criteo_input_files(folder)] == ["day_0", "day_1", "day_2", "day_5"]
    with pytest.raises(DatasetError) as exc:
        criteo_input_files(folder, parse_days("2-4"))
    assert str(exc.value).startswith(
        f"Criteo input {folder!r} has no day_3, day_4 files: "
        "--days '2-4' asks for 2 day(s) it does not have (days "
        "found: 0-2,5). Pick days that exist, e.g. --days 0-2,5."
    )


def _limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_huge_days_range_is_checked_without_listing_it(tmp_path):
    """10**11 days would take terabytes as a set: the range is compared with the days
    there are. Run in a process limited to 2 GiB, so a regression fails, not the machine."""
    folder = _folder(tmp_path, *(f"day_{d}" for d in range(24)))
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "interactive_recsys.cli",
            "criteo",
            folder,
            str(tmp_path / "out"),
            "--days",
            "0-99999999999",
            "--local",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_S,
        preexec_fn=_limited_memory,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(
        f"irs: error: Criteo input {folder!r} has no day_24, day_25, day_26 and 99,999,999,973 "
        "more files: --days '0-99999999999' asks for 99,999,999,976 day(s) it does not have "
        "(days found: 0-23). Pick days that exist, e.g. --days 0-23."
    ), out.stderr
    assert not (tmp_path / "out").exists()


def test_a_day_that_is_a_folder_is_named_as_one(tmp_path):
    folder = _folder(tmp_path, "day_1")
    os.mkdir(os.path.join(folder, "day_0"))
    with pytest.raises(DatasetError, match=r"'.*day_0' is a folder, not a file: each day of"):
        criteo_input_files(folder)
    assert [s for _, s in criteo_input_files(folder, parse_days("1"))] == ["day_1"]


@pytest.mark.parametrize(
    "names", [("day_0", "day_00"), ("day_0", "day_0.gz"), ("day_01", "day_1.bz2")]
)
def test_two_files_of_one_day_are_refused_with_both_names(tmp_path, names):
    folder = _folder(tmp_path, *names, "day_7")
    day = int(names[0].split("_")[1])
    with pytest.raises(DatasetError) as exc:
        criteo_input_files(folder)
    text = str(exc.value)
    assert f"has 2 files of day {day}: {names[0]!r} and {names[1]!r}" in text
    assert "one would be dropped" in text
    assert [s for _, s in criteo_input_files(folder, parse_days("7"))] == ["day_7"]


def test_a_fifo_day_is_refused_at_once_as_irs_run_refuses_it(tmp_path, capsys):
    folder = _folder(tmp_path, "day_1")
    os.mkfifo(os.path.join(folder, "day_0"))
    result: dict[str, int] = {}
    worker = threading.Thread(
        target=lambda: result.update(
            code=main(["criteo", folder, str(tmp_path / "out"), "--local", "--quiet"])
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    if worker.is_alive():  # it reads the pipe: give it an end, so that the test ends
        with open(os.path.join(folder, "day_0"), "w"):
            pass
        worker.join(60)
        pytest.fail("irs criteo waited on the FIFO day_0")
    assert result["code"] == 2
    err = capsys.readouterr().err
    assert "day_0' is a FIFO (named pipe), not a regular file" in err
    assert not (tmp_path / "out").exists()
    # irs run --input-format criteo finds its files so, and refuses the folder alike
    with pytest.raises(DatasetError, match="day_0' is a FIFO \\(named pipe\\), not a regular"):
        criteo_paths([folder])


def test_a_url_is_listed_on_its_store_and_a_missing_folder_named(tmp_path, capsys):
    """Day files on an object store (here fsspec's memory store) are listed there; a folder
    that is not there is named (the tests against moto's S3 server read and write them)."""
    import fsspec

    fs = fsspec.filesystem("memory")
    for name in ("day_1", "day_0.gz", "notes.txt"):
        fs.pipe(f"/irs-criteo-input/raw/{name}", b"x")
    assert criteo_input_files("memory://irs-criteo-input/raw") == [
        ("memory://irs-criteo-input/raw/day_0.gz", "day_0"),
        ("memory://irs-criteo-input/raw/day_1", "day_1")]
    url = "memory://irs-criteo-input/none"
    with pytest.raises(DatasetError, match=f"Criteo input {url!r} does not exist or is empty"):
        criteo_to_torchrec(url, tmp_path / "out", progress=False)
    assert main(["criteo", url, str(tmp_path / "out"), "--local"]) == 2
    assert "does not exist or is empty" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_file_url_is_the_local_file(tmp_path):
    folder = _folder(tmp_path, "day_0")
    assert criteo_input_files(f"file://{folder}") == [(os.path.join(folder, "day_0"), "day_0")]
