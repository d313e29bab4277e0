"""Tests for interactive_recsys.datasets: synthetic Criteo, Criteo options and MovieLens."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from interactive_recsys import datasets
from interactive_recsys.datasets import (
    CRITEO_CATEGORICAL,
    CRITEO_COLUMNS,
    CRITEO_CONTINUOUS,
    CRITEO_NULL_RATES,
    criteo_csv_options,
    read_movielens,
    synthetic_criteo,
)

ROWS = 20_000
GENRES_TYPE = pd.ArrowDtype(pa.list_(pa.string()))
EXPECTED_SCHEMA = pa.schema(
    [("label", pa.int64())]
    + [(name, pa.int64()) for name in CRITEO_CONTINUOUS]
    + [(name, pa.string()) for name in CRITEO_CATEGORICAL]
)


# --------------------------------------------------------------------------------------------
# synthetic_criteo
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def criteo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_criteo(ROWS, seed=7, path=tmp_path_factory.mktemp("criteo") / "data")


@pytest.fixture(scope="module")
def criteo(criteo_dir: Path) -> pa.Table:
    return pq.read_table(criteo_dir)


def test_synthetic_criteo_schema_and_rows(criteo_dir: Path, criteo: pa.Table) -> None:
    assert criteo.schema.equals(EXPECTED_SCHEMA)
    assert criteo.column_names == CRITEO_COLUMNS
    assert criteo.num_rows == ROWS
    assert sorted(p.name for p in criteo_dir.iterdir()) == ["_params.json", "part-00000.parquet"]


def test_synthetic_criteo_splits_rows_into_files(tmp_path: Path) -> None:
    out = synthetic_criteo(25_000, path=tmp_path / "c", rows_per_file=10_000)
    parts = sorted(out.glob("part-*.parquet"))
    assert [p.name for p in parts] == [f"part-0000{i}.parquet" for i in range(3)]
    assert [pq.ParquetFile(p).metadata.num_rows for p in parts] == [10_000, 10_000, 5_000]


def test_synthetic_criteo_is_deterministic(tmp_path: Path, criteo_dir: Path) -> None:
    again = synthetic_criteo(ROWS, seed=7, path=tmp_path / "again")
    assert pq.read_table(again).equals(pq.read_table(criteo_dir))
    name = "part-00000.parquet"
    assert (again / name).read_bytes() == (criteo_dir / name).read_bytes()


def test_synthetic_criteo_seeds_differ(tmp_path: Path, criteo: pa.Table) -> None:
    other = pq.read_table(synthetic_criteo(ROWS, seed=8, path=tmp_path / "seed8"))
    assert other.schema.equals(criteo.schema)
    assert not other.equals(criteo)
    assert not other.column("C3").equals(criteo.column("C3"))
    assert not other.column("I5").equals(criteo.column("I5"))


def test_synthetic_criteo_label(criteo: pa.Table) -> None:
    label = criteo.column("label").to_numpy()
    assert set(np.unique(label)) == {0, 1}
    assert abs(label.mean() - 0.25) < 0.02


def test_synthetic_criteo_null_rates(criteo: pa.Table) -> None:
    for name in CRITEO_COLUMNS:
        rate = criteo.column(name).null_count / criteo.num_rows
        assert abs(rate - CRITEO_NULL_RATES[name]) < 0.02, name
    assert CRITEO_NULL_RATES["I1"] == pytest.approx(0.45)
    assert CRITEO_NULL_RATES["I12"] == pytest.approx(0.77)
    assert criteo.column("label").null_count == 0
    assert criteo.column("I2").null_count == 0
    assert criteo.column("C1").null_count == 0


def test_synthetic_criteo_counts(criteo: pa.Table) -> None:
    i2 = criteo.column("I2").to_numpy()
    assert set(np.unique(i2[i2 < 0])) == {-3, -2, -1}
    for name in CRITEO_CONTINUOUS:
        if name != "I2":
            assert pc.min(criteo.column(name)).as_py() >= 0, name
    i5 = criteo.column("I5").drop_null().to_numpy()
    assert np.percentile(i5, 99) > 20 * np.median(i5)  # heavy tail


def test_synthetic_criteo_hex_strings(criteo: pa.Table) -> None:
    for name in CRITEO_CATEGORICAL:
        values = criteo.column(name).drop_null()
        assert pc.all(pc.match_substring_regex(values, r"^[0-9a-f]{8}$")).as_py(), name


def test_synthetic_criteo_power_law(criteo: pa.Table) -> None:
    # C3 has a large vocabulary: K = min(10131227, ROWS // 2) = 10_000.
    counts = np.sort(pc.value_counts(criteo.column("C3").drop_null()).field("counts").to_numpy())
    assert counts[-1] > 50 * np.median(counts)
    assert counts[-10:].sum() > 0.25 * counts.sum()
    assert len(counts) > 1_000


def test_synthetic_criteo_cardinalities(tmp_path: Path) -> None:
    cards = [5] * 20 + [1_000] * 6
    table = pq.read_table(synthetic_criteo(5_000, path=tmp_path / "c", cardinalities=cards))
    for name, k in zip(CRITEO_CATEGORICAL, cards, strict=True):
        assert pc.count_distinct(table.column(name)).as_py() <= k, name
    assert pc.count_distinct(table.column("C1")).as_py() == 5
    c21 = set(table.column("C21").drop_null().to_pylist())
    c23 = set(table.column("C23").drop_null().to_pylist())
    assert not c21 & c23  # columns use different strings


def test_synthetic_criteo_reuses_complete_directory(
    criteo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mtimes = {p.name: p.stat().st_mtime_ns for p in criteo_dir.iterdir()}

    def fail(*args: object) -> None:
        raise AssertionError("must not write again")

    monkeypatch.setattr(datasets._synthetic_criteo, "_write_part", fail)
    assert synthetic_criteo(ROWS, seed=7, path=criteo_dir) == criteo_dir
    assert {p.name: p.stat().st_mtime_ns for p in criteo_dir.iterdir()} == mtimes


def test_synthetic_criteo_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    out = synthetic_criteo(1_000, seed=3)
    assert out == tmp_path / "irs-synthetic-criteo-1000-3"
    assert synthetic_criteo(1_000, seed=3) == out
    custom = synthetic_criteo(1_000, seed=3, rows_per_file=400)
    assert custom.parent == tmp_path
    assert custom.name.startswith("irs-synthetic-criteo-1000-3-")
    assert len(list(custom.glob("*.parquet"))) == 3


def test_synthetic_criteo_refuses_foreign_directory(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"foreign.*delete it or pick another"):
        synthetic_criteo(1_000, path=foreign)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


def test_synthetic_criteo_refuses_other_parameters(tmp_path: Path) -> None:
    out = synthetic_criteo(1_000, seed=1, path=tmp_path / "c")
    with pytest.raises(FileExistsError, match="delete it or pick another"):
        synthetic_criteo(1_000, seed=2, path=out)


def test_synthetic_criteo_fills_empty_directory(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert synthetic_criteo(1_000, path=empty) == empty
    assert pq.read_table(empty).num_rows == 1_000


def test_synthetic_criteo_leaves_nothing_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = []
    write_part = datasets._synthetic_criteo._write_part

    def fail_second(table: pa.Table, file_path: Path) -> None:
        if written:
            raise OSError("disk full")
        written.append(file_path)
        write_part(table, file_path)

    monkeypatch.setattr(datasets._synthetic_criteo, "_write_part", fail_second)
    target = tmp_path / "criteo"
    with pytest.raises(OSError, match="disk full"):
        synthetic_criteo(3_000, path=target, rows_per_file=1_000)
    assert len(written) == 1
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rows": -1},
        {"seed": -1},
        {"rows_per_file": 0},
        {"cardinalities": [10] * 25},
        {"cardinalities": [0] * 26},
        {"zipf_exponent": float("nan")},
    ],
)
def test_synthetic_criteo_rejects_bad_arguments(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        synthetic_criteo(**{"rows": 100, "path": tmp_path / "c", **kwargs})
    assert list(tmp_path.iterdir()) == []


def test_power_law_ranks_bounded() -> None:
    rng = np.random.default_rng(0)
    for k, exponent in [(1, 1.1), (3, 1.1), (1_000, 1.0), (1_000, 0.0), (2**30, 1.1)]:
        ranks = datasets._criteo_columns._power_law_ranks(rng, 50_000, k, exponent)
        assert ranks.min() >= 0 and ranks.max() < k
    uniform = np.bincount(datasets._criteo_columns._power_law_ranks(rng, 100_000, 4, 0.0), minlength=4)
    assert np.all(np.abs(uniform / 100_000 - 0.25) < 0.01)


# --------------------------------------------------------------------------------------------
# criteo_csv_options
# --------------------------------------------------------------------------------------------


def test_criteo_csv_options() -> None:
    opts = criteo_csv_options()
    assert opts["engine"] == "csv"
    assert opts["sep"] == "\t"
    assert opts["header"] is None
    assert opts["names"] == CRITEO_COLUMNS
    assert len(opts["names"]) == 40
    assert opts["names"][:2] == ["label", "I1"] and opts["names"][-1] == "C26"
    expected = {"label": "int64"}
    expected.update({f"I{i}": "int64" for i in range(1, 14)})
    expected.update({f"C{i}": "string" for i in range(1, 27)})
    assert opts["dtypes"] == expected
    opts["names"].append("extra")
    assert len(criteo_csv_options()["names"]) == 40


# --------------------------------------------------------------------------------------------
# read_movielens
# --------------------------------------------------------------------------------------------


def movielens_frame(rows: list[tuple]) -> pd.DataFrame:
    """Build the expected read_movielens output from (user, item, rating, ts, title, genres)."""
    users, items, ratings, stamps, titles, genres = zip(*rows, strict=True)
    return pd.DataFrame(
        {
            "user_id": np.array(users, dtype=np.int64),
            "item_id": np.array(items, dtype=np.int64),
            "rating": np.array(ratings, dtype=np.float32),
            "timestamp": np.array(stamps, dtype=np.int64),
            "title": pd.array(titles, dtype="string"),
            "genres": pd.array(genres, dtype=GENRES_TYPE),
        }
    )


def write_ml100k(directory: Path, *, genre_file: bool) -> None:
    flags = {1: [0, 0, 0, 1, 1, 1] + [0] * 13, 2: [0, 1, 1] + [0] * 13 + [1, 0, 0]}
    flags[3] = [0] * 8 + [1] + [0] * 10
    items = [
        f"1|Toy Story (1995)|01-Jan-1995||http://us.imdb.com/M/Toy|{'|'.join(map(str, flags[1]))}",
        f"2|GoldenEye (1995)|01-Jan-1995||http://us.imdb.com/M/Gold|{'|'.join(map(str, flags[2]))}",
        f"3|Misérables, Les (1995)|01-Jan-1995|||{'|'.join(map(str, flags[3]))}",
    ]
    (directory / "u.item").write_bytes(("\n".join(items) + "\n").encode("latin-1"))
    (directory / "u.data").write_text("196\t3\t3\t881250949\n22\t1\t1\t878887116\n5\t2\t4\t1\n")
    if genre_file:
        names = [f"G{i}" for i in range(19)]
        lines = [f"{name}|{i}" for i, name in reversed(list(enumerate(names)))]
        (directory / "u.genre").write_text("\n".join(lines) + "\n\n")


def test_read_movielens_100k(tmp_path: Path) -> None:
    write_ml100k(tmp_path, genre_file=False)
    expected = movielens_frame(
        [
            (196, 3, 3.0, 881250949, "Misérables, Les (1995)", ["Drama"]),
            (22, 1, 1.0, 878887116, "Toy Story (1995)", ["Animation", "Children's", "Comedy"]),
            (5, 2, 4.0, 1, "GoldenEye (1995)", ["Action", "Adventure", "Thriller"]),
        ]
    )
    pd.testing.assert_frame_equal(read_movielens(tmp_path), expected)


def test_read_movielens_100k_genre_names_from_file(tmp_path: Path) -> None:
    write_ml100k(tmp_path, genre_file=True)
    genres = read_movielens(str(tmp_path))["genres"].tolist()
    assert genres == [["G8"], ["G3", "G4", "G5"], ["G1", "G2", "G16"]]


def test_read_movielens_latest(tmp_path: Path) -> None:
    (tmp_path / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n"
        "1,10,4.0,964982703\n"
        "1,2,0.5,964981247\n"
        "610,99,3.5,1493845360\n"
        "2,10,5.0,1\n"
    )
    (tmp_path / "movies.csv").write_text(
        "movieId,title,genres\n"
        "2,Jumanji (1995),Adventure|Children|Fantasy\n"
        '10,"American President, The (1995)",Comedy|Drama|Romance\n'
        "99,Ça ira (2019),(no genres listed)\n"
        "5,Unrated (2000),Drama\n"
    )
    president = "American President, The (1995)"
    expected = movielens_frame(
        [
            (1, 10, 4.0, 964982703, president, ["Comedy", "Drama", "Romance"]),
            (1, 2, 0.5, 964981247, "Jumanji (1995)", ["Adventure", "Children", "Fantasy"]),
            (610, 99, 3.5, 1493845360, "Ça ira (2019)", []),
            (2, 10, 5.0, 1, president, ["Comedy", "Drama", "Romance"]),
        ]
    )
    pd.testing.assert_frame_equal(read_movielens(tmp_path), expected)


def test_read_movielens_1m(tmp_path: Path) -> None:
    (tmp_path / "ratings.dat").write_text(
        "1::1193::5::978300760\n2::3::3::978298413\n1::260::4::978300275\n6::7::1::978300000\n"
    )
    movies = (
        "1193::One Flew Over the Cuckoo's Nest (1975)::Drama\n"
        "3::Grumpier Old Men (1995)::Comedy|Romance\n"
        "260::Star Wars: Episode IV - A New Hope (1977)::Action|Adventure|Fantasy|Sci-Fi\n"
        "7::Café au Lait (1993)::Comedy\n"
    )
    (tmp_path / "movies.dat").write_bytes(movies.encode("latin-1"))
    (tmp_path / "users.dat").write_text("1::F::1::10::48067\n")
    star_wars = "Star Wars: Episode IV - A New Hope (1977)"
    expected = movielens_frame(
        [
            (1, 1193, 5.0, 978300760, "One Flew Over the Cuckoo's Nest (1975)", ["Drama"]),
            (2, 3, 3.0, 978298413, "Grumpier Old Men (1995)", ["Comedy", "Romance"]),
            (1, 260, 4.0, 978300275, star_wars, ["Action", "Adventure", "Fantasy", "Sci-Fi"]),
            (6, 7, 1.0, 978300000, "Café au Lait (1993)", ["Comedy"]),
        ]
    )
    pd.testing.assert_frame_equal(read_movielens(tmp_path), expected)


def test_read_movielens_unknown_movie_gets_nulls(tmp_path: Path) -> None:
    (tmp_path / "ratings.csv").write_text("userId,movieId,rating,timestamp\n3,404,2.5,7\n")
    (tmp_path / "movies.csv").write_text("movieId,title,genres\n1,Toy Story (1995),Comedy\n")
    df = read_movielens(tmp_path)
    assert df["title"].isna().tolist() == [True]
    assert df["genres"].isna().tolist() == [True]


def test_read_movielens_missing_ratings_dat(tmp_path: Path) -> None:
    (tmp_path / "movies.dat").write_text("1::Toy Story (1995)::Comedy\n")
    with pytest.raises(FileNotFoundError, match=r"ratings\.dat"):
        read_movielens(tmp_path)


def test_read_movielens_missing_movies_file(tmp_path: Path) -> None:
    (tmp_path / "u.data").write_text("1\t1\t5\t1\n")
    with pytest.raises(FileNotFoundError, match=r"u\.item"):
        read_movielens(tmp_path)


def test_read_movielens_unknown_directory(tmp_path: Path) -> None:
    (tmp_path / "README.txt").write_text("nothing here")
    with pytest.raises(FileNotFoundError) as info:
        read_movielens(tmp_path)
    for name in ["u.data", "u.item", "ratings.csv", "movies.csv", "ratings.dat", "movies.dat"]:
        assert name in str(info.value)


def test_synthetic_criteo_says_how_far_it_is_while_it_writes(tmp_path, capsys):
    """One line on stderr, rewritten after each file: rows written of all, then the end; a
    reused data set, a one-file one and progress=False print nothing."""
    out = synthetic_criteo(3_000, seed=4, path=tmp_path / "c", rows_per_file=1_000)
    steps = capsys.readouterr().err.split("\r")[1:]
    assert steps[0] == f"synthetic_criteo: 3,000 rows to write into {out}..."
    assert [s.split(" rows (")[0] for s in steps[1:3]] == [
        "synthetic_criteo: 1,000 of 3,000", "synthetic_criteo: 2,000 of 3,000"]
    assert "rows/s, about" in steps[1] and steps[1].endswith(" s left")
    assert steps[-1].startswith(f"synthetic_criteo: 3,000 rows written to {out} in ")
    assert steps[-1].endswith(" s\n") and len(steps) == 4
    assert pq.read_table(out).num_rows == 3_000
    synthetic_criteo(3_000, seed=4, path=out, rows_per_file=1_000)  # reused
    synthetic_criteo(500, seed=4, path=tmp_path / "one", rows_per_file=1_000)
    synthetic_criteo(3_000, seed=5, path=tmp_path / "quiet", rows_per_file=1_000,
                     progress=False)
    assert capsys.readouterr().err == ""
    synthetic_criteo(500, seed=5, path=tmp_path / "asked", rows_per_file=1_000, progress=True)
    assert "500 rows written to" in capsys.readouterr().err
