"""What every model shares: declared parameters, fitting on the cluster, scoring from arrays,
saving as JSON + npz (never pickle), the npz checked at load by the SHA-256 that ``model.json``
records (as a workflow folder's artifacts are, :mod:`~interactive_recsys.store._folder_rules`).

A model is its parameters (declared :class:`~interactive_recsys.params.Param` class attributes,
as operators declare theirs; the constructor keywords are stored unchanged as attributes and
:meth:`Model.get_params` reads them back for save/load) and,
once fitted, its item ids (:attr:`items_`) and weights (:attr:`arrays_`, NumPy arrays).
Scoring is a class method of those arrays and parameters alone
(:meth:`Model.score_arrays`), so :func:`~interactive_recsys.models._predict.predict_topk` ships
arrays plus a plain dict to the workers, never code or a pickled object.

``fit`` reads the (user, item) pairs with one Dask computation, then trains as one task on
the cluster (when a distributed client is active). When some workers carry the ``GPU``
resource (``start_cluster(resources=...)``, every worker of a GPU cluster) the training
task asks for it, so it waits for a GPU worker while CPU workers keep preparing data.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import zipfile
from typing import Any, ClassVar

import dask
import numpy as np
import pandas as pd

from interactive_recsys.errors import IRSError, NotFittedError, ParameterError
from interactive_recsys.io._dataset import as_dataset
from interactive_recsys.models._data import Interactions, encode, to_dense
from interactive_recsys.params import Param, declared_params, validate_values
from interactive_recsys.runtime.jobs import active_client, background_job, compute
from interactive_recsys.store._folder_rules import (
    file_sha256,
    refuse_links,
    verify_checksums,
    warn_unrecorded,
)
from interactive_recsys.store.commit import published_folder
from interactive_recsys.store.storage import is_remote, local_copy

FORMAT, FORMAT_VERSION = "irs-model", 1
#: The weights file of a saved model folder, its SHA-256 recorded in model.json ("sha256").
ARRAYS = "arrays.npz"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: Model classes by name (filled by :func:`register`).
MODELS: dict[str, type[Model]] = {}


class ModelFormatError(IRSError, ValueError):
    """A saved model folder is missing, malformed or from an unknown version."""


def register(cls: type[Model]) -> type[Model]:
    MODELS[cls.__name__] = cls
    return cls


#: The user and item column parameters every model has.
_COLUMN = Param(kind="str", must="a column name", check=bool)


class Model:
    """Base class of recommendation models (implicit feedback: which items a user had).

    Subclasses declare their parameters as :class:`~interactive_recsys.params.Param` class
    attributes (collected into :attr:`params`, the table), and implement :meth:`fit_arrays`
    and :meth:`score_arrays`.
    """

    #: The declared parameters, by name (filled by ``__init_subclass__``).
    params: ClassVar[dict[str, Param]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.params = declared_params(cls, getattr(cls, "params", {}))

    def __init__(self, *, user_col: str = "user_id", item_col: str = "item_id",
                 **params: Any) -> None:
        owner = type(self).__name__
        values = validate_values(owner, self.params, params)
        self.user_col = _COLUMN.validate(owner, "user_col", user_col)
        self.item_col = _COLUMN.validate(owner, "item_col", item_col)
        for name, value in values.items():
            setattr(self, name, value)
        self.items_: np.ndarray | None = None
        self.arrays_: dict[str, np.ndarray] | None = None
        self.info_: dict[str, Any] = {}

    def get_params(self) -> dict[str, Any]:
        """The declared parameters' values (the attributes), as save/load and reprs read them.

        >>> from interactive_recsys.models import EASE
        >>> EASE(l2=100.0).get_params()
        {'l2': 100.0}
        """
        return {name: getattr(self, name) for name in self.params}

    # ---- to implement ---------------------------------------------------------------------
    @classmethod
    def fit_arrays(cls, params: dict[str, Any], data: Interactions) -> dict[str, np.ndarray]:
        """The fitted weights, from the parameters and the training interactions."""
        raise NotImplementedError

    @classmethod
    def score_arrays(cls, params: dict[str, Any], arrays: dict[str, np.ndarray],
                     indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """Scores ``[n_users, n_items]`` of users given by CSR rows of seen item codes."""
        raise NotImplementedError

    # ---- fitting --------------------------------------------------------------------------
    @background_job(lambda self, *a, **k: f"fit {type(self).__name__}")
    def fit(self, train: Any, *, background: bool = False) -> Any:
        """Fit on ``train`` (a Dataset or DataFrame with the user and item columns).

        Returns the model, or with ``background=True`` at once a
        :class:`~interactive_recsys.runtime.jobs.Job` whose result is the model (its phases show in
        the dashboard; ``job.cancel()`` stops it).
        """
        started = time.perf_counter()
        data = read_interactions(train, self.user_col, self.item_col,
                                 phase=f"fit {type(self).__name__}: read")
        if data.n_items == 0:
            raise ParameterError(f"{type(self).__name__}.fit got no interactions: the training "
                                 "data is empty.")
        read_s = time.perf_counter() - started
        params = self.get_params()
        arrays = train_on_cluster(type(self).__name__, params, data)
        problem = self.check_arrays(params, data.items, arrays)
        if problem:
            raise ParameterError(f"{self!r}.fit trained unusable weights: {problem}. Check "
                                 f"the parameters ({params}), e.g. a smaller learning "
                                 "rate or a finite regularization.")
        self.items_, self.arrays_ = data.items, arrays
        self.info_ = {"users": data.n_users, "items": data.n_items,
                      "interactions": data.nnz, "read_s": round(read_s, 3),
                      "fit_s": round(time.perf_counter() - started, 3)}
        return self

    @property
    def fitted(self) -> bool:
        return self.arrays_ is not None

    def _check_fitted(self) -> None:
        if not self.fitted:
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet; call "
                                 ".fit(train) first (or load a saved model).")

    @classmethod
    def array_shapes(cls, params: dict[str, Any], n_items: int) -> dict[str, tuple[int, ...]]:
        """The shape of each fitted array for ``n_items`` items (checked at fit and load);
        default: no shapes declared (names, dtypes and finiteness are still checked)."""
        return {}

    @classmethod
    def check_arrays(cls, params: dict[str, Any], items: Any,
                     arrays: dict[str, Any]) -> str | None:
        """What is wrong with fitted ``items`` and ``arrays`` (None: nothing): item ids must
        be distinct, one-dimensional; weights numeric, finite and of the declared shapes."""
        items = np.asarray(items)
        if items.ndim != 1 or len(items) == 0:
            return f"__items__ has shape {items.shape}; it must list the item ids (1-D, not empty)"
        if len(pd.unique(items)) != len(items):
            return f"__items__ repeats item ids ({len(items) - len(pd.unique(items))} repeats)"
        expected = cls.array_shapes(params, len(items))
        missing = sorted(set(expected) - set(arrays))
        if missing:
            return f"the arrays {missing} are missing"
        for name, value in arrays.items():
            value = np.asarray(value)
            if value.dtype.kind not in "fiu":
                return f"array {name!r} has dtype {value.dtype}; it must be numeric"
            if name in expected and value.shape != expected[name]:
                return (f"array {name!r} has shape {value.shape}; {len(items)} items need "
                        f"{expected[name]}")
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                return f"array {name!r} holds {int((~np.isfinite(value)).sum())} NaN/inf values"
        return None

    # ---- scoring --------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """Everything but the arrays, as plain JSON-able values."""
        return {"model": type(self).__name__, "params": self.get_params(),
                "user_col": self.user_col, "item_col": self.item_col}

    def score_frame(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """``(user ids, scores [n_users, n_items])`` of the users of ``frame`` given the items
        they had there (small data; :func:`~interactive_recsys.predict_topk` on the cluster)."""
        self._check_fitted()
        data = Interactions.from_frame(frame, self.user_col, self.item_col, items=self.items_)
        return data.users, self.score_arrays(self.get_params(), self.arrays_, data.indptr,
                                             data.indices)

    # ---- persistence ----------------------------------------------------------------------
    def save(self, path: str | os.PathLike, *, overwrite: bool = False,
             storage_options: dict[str, Any] | None = None) -> str:
        """Write ``model.json`` + ``arrays.npz`` into the folder ``path`` (atomically, with
        a ``_SUCCESS`` manifest); ``path`` may be an fsspec URL (with ``storage_options``).
        ``model.json`` records the SHA-256 of ``arrays.npz`` (``"sha256"``): :func:`load`
        refuses a weights file changed since."""
        self._check_fitted()
        meta = {"format": FORMAT, "version": FORMAT_VERSION, **self.config(),
                "info": self.info_, "arrays": sorted(self.arrays_)}
        with published_folder(path, storage_options, overwrite=overwrite) as tmp:
            np.savez(os.path.join(tmp, ARRAYS), __items__=_savable(self.items_),
                     **self.arrays_)
            meta["sha256"] = {ARRAYS: file_sha256(os.path.join(tmp, ARRAYS))}
            with open(os.path.join(tmp, "model.json"), "w") as f:
                json.dump(meta, f, indent=2, default=_json_default)
        return os.fspath(path) if is_remote(path) else os.path.abspath(os.fspath(path))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        state = f", fitted on {self.info_.get('users')} users" if self.fitted else ""
        return f"{type(self).__name__}({params}{state})"


def load(path: str | os.PathLike, *, storage_options: dict[str, Any] | None = None) -> Model:
    """A model saved with :meth:`Model.save` (reads JSON and arrays only, never pickle);
    ``path`` may be an fsspec URL (with ``storage_options``).

    ``arrays.npz`` must have the SHA-256 that ``model.json`` records: a file changed,
    truncated or removed since the save is a :class:`ModelFormatError` naming it, as a
    workflow folder's artifact is. A folder saved by an older version, without the record,
    loads with a :class:`~interactive_recsys.errors.ChecksumWarning` (save it again to
    record it)."""
    with local_copy(path, storage_options) as local:
        return _load(local, os.fspath(path))


def _load(path: str, shown: str) -> Model:
    refuse_links(path, "saved model folder", ModelFormatError)  # links: never followed
    meta_path = os.path.join(path, "model.json")
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise ModelFormatError(f"{shown!r} is not a saved model: it has no model.json. "
                               "Pass the folder written by model.save(path).") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise ModelFormatError(f"{meta_path!r} is not valid JSON ({type(err).__name__}: "
                               f"{str(err)[:200]}); save the model again.") from None
    if not isinstance(meta, dict):
        raise ModelFormatError(f"{meta_path!r} must hold a JSON object, got "
                               f"{type(meta).__name__}; save the model again.")
    if meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
        raise ModelFormatError(f"{meta_path!r} has format {str(meta.get('format'))[:60]!r} "
                               f"version {str(meta.get('version'))[:20]!r}; this version reads "
                               f"{FORMAT!r} version {FORMAT_VERSION}.")
    name = meta.get("model")
    if not isinstance(name, str) or name not in MODELS:
        raise ModelFormatError(f"{meta_path!r} names model {str(name)[:60]!r}; known models "
                               f"are {sorted(MODELS)}.")
    for field, kind in (("user_col", str), ("item_col", str), ("params", dict),
                        ("arrays", list), ("info", dict)):
        if field == "info" and field not in meta:
            continue
        if not isinstance(meta.get(field), kind):
            raise ModelFormatError(
                f"{meta_path!r}: the field {field!r} must be a JSON "
                f"{'string' if kind is str else 'object' if kind is dict else 'list'}, got "
                f"{type(meta.get(field)).__name__ if field in meta else 'nothing'}. The file "
                "was changed or damaged; save the model again.")
    if not all(isinstance(a, str) and a != "__items__" for a in meta["arrays"]):
        raise ModelFormatError(f"{meta_path!r}: the field 'arrays' must list array names "
                               "(strings); save the model again.")
    try:
        model = MODELS[name](user_col=meta["user_col"], item_col=meta["item_col"],
                             **meta["params"])
    except IRSError as err:
        raise ModelFormatError(f"{meta_path!r}: its params do not make a {name}: {err} "
                               "Save the model again.") from None
    except TypeError as err:  # an unknown parameter name
        raise ModelFormatError(f"{meta_path!r}: its params do not make a {name} ({err}); "
                               "save the model again.") from None
    _check_record(path, meta_path, meta)
    arrays_path = os.path.join(path, ARRAYS)
    try:
        with np.load(arrays_path, allow_pickle=False) as npz:
            items = npz["__items__"]
            arrays = {name: npz[name] for name in meta["arrays"]}
    except (OSError, KeyError, ValueError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise ModelFormatError(f"{arrays_path!r} cannot be read as the arrays {meta['arrays']} "
                               f"named in model.json ({err}); save the model again.") from None
    problem = model.check_arrays(model.get_params(), items, arrays)
    if problem:
        raise ModelFormatError(f"{arrays_path!r} does not hold a fitted {meta['model']}: "
                               f"{problem}. The file was changed or damaged; save the model "
                               "again.")
    model.items_, model.arrays_ = items, arrays
    model.info_ = meta.get("info", {})
    return model


def _check_record(path: str, meta_path: str, meta: dict[str, Any]) -> None:
    """Refuse (:class:`ModelFormatError`) an ``arrays.npz`` whose SHA-256 is not the one
    ``model.json`` records, or a malformed record; warn when there is none (an older save)."""
    record = meta.get("sha256")
    if record is None:
        warn_unrecorded(meta_path, "model", [ARRAYS], stacklevel=5)
        return
    if not isinstance(record, dict) or set(record) != {ARRAYS} or not (
            isinstance(record[ARRAYS], str) and _SHA256.match(record[ARRAYS])):
        raise ModelFormatError(
            f"{meta_path!r}: the field 'sha256' must record the SHA-256 of {ARRAYS} "
            f"({{{ARRAYS!r}: 64 hexadecimal digits}}), got {json.dumps(record)[:120]}. The "
            "file was changed or damaged; save the model again from a fitted one.")
    verify_checksums(path, record, meta_path, what="model", kind="weights file",
                     field="sha256", contents="weights file", error=ModelFormatError)


def _savable(items: np.ndarray) -> np.ndarray:
    return items.astype(str) if items.dtype == object else items


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# ---- running on the cluster ------------------------------------------------------------------
def read_interactions(train: Any, user_col: str, item_col: str, *, phase: str,
                      items: np.ndarray | None = None) -> Interactions:
    """The distinct (user, item) pairs of a Dataset or frame, read by one Dask computation."""
    ds = as_dataset(train)
    for col in (user_col, item_col):
        if col not in ds.schema.names:
            raise ParameterError(f"Column {col!r} is not in the data; its columns are "
                                 f"{ds.schema.names}. Pass user_col=/item_col= naming the "
                                 "user and item id columns.")
    (frame,) = compute(ds.arrow_ddf([user_col, item_col]), phase=phase)
    return Interactions.from_frame(ds.backend.to_pandas(frame), user_col, item_col, items)


def gpu_workers(client: Any) -> list[str]:
    """Addresses of the workers that carry the ``GPU`` resource."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return [a for a, w in workers.items() if (w.get("resources") or {}).get("GPU", 0) > 0]


def train_on_cluster(name: str, params: dict[str, Any], data: Interactions) -> dict[str, Any]:
    """``MODELS[name].fit_arrays(params, data)``: one task on the active cluster (asking for
    the ``GPU`` resource when a worker has it), or here without a distributed client."""
    client = active_client()
    if client is None:
        return MODELS[name].fit_arrays(params, data)
    resources = {"GPU": 1} if gpu_workers(client) else None
    [shipped] = client.scatter([data], hash=False)
    with dask.annotate(resources=resources) if resources else contextlib.nullcontext():
        task = dask.delayed(_fit_task, pure=False)(name, params, shipped,
                                                   dask_key_name=f"train-{name}-{time.time_ns()}")
    (arrays,) = compute(task, phase=f"fit {name}: train")
    return arrays


def _fit_task(name: str, params: dict[str, Any], data: Interactions) -> dict[str, np.ndarray]:
    # Unpickling this function on a worker imports ``interactive_recsys.models`` (the parent
    # package, which registers every model) before this module: MODELS is complete.
    return MODELS[name].fit_arrays(params, data)


__all__ = ["MODELS", "Interactions", "Model", "ModelFormatError", "encode", "load",
           "register", "to_dense"]
