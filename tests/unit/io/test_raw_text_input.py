"""Raw text files read with the defaults: headerless or differently separated data is refused
with the fix (Criteo's raw shape -> ``read_criteo``), never opened as columns named after the
first row. Real files written here; messages checked for the file, the evidence and the fix."""

from __future__ import annotations

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import DatasetError
from interactive_recsys.ui.builder._builder import PipelineBuilder


@pytest.fixture(scope="module")
def raw_criteo(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Kaggle's ``train.txt`` layout: 40 tab-separated fields, no header, empty = missing."""
    folder = tmp_path_factory.mktemp("raw")
    parquet = irs.datasets.synthetic_criteo(rows=300, seed=2, path=folder / "pq")
    frame = pd.read_parquet(parquet)[irs.datasets.CRITEO_COLUMNS]
    counters = [f"I{i}" for i in range(1, 14)]
    frame[counters] = frame[counters].round().astype("Int64")  # the raw file's integers
    path = folder / "train.txt"
    frame.to_csv(path, sep="\t", header=False, index=False, na_rep="")
    return str(path)


@pytest.mark.parametrize("sep", [",", "\t"])
def test_raw_criteo_points_at_read_criteo(raw_criteo: str, sep: str) -> None:
    with pytest.raises(DatasetError) as info:
        irs.Dataset(raw_criteo, sep=sep)
    message = str(info.value)
    assert raw_criteo in message and "raw Criteo" in message
    assert "irs.datasets.read_criteo(path)" in message and "40 tab-separated" in message
    ds = irs.datasets.read_criteo(raw_criteo)  # the fix works
    assert ds.schema.names == irs.datasets.CRITEO_COLUMNS and ds.num_rows == 300


def test_the_studio_shows_the_raw_criteo_message_next_to_the_path(raw_criteo: str) -> None:
    builder = PipelineBuilder(raw_criteo)
    assert builder.model is None  # nothing opened as one garbage column
    area = builder.feedback.areas["dataset"].value
    assert "read_criteo" in area and "irs-msg-error" in area


def test_headerless_tsv_gets_sep_and_header_none(tmp_path) -> None:
    path = tmp_path / "ratings.tsv"
    path.write_text("196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n")
    with pytest.raises(DatasetError) as info:
        irs.Dataset(str(path))
    message = str(info.value)
    assert str(path) in message
    assert "4 fields with '\\t'" in message and "field 1 is '196'" in message
    assert "sep='\\t', header=None, names=[<4 names>]" in message
    names = ["user", "item", "rating", "time"]
    ds = irs.Dataset(str(path), sep="\t", header=None, names=names)  # the fix works
    assert ds.schema.names == names and ds.compute()["user"].tolist() == [196, 186, 22]


def test_headerless_csv_gets_header_none_and_a_tsv_with_a_header_gets_sep(tmp_path) -> None:
    raw = tmp_path / "raw.csv"
    raw.write_text("1,2.5,abc\n3,4.5,def\n")
    with pytest.raises(DatasetError, match=r"field 1 is '1'.*header=None") as info:
        irs.Dataset(str(raw))
    assert "sep=" not in str(info.value)  # the separator is right
    named = tmp_path / "named.tsv"
    named.write_text("user\titem\n1\t2\n")
    with pytest.raises(DatasetError, match=r"Dataset\(path, sep='\\t'\)\.$"):
        irs.Dataset(str(named))
    assert irs.Dataset(str(named), sep="\t").schema.names == ["user", "item"]


def test_ordinary_csv_files_still_open(tmp_path) -> None:
    cases = {
        "plain.csv": ("a,b,c\n3,4.5,def\n", ["a", "b", "c"], {}),
        # pandas' to_csv with the index: an empty first name, numbers below
        "index.csv": (",a,b\n0,1,x\n1,2,y\n", ["Unnamed: 0", "a", "b"], {}),
        # numeric names, declared a header: the check stands aside
        "years.csv": ("2019,2020\n1,2\n", ["2019", "2020"], {"header": 0}),
        # a text column whose first value looks like a number: not data below it
        "mixed.csv": ("code,n\n10,1\nab,2\n", ["code", "n"], {}),
        "one.csv": ("x\n1\n2\n", None, {}),
    }
    for name, (text, columns, kwargs) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        if columns is None:  # one column of numbers under a name
            assert irs.Dataset(str(path), **kwargs).schema.names == ["x"]
            continue
        assert irs.Dataset(str(path), **kwargs).schema.names == columns, name


def test_gzipped_and_plain_csv_together_are_refused_naming_one_of_each(tmp_path) -> None:
    import gzip

    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    with gzip.open(tmp_path / "b.csv.gz", "wt") as f:
        f.write("x,y\n3,4\n")
    with pytest.raises(DatasetError) as exc:
        irs.Dataset(str(tmp_path))
    message = str(exc.value)
    assert "mixes gzip-compressed and plain" in message
    assert "a.csv' is plain" in message and "b.csv.gz' is gzipped" in message
    assert "gzip the plain files" in message
    # one kind at a time still reads
    assert irs.Dataset(str(tmp_path / "b.csv.gz")).to_ddf().compute()["x"].tolist() == [3]
