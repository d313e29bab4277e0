"""MovieLens readers: 100k, 1m and latest-small / 25m in one DataFrame layout."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

if TYPE_CHECKING:
    pass

PathLike = str | os.PathLike

#: The 19 ml-100k genres, in the order of the flag columns of ``u.item``.
MOVIELENS_100K_GENRES = (
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
    "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance",
    "Sci-Fi", "Thriller", "War", "Western",
)  # fmt: skip

_NO_GENRES = "(no genres listed)"
_RATING_COLUMNS = ("user_id", "item_id", "rating", "timestamp")
_RATING_TYPES = {"user_id": pa.int64(), "item_id": pa.int64(), "rating": pa.float32(),
                 "timestamp": pa.int64()}  # fmt: skip

# Format name -> (ratings file, movies file), in detection order.
_MOVIELENS_FORMATS = {
    "ml-100k": ("u.data", "u.item"),
    "ml-latest / ml-25m": ("ratings.csv", "movies.csv"),
    "ml-1m / ml-10m": ("ratings.dat", "movies.dat"),
}


def read_movielens(directory: PathLike) -> pd.DataFrame:
    r"""Load a MovieLens release (ratings joined with movie titles and genres).

    The format is detected from the files in ``directory``:

    * ml-100k: ``u.data`` + ``u.item`` (genre names from ``u.genre`` when present),
    * ml-latest-small, ml-latest, ml-20m, ml-25m: ``ratings.csv`` + ``movies.csv``,
    * ml-1m, ml-10m: ``ratings.dat`` + ``movies.dat`` (``::``-separated).

    Parameters
    ----------
    directory : str or os.PathLike
        The unpacked release folder, e.g. ``ml-100k/``.

    Returns
    -------
    pandas.DataFrame
        One row per rating, in the order of the ratings file, with columns ``user_id``
        (int64), ``item_id`` (int64), ``rating`` (float32), ``timestamp`` (int64, Unix
        seconds), ``title`` (``"string"``) and ``genres`` (``pd.ArrowDtype(pa.list_(
        pa.string()))``; ``"(no genres listed)"`` becomes an empty list). A rating of a movie
        missing from the movies file gets a null title and null genres.

    Raises
    ------
    FileNotFoundError
        If the directory holds no known format, or only one of the two files of a format.

    Examples
    --------
    >>> import pathlib, shutil, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "ratings.csv").write_text("userId,movieId,rating,timestamp\n7,1,4.5,9649827\n")
    >>> _ = (d / "movies.csv").write_text("movieId,title,genres\n1,Toy Story,Comedy|Drama\n")
    >>> df = read_movielens(d)
    >>> df["title"].tolist(), df["genres"].tolist()
    (['Toy Story'], [['Comedy', 'Drama']])
    >>> df.dtypes.astype(str).tolist()
    ['int64', 'int64', 'float32', 'int64', 'string', 'list<item: string>[pyarrow]']
    >>> shutil.rmtree(d)
    """
    directory = Path(directory)
    readers = (_read_ml100k, _read_ml_csv, _read_ml_dat)
    for (fmt, files), reader in zip(_MOVIELENS_FORMATS.items(), readers, strict=True):
        present = [name for name in files if (directory / name).is_file()]
        if not present:
            continue
        missing = [name for name in files if name not in present]
        if missing:
            raise FileNotFoundError(
                f"{directory} looks like MovieLens {fmt} ({', '.join(present)} found) but "
                f"{missing[0]} is missing"
            )
        ratings, movies = reader(directory)
        return _join_movies(ratings, movies)
    looked_for = "; ".join(f"{' + '.join(f)} ({fmt})" for fmt, f in _MOVIELENS_FORMATS.items())
    raise FileNotFoundError(f"no MovieLens data found in {directory}; looked for {looked_for}")


def _read_ratings(data: bytes | Path, delimiter: str, header: bool) -> pa.Table:
    """Read a 4-column ratings file (user, item, rating, timestamp) with pyarrow."""
    source = io.BytesIO(data) if isinstance(data, bytes) else str(data)
    table = pacsv.read_csv(
        source,
        read_options=pacsv.ReadOptions(
            column_names=list(_RATING_COLUMNS), skip_rows=1 if header else 0
        ),
        parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False),
        convert_options=pacsv.ConvertOptions(column_types=_RATING_TYPES),
    )
    for name in _RATING_COLUMNS:
        if table.column(name).null_count:
            raise ValueError(f"ratings file has empty {name} values")
    return table


def _read_text(path: Path) -> str:
    """Text of a metadata file: UTF-8 (newer releases) or else Latin-1 (ml-100k, ml-1m)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _read_ml100k(directory: Path) -> tuple[pa.Table, pa.Table]:
    """ml-100k: tab-separated ``u.data`` and ``|``-separated ``u.item`` with genre flags."""
    ratings = _read_ratings(directory / "u.data", "\t", header=False)
    genres = _ml100k_genre_names(directory)
    head = ["item_id", "title", "release_date", "video_release_date", "imdb_url"]
    items = pacsv.read_csv(
        io.BytesIO(_read_text(directory / "u.item").encode()),
        read_options=pacsv.ReadOptions(column_names=head + [f"g{i}" for i in range(len(genres))]),
        parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types={"item_id": pa.int64(), "title": pa.string()},
            include_columns=["item_id", "title"] + [f"g{i}" for i in range(len(genres))],
        ),
    )
    flag_columns = [items.column(f"g{i}").to_numpy() for i in range(len(genres))]
    flags = np.column_stack(flag_columns).astype(bool)
    return ratings, pa.table(
        {
            "item_id": items.column("item_id"),
            "title": items.column("title"),
            "genres": _genres_from_flags(flags, genres),
        }
    )


def _ml100k_genre_names(directory: Path) -> list[str]:
    """Genre names ordered by index, from ``u.genre`` or the standard 19."""
    path = directory / "u.genre"
    if not path.is_file():
        return list(MOVIELENS_100K_GENRES)
    pairs = [line.rsplit("|", 1) for line in _read_text(path).splitlines() if line]
    return [name for name, _ in sorted(pairs, key=lambda pair: int(pair[1]))]


def _genres_from_flags(flags: np.ndarray, names: Sequence[str]) -> pa.ListArray:
    """List array of the names whose flag is set, per row (vectorised)."""
    rows, cols = np.nonzero(flags)
    offsets = np.zeros(len(flags) + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=len(flags)), out=offsets[1:])
    values = pa.array(np.asarray(names, dtype=object)[cols], type=pa.string())
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def _read_ml_csv(directory: Path) -> tuple[pa.Table, pa.Table]:
    """ml-latest / ml-20m / ml-25m: ``ratings.csv`` and ``movies.csv`` with headers."""
    ratings = _read_ratings(directory / "ratings.csv", ",", header=True)
    movies = pacsv.read_csv(
        directory / "movies.csv",
        convert_options=pacsv.ConvertOptions(
            column_types={"movieId": pa.int64(), "title": pa.string(), "genres": pa.string()}
        ),
    )
    return ratings, pa.table(
        {
            "item_id": movies.column("movieId"),
            "title": movies.column("title"),
            "genres": _split_genres(movies.column("genres").combine_chunks()),
        }
    )


def _read_ml_dat(directory: Path) -> tuple[pa.Table, pa.Table]:
    """ml-1m / ml-10m: ``::``-separated ``ratings.dat`` and ``movies.dat``."""
    data = (directory / "ratings.dat").read_bytes().replace(b"::", b"\t")
    ratings = _read_ratings(data, "\t", header=False)
    lines = pa.array(_read_text(directory / "movies.dat").splitlines(), type=pa.string())
    lines = lines.filter(pc.not_equal(lines, ""))
    parts = pc.extract_regex(lines, r"^(?P<item_id>\d+)::(?P<title>.*)::(?P<genres>[^:]*)$")
    if parts.null_count:
        bad = pc.index(pc.is_null(parts), True).as_py()
        raise ValueError(f"movies.dat line {bad + 1} is not 'id::title::genres': {lines[bad]}")
    return ratings, pa.table(
        {
            "item_id": parts.field("item_id").cast(pa.int64()),
            "title": parts.field("title"),
            "genres": _split_genres(parts.field("genres")),
        }
    )


def _split_genres(genres: pa.Array) -> pa.ListArray:
    """Split ``|``-joined genres; ``"(no genres listed)"`` and ``""`` become empty lists."""
    lists = pc.split_pattern(genres, "|")
    values = pc.list_flatten(lists)
    keep = pc.and_(pc.not_equal(values, _NO_GENRES), pc.not_equal(values, ""))
    parents = pc.list_parent_indices(lists).to_numpy()[keep.to_numpy(zero_copy_only=False)]
    offsets = np.zeros(len(lists) + 1, dtype=np.int32)
    np.cumsum(np.bincount(parents, minlength=len(lists)), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values.filter(keep), mask=pc.is_null(lists))


def _join_movies(ratings: pa.Table, movies: pa.Table) -> pd.DataFrame:
    """Attach title and genres to every rating, keeping the ratings order."""
    movie_ids = pd.Index(movies.column("item_id").to_numpy())
    first = ~movie_ids.duplicated()
    movie_ids = movie_ids[first]
    item_ids = ratings.column("item_id").to_numpy()
    positions = movie_ids.get_indexer(item_ids)
    take = pa.array(positions, mask=positions < 0)
    titles = movies.column("title").combine_chunks().filter(pa.array(first)).take(take)
    genres = movies.column("genres").combine_chunks().filter(pa.array(first)).take(take)
    return pd.DataFrame(
        {
            "user_id": ratings.column("user_id").to_numpy(),
            "item_id": item_ids,
            "rating": ratings.column("rating").to_numpy(),
            "timestamp": ratings.column("timestamp").to_numpy(),
            "title": pd.arrays.ArrowStringArray(titles),
            "genres": pd.arrays.ArrowExtensionArray(genres),
        }
    )
