"""Dataset's bad input is refused naming the file or column; names matching fields still read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import DatasetError
from tests.helpers import digest_tree


# ---- dataset bad inputs ----------------------------------------------------------------------
def _mixed(tmp: Path):
    return lambda: irs.Dataset(pd.DataFrame({"ok": [1, 2, 3], "mixed": [1, "x", 2.5]}))


def _csv_type_changes(tmp: Path):
    with open(tmp / "d.csv", "w") as f:
        f.write("late,b\n" + "1,x\n" * 120_000 + "oops,y\n")
    return lambda: irs.Dataset(str(tmp / "d.csv"), part_size="512KB").compute()


def _duplicate_parquet(tmp: Path):
    pq.write_table(pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["dup", "dup"]),
                   tmp / "d.parquet")
    return lambda: irs.Dataset(str(tmp / "d.parquet"))


def _internal_name(tmp: Path):
    pd.DataFrame({"__irs_shuffle_key__": [1, 2]}).to_parquet(tmp / "d.parquet")
    return lambda: irs.Dataset(str(tmp / "d.parquet"))


def _short_names(tmp: Path):
    (tmp / "d.csv").write_text("1,2,3\n4,5,6\n")
    return lambda: irs.Dataset(str(tmp / "d.csv"), names=["b", "c"], header=None)


def _empty_list(tmp: Path):
    return lambda: irs.Dataset([])


def _readme_only(tmp: Path):
    (tmp / "folder").mkdir()
    (tmp / "folder" / "readme.txt").write_text("Data will come here.\n")
    return lambda: irs.Dataset(str(tmp / "folder"))


DATASET_CASES = {  # name -> (builder, text the message must contain)
    "mixed-type object column": (_mixed, "'mixed'"),
    "csv type changes after the first block": (_csv_type_changes, "'late'"),
    "duplicate parquet column": (_duplicate_parquet, "['dup']"),
    "internal column name": (_internal_name, "'__irs_shuffle_key__'"),
    "csv names shorter than the fields": (_short_names, "d.csv"),
    "empty list of files": (_empty_list, "empty list"),
    "folder with only readme.txt": (_readme_only, "readme.txt"),
}


@pytest.mark.parametrize("case", list(DATASET_CASES))
def test_dataset_bad_input_is_named(case, tmp_path):
    builder, named = DATASET_CASES[case]
    call = builder(tmp_path)
    before = digest_tree(tmp_path)
    with pytest.raises(DatasetError) as exc:
        call()
    message = str(exc.value)
    assert named in message, message
    assert re.search(r"(Rename|Rewrite|Declare|Pass|Convert|engine=|e\.g\.)", message), message
    assert digest_tree(tmp_path) == before


def test_names_matching_the_fields_still_read(tmp_path):
    (tmp_path / "d.csv").write_text("1,2,3\n4,5,6\n")
    got = irs.Dataset(str(tmp_path / "d.csv"), names=["a", "b", "c"], header=None).compute()
    assert got["a"].tolist() == [1, 4] and got["c"].tolist() == [3, 6]
