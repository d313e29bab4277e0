"""Paths and fsspec URLs: which filesystem a path is on, how to name a file there, and the
error that names a URL when its store fails. Local paths take the fast path: plain ``os``
calls, no fsspec; :func:`filesystem` returns ``None`` for them.

>>> filesystem("/data/x.parquet") is None, is_remote("s3://bucket/x")
(True, True)
>>> join("memory://irs-doc", "a.txt"), strip("memory://irs-doc/a.txt")
('memory://irs-doc/a.txt', '/irs-doc/a.txt')
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from interactive_recsys.errors import IRSError, StorageError
from interactive_recsys.redact import redact_text, remember

__all__ = ["StorageOptions", "exists", "filesystem", "guarded", "is_remote", "isdir", "join",
           "local_path", "protocol", "storage_error", "strip"]

_LOCAL_PROTOCOLS = ("file", "local")

StorageOptions = Mapping[str, Any] | None


def protocol(path: str | os.PathLike) -> str | None:
    """The URL scheme of ``path`` (``"s3"``), or None for a local path."""
    text = os.fspath(path)
    if "://" not in text:
        return None
    scheme = text.split("://", 1)[0].lower()
    return None if scheme in _LOCAL_PROTOCOLS else scheme


def is_remote(path: Any) -> bool:
    """Whether ``path`` is an fsspec URL of a non-local filesystem."""
    return isinstance(path, str | os.PathLike) and protocol(path) is not None


def local_path(path: str | os.PathLike) -> str:
    """A ``file://`` URL as a plain path; other local paths unchanged."""
    text = os.fspath(path)
    return text.split("://", 1)[1] if "://" in text else text


def filesystem(path: str | os.PathLike, storage_options: StorageOptions = None) -> Any:
    """The fsspec filesystem of a URL (picklable: it travels to Dask workers with its
    options), or None for a local path (callers use ``os`` then)."""
    if not is_remote(path):
        return None
    import fsspec

    remember(storage_options)  # a store's error may quote them: masked wherever they appear

    try:
        fs, _ = fsspec.core.url_to_fs(os.fspath(path), **dict(storage_options or {}))
    except ImportError as exc:
        extra = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "azure",
                 "az": "azure", "abfss": "azure"}.get(protocol(path) or "", "")
        hint = f"pip install 'interactive-recsys[{extra}]'" if extra else str(exc)
        raise StorageError(0, f"Cannot open {os.fspath(path)!r}: its filesystem is not "
                              f"installed ({exc}). Fix: {hint}.") from exc
    return fs


def strip(path: str | os.PathLike) -> str:
    """The path inside its filesystem (``s3://b/k`` -> ``b/k``, by the filesystem's own rule,
    e.g. ``abfs://c@account.dfs.core.windows.net/k`` -> ``c/k``); local paths unchanged."""
    text = os.fspath(path)
    if not is_remote(text):
        return local_path(text)
    try:
        import fsspec

        return fsspec.get_filesystem_class(protocol(text))._strip_protocol(text).rstrip("/")
    except (ImportError, ValueError):
        return text.split("://", 1)[1].rstrip("/")


def join(base: str | os.PathLike, *parts: str) -> str:
    """``os.path.join`` for local paths, ``/``-joined for URLs."""
    base = os.fspath(base)
    return posixpath.join(base, *parts) if is_remote(base) else os.path.join(base, *parts)


def exists(path: str, storage_options: StorageOptions = None) -> bool:
    fs = filesystem(path, storage_options)
    return os.path.exists(path) if fs is None else guarded(fs.exists, path, strip(path))


def isdir(path: str, storage_options: StorageOptions = None) -> bool:
    fs = filesystem(path, storage_options)
    return os.path.isdir(path) if fs is None else guarded(fs.isdir, path, strip(path))


def guarded(call: Any, url: str, *args: Any, **kwargs: Any) -> Any:
    """``call(*args)``, a store failure re-raised as :class:`StorageError` naming ``url``."""
    try:
        return call(*args, **kwargs)
    except IRSError:
        raise
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        texts = [redact_text(a) for a in exc.args]
        if texts == list(exc.args):
            raise
        raise type(exc)(*texts) from None  # the same error, its URL's secrets masked
    except Exception as exc:  # botocore/aiohttp errors are not OSErrors
        err = storage_error(url, exc)
        if redact_text(str(exc)) != str(exc):  # the cause holds a secret: not chained
            raise err from None
        raise err from exc


def storage_error(url: str, exc: BaseException) -> StorageError:
    """A :class:`StorageError` naming ``url``, what failed and what to check."""
    text = redact_text(f"{type(exc).__name__}: {exc}")  # before it is cut short
    # the kind of failure from the words around the URLs, never from inside them (a write's
    # temporary folder is named by its time, e.g. 20261125164039: "403" is not a status there)
    lowered = re.sub(r"\S+://\S+", " ", text).lower()
    if any(k in lowered for k in ("accessdenied", "invalidaccesskeyid", "signaturedoesnotmatch",
                                  "forbidden", "credentials")) or re.search(r"\b403\b", lowered):
        fix = ("check the credentials: storage_options={'key': ..., 'secret': ...} (S3), "
               "'token' (GCS), 'account_name'/'account_key' (Azure), or the environment "
               "(AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*)")
    elif "nosuchbucket" in lowered or ("bucket" in lowered and "not" in lowered):
        fix = "the bucket does not exist: create it or fix the URL"
    elif any(k in lowered for k in ("connect", "timeout", "timed out", "endpoint", "resolve")):
        fix = ("the store cannot be reached: check the network and storage_options "
               "(e.g. client_kwargs={'endpoint_url': ...})")
    else:
        fix = "check the URL, the credentials and storage_options"
    err = StorageError(getattr(exc, "errno", None) or 5,
                       f"Cannot access {url!r}: {text[:400]}. Fix: {fix}.")
    err.filename = url
    return err
