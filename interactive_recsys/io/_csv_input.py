"""CSV input of :class:`~interactive_recsys.io._dataset.Dataset`: block readers that keep one type
per column (or name the column that changes type), and checks that name the file and fix.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import itertools
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from interactive_recsys.backend import get_backend
from interactive_recsys.errors import DatasetError
from interactive_recsys.io._hive import HivePartitions

_PANDAS_CSV_DTYPES = {"string": "string[pyarrow]", "bool": "boolean"}


def pandas_csv_dtype(name: str) -> str:
    if name in _PANDAS_CSV_DTYPES:
        return _PANDAS_CSV_DTYPES[name]
    if name.startswith(("int", "uint")):
        return name.capitalize().replace("Uint", "UInt")
    return name


#: The column Dask's csv reader fills with each row's file, when hive folders give columns.
PATH_COLUMN = "__irs_path"

#: The fix named by the error for raw Criteo TSV read as csv (:func:`check_csv_header`);
#: the Studio and the ``irs`` commands find it there and add their own way to read it.
RAW_CRITEO_HINT = "irs.datasets.read_criteo(path)"


class CsvNormalizer:
    """Raw csv blocks as frames of the backend with the dataset's Arrow schema; with
    ``hive`` (:class:`~.hive.HivePartitions`), the blocks carry their file in
    :data:`PATH_COLUMN`, replaced by the partition columns of that file."""

    def __init__(self, backend_name: str, schema: pa.Schema, files: Sequence[str] = (),
                 hive: HivePartitions | None = None) -> None:
        self.backend_name, self.schema = backend_name, schema
        self.irs_sources = list(files)
        self.hive = hive
        self._files: dict[str, str] | None = None  # Dask's name of each file -> the file

    def __call__(self, df: pd.DataFrame) -> Any:
        paths = df.pop(PATH_COLUMN) if PATH_COLUMN in df.columns else None
        table = self._table(df)
        if self.hive is not None and paths is not None:
            table = self._with_partitions(table, paths)
        return get_backend(self.backend_name).from_arrow(table)

    def _with_partitions(self, table: pa.Table, paths: pd.Series) -> pa.Table:
        """The partition columns of each row's file (Dask gives the file as a category)."""
        assert self.hive is not None
        codes = pa.array(paths.cat.codes.to_numpy())
        files = [self._file_of(p) for p in paths.cat.categories]
        for i, field in enumerate(self.hive.schema):
            per_file = pa.array([self.hive.values[f][i] for f in files], field.type)
            table = table.append_column(field, per_file.take(codes))
        return table

    def _file_of(self, path: str) -> str:
        """The input file Dask names ``path`` (absolute, or without its URL scheme)."""
        assert self.hive is not None
        if self._files is None:
            self._files = {f.split("://", 1)[1] if "://" in f
                           else os.path.abspath(f).replace(os.sep, "/"): f
                           for f in self.hive.values}
        try:
            return self._files[path]
        except KeyError:
            raise DatasetError(f"The csv block of {path!r} matches no input file of "
                               f"{self.irs_sources[:3]}; open the Dataset again.") from None

    def _table(self, df: pd.DataFrame) -> pa.Table:
        for name in df.columns:  # e.g. integers past int64, which pandas keeps as Python ints
            target = self.schema.field(name).type if name in self.schema.names else None
            if df[name].dtype == object and target is not None and (
                    pa.types.is_string(target) or pa.types.is_large_string(target)):
                df[name] = df[name].where(df[name].isna(), df[name].astype(str))
        try:
            table = pa.Table.from_pandas(df, preserve_index=False).cast(self.schema)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            column = failing_column(df, self.schema)
            raise DatasetError(
                f"Column {column!r} of {self.irs_sources[:3]} cannot be read as "
                f"{self.schema.field(column).type if column in self.schema.names else '?'} "
                f"({exc}). Declare its type, e.g. dtypes={{{column!r}: 'string'}}.") from exc
        return table


def failing_column(df: pd.DataFrame, schema: pa.Schema | None = None) -> str:
    """The first column of ``df`` that Arrow cannot convert (to ``schema``'s type)."""
    for name in df.columns:
        try:
            arr = pa.array(df[name], from_pandas=True)
            if schema is not None and name in schema.names:
                arr.cast(schema.field(name).type)
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            return str(name)
    return str(df.columns[0]) if len(df.columns) else "?"


class CsvBlockReader:
    """``pd.read_csv`` for one block of a csv file, giving each column the type inferred from
    the first block (Dask's sample), or an error naming the column, a bad value and the fix."""

    __name__ = "read_csv"

    def __init__(self, expected: Mapping[str, Any], files: Sequence[str]) -> None:
        self.expected, self.files = dict(expected), list(files)

    def __call__(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        sep = kwargs.get("sep", ",")
        try:
            df = pd.read_csv(*args, **kwargs)
        except pd.errors.ParserError as exc:
            raise self._split_quote_error(sep, str(exc)) from None
        try:
            for name, dtype in self.expected.items():
                if name in df.columns and df[name].dtype != dtype:
                    df[name] = self._coerce(name, df[name], dtype)
        except DatasetError as exc:
            # a block that starts inside a quoted line break parses as shifted fields, whose
            # types then differ: that is the quoted line break, not a changed column type
            if multiline_file(self.files, sep):
                raise self._split_quote_error(sep, str(exc)) from None
            raise
        return df

    def _split_quote_error(self, sep: str, detail: str) -> DatasetError:
        where = multiline_file(self.files, sep) or self.files[:3]
        return DatasetError(
            f"Cannot read the csv input {where!r}: {detail}. A quoted field with a line break "
            "crosses the boundary of a block (part_size), where the file is split for "
            "parallel reading. Read each file as one block (a part_size above the file's "
            "size, e.g. Dataset(..., part_size='1GB')), or rewrite the file without line "
            "breaks inside fields (or as parquet).")

    def _coerce(self, name: str, col: pd.Series, dtype: Any) -> pd.Series:
        if pd.api.types.is_integer_dtype(dtype) and pd.api.types.is_float_dtype(col.dtype):
            values = col.dropna()
            if (values == values.round()).all():  # empty fields in an integer column
                raise DatasetError(
                    f"Column {name!r} of {self.files[:3]} has empty fields after the first "
                    f"block (read as {dtype} from the start of the file). Declare it, e.g. "
                    f"Dataset(..., dtypes={{{name!r}: 'int64'}}): integers with nulls.")
        elif pd.api.types.is_numeric_dtype(dtype) == pd.api.types.is_numeric_dtype(col.dtype):
            with contextlib.suppress(ValueError, TypeError):
                return col.astype(dtype)
        elif not pd.api.types.is_numeric_dtype(dtype):
            return col.astype(dtype).where(col.notna())
        bad = _first_bad(col, dtype)
        raise DatasetError(
            f"Column {name!r} of {self.files[:3]} changes type after the first block: read as "
            f"{dtype} from the start of the file, it holds {bad!r} further on. Declare its "
            f"type, e.g. Dataset(..., dtypes={{{name!r}: 'string'}}) (or 'float64').")


def _first_bad(col: pd.Series, dtype: Any) -> Any:
    """The first value of ``col`` that does not fit the numeric ``dtype`` (else the first)."""
    present = col.dropna()
    if pd.api.types.is_numeric_dtype(dtype) and len(present):
        parsed = pd.to_numeric(present, errors="coerce")
        bad = parsed.isna()
        if pd.api.types.is_integer_dtype(dtype):
            bad |= parsed != parsed.round()
        if bad.any():
            return present[bad].iloc[0]
    return present.iloc[0] if len(present) else None


def check_csv_names(files: Sequence[str], sep: str, names: Sequence[str] | None,
                    storage_options: Mapping[str, Any] | None = None) -> None:
    """``names`` must name every field: with fewer, pandas turns the first fields into an
    index and drops them silently."""
    if names is None:
        return
    first = files[0]
    opener: Any = gzip.open if first.endswith(".gz") else open
    if "://" in first:  # a URL: fsspec opens it (with its options)
        import fsspec

        opener = functools.partial(fsspec.open, compression="infer", **(storage_options or {}))
    try:
        with opener(first, "rt", newline="") as f:
            line = next(csv.reader(f, delimiter=sep), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(f"Cannot read the csv file {first!r}: {exc}") from exc
    if line and len(line) != len(names):
        raise DatasetError(
            f"names has {len(names)} entries ({list(names)[:6]}) but {first!r} has "
            f"{len(line)} fields per line (separator {sep!r}). Pass one name per field, "
            "or check the 'sep' parameter.")


def _first_lines(path: str, count: int) -> list[str]:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as f:
            return [line.rstrip("\r\n") for _, line in zip(range(count), f, strict=False)]
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"Cannot read the csv file {path!r}: {exc}") from exc


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _looks_like_criteo(fields: list[str]) -> bool:
    """40 fields: a 0/1 label, 13 numbers, 26 hex hashes (any of the last 39 may be empty)."""
    def is_hex(s: str) -> bool:
        return all(c in "0123456789abcdefABCDEF" for c in s)

    return (len(fields) == 40 and fields[0] in ("0", "1")
            and all(not f or _is_number(f) for f in fields[1:14])
            and all(not f or is_hex(f) for f in fields[14:]))


def refuse_mixed_compression(files: Sequence[str], gzipped: Sequence[str]) -> None:
    """Refuse text input where some files are gzipped and some are not: the csv reader
    takes one compression for all of them, and would fail on the others ("Not a gzipped
    file") or read compressed bytes as text.

    >>> try:
    ...     refuse_mixed_compression(["day_0", "day_1.gz"], ["day_1.gz"])
    ... except DatasetError as exc:
    ...     print(str(exc)[:58])
    The input mixes gzip-compressed and plain text files: 'day
    """
    if not gzipped or len(gzipped) == len(files):
        return
    plain = [f for f in files if f not in set(gzipped)]
    raise DatasetError(
        f"The input mixes gzip-compressed and plain text files: {plain[0]!r} is plain, "
        f"{gzipped[0]!r} is gzipped ({len(plain)} plain, {len(gzipped)} gzipped), and one "
        "input is read with one compression. Make them one kind (gzip the plain files, "
        "or gunzip the others), or pass only one kind of file.")


def check_csv_header(files: Sequence[str], sep: str, names: Sequence[str] | None,
                     header: Any) -> None:
    """Refuse raw, headerless or differently separated text read with the defaults.

    With ``header="infer"`` and no ``names``, pandas takes the first line for column names.
    When that line is data -- a field is a number, as are the values below it, where a
    header names the column -- or when another separator splits the lines into several
    fields where ``sep`` finds one, the dataset would open "successfully" with columns named
    after the first row. Criteo's raw shape (40 tab-separated fields) is pointed at
    :func:`~interactive_recsys.datasets.read_criteo`.
    """
    if header != "infer" or names is not None or not files:
        return
    lines = [line for line in _first_lines(files[0], 3) if line]
    if not lines:
        return
    split = {s: [next(csv.reader([line], delimiter=s)) for line in lines]
             for s in dict.fromkeys((sep, "\t", ",", ";", "|"))}
    other = [s for s, rows in split.items() if s != sep and len(rows[0]) > 1
             and len({len(r) for r in rows}) == 1 and len(split[sep][0]) == 1]
    used = other[0] if other else sep
    rows = split[used]
    first = rows[0]
    if _looks_like_criteo(first):
        raise DatasetError(
            f"{files[0]!r} looks like raw Criteo data: 40 tab-separated fields per line and no "
            f"header (it starts {first[:3]}). Open it with {RAW_CRITEO_HINT}, "
            "which names the columns label, I1..I13, C1..C26 and types them.")
    # a number in the first line, where the lines below hold numbers too: data, not a name
    numeric = [i for i, f in enumerate(first) if _is_number(f) and len(rows) > 1
               and all(i < len(r) and (not r[i] or _is_number(r[i])) for r in rows[1:])]
    if not other and not numeric:
        return
    parts, advice = [], []
    if other:
        parts.append(f"its lines split into {len(first)} fields with {used!r} (with sep={sep!r} "
                     "each line is one field)")
        advice.append(f"sep={used!r}")
    if numeric:
        parts.append(f"its first line is data, not column names (field {numeric[0] + 1} is "
                     f"{first[numeric[0]]!r}, a number like the values below it)")
        advice.append(f"header=None, names=[<{len(first)} names>]")
    raise DatasetError(
        f"{files[0]!r}: {'; '.join(parts)}. Open it with Dataset(path, {', '.join(advice)})"
        + ("; pass header=0 if the first line really names the columns." if numeric else "."))
def files_with_rows(files: Sequence[str], sep: str, header: Any,
                    storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The csv ``files`` that hold data rows, in order (empty when none does: see
    :func:`no_rows_error`).

    Column types are inferred from the first file's start, so a header-only (or empty) file
    first would make every column a string; such files add no rows and are left out. URLs
    are opened with fsspec (``storage_options``) and looked at in order until one has rows:
    the rest are kept as they are (one request, usually).
    """
    skip = 0 if header is None else 1

    def has_rows(path: str) -> bool:
        opener: Any = gzip.open if path.endswith(".gz") else open
        if "://" in path:
            import fsspec

            opener = functools.partial(fsspec.open, compression="infer",
                                       **(storage_options or {}))
        try:
            with opener(path, "rt", newline="") as f:
                reader = csv.reader(f, delimiter=sep)
                rows = itertools.islice(reader, skip + 1)
                return sum(1 for row in rows if row) > skip
        except (OSError, UnicodeDecodeError, csv.Error):
            return True  # let the reader name the problem
    if any("://" in f for f in files):
        first = next((i for i, f in enumerate(files) if has_rows(f)), None)
        return [] if first is None else list(files[first:])
    return [f for f in files if has_rows(f)]


def no_rows_error(files: Sequence[str], dtypes: Mapping[str, Any] | None = None) -> DatasetError:
    """The error of a csv input whose files hold a header at most: names them, and says why
    a Dataset of it cannot be opened (the column types come from the rows)."""
    shown = list(files[:3]) + (["..."] if len(files) > 3 else [])
    which = (f"The csv file {files[0]!r} has" if len(files) == 1
             else f"None of the {len(files)} csv files {shown} has")
    declared = f" (dtypes= declares only {sorted(dtypes)})" if dtypes else ""
    return DatasetError(
        f"{which} no rows (a header only, or nothing): there is nothing to read, and no column "
        f"types to infer{declared}. Check that the right file was given; pass a file with "
        "rows, or declare every column's type (dtypes={column: 'int64', ...}) to open it as "
        "an empty dataset.")


def multiline_file(files: Sequence[str], sep: str, records: int = 1_000_000) -> str | None:
    """The first of ``files`` with a quoted field holding a line break (within its first
    ``records`` records), else None."""
    for path in files:
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rt", newline="") as f:
                reader = csv.reader(f, delimiter=sep)
                last = 0
                for _ in itertools.islice(reader, records):
                    if reader.line_num - last > 1:
                        return path
                    last = reader.line_num
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
    return None
