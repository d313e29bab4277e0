"""Data in and out: datasets, csv input, the parquet writer, atomic outputs, fsspec storage
and the object-store commit protocol, artifacts folders and the saved-workflow format.

Importing the package imports none of its modules (they load on first use)."""
