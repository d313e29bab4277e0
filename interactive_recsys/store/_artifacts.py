"""Where fitted artifacts live, and the rules that keep them there.

* Artifact files are named by the step and an index (``categorify-1/vocab-000``), never by
  a column name: a column name is data, it may hold ``../`` or start with ``/``.
* Every path read from a workflow's state is resolved and must stay inside the artifacts
  folder (:func:`resolve`), so a crafted ``workflow.json`` cannot point a lookup elsewhere.
* A workflow fitted without ``artifacts_dir`` writes into a temporary folder that is removed
  when nothing uses it any more (garbage collection or interpreter exit):
  :class:`TemporaryArtifacts`.

>>> resolve("/data/wf/artifacts", "categorify-1/vocab-000")
'/data/wf/artifacts/categorify-1/vocab-000'
>>> try:
...     resolve("/data/wf/artifacts", "../../etc")
... except WorkflowFormatError as exc:
...     print(str(exc)[:57])
The artifact path '../../etc' leads outside the artifacts
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import weakref

from interactive_recsys.errors import ParameterError, WorkflowFormatError


def key_directory(node_directory: str, index: int, prefix: str = "vocab") -> str:
    """The folder of a step's ``index``-th table: named by position, never by column."""
    return os.path.join(node_directory, f"{prefix}-{index:03d}")


def resolve(root: str | None, relative: object, what: str = "artifact path") -> str:
    """``root/relative``, refused (:class:`WorkflowFormatError`) unless it stays inside
    ``root`` once ``..`` and symbolic links are resolved."""
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise WorkflowFormatError(f"The {what} {relative!r} is not a relative path inside the "
                                  "artifacts folder; the saved workflow is damaged: save it "
                                  "again from a fitted workflow.")
    if root and "://" in root:  # a URL: no links to follow, only ``..`` to refuse
        full = posixpath.normpath(posixpath.join(root.split("://", 1)[1], relative))
        if relative.startswith("/") or not (full + "/").startswith(
                posixpath.normpath(root.split("://", 1)[1]) + "/"):
            raise WorkflowFormatError(f"The {what} {relative!r} leads outside the artifacts "
                                      f"folder {root!r}; a workflow only reads its own "
                                      "artifacts. Save it again from a fitted workflow.")
        return f"{root.split('://', 1)[0]}://{full}"
    base = os.path.realpath(root or ".")
    full = os.path.realpath(os.path.join(base, relative))
    if os.path.isabs(relative) or os.path.commonpath([base, full]) != base:
        raise WorkflowFormatError(f"The {what} {relative!r} leads outside the artifacts folder "
                                  f"{base!r}; a workflow only reads its own artifacts. Save it "
                                  "again from a fitted workflow.")
    return os.path.join(root or ".", relative) if root else full


class TemporaryArtifacts:
    """A fresh temporary artifacts folder, removed when the last reference goes away or the
    interpreter exits (``weakref.finalize``). Pickling gives the path only, so a copy on a
    Dask worker never removes the folder."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="irs-artifacts-")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)

    def cleanup(self) -> None:
        self._finalizer()

    def __reduce__(self) -> tuple:
        return (str, (self.path,))

    def __deepcopy__(self, memo: dict) -> TemporaryArtifacts:
        return self  # copies of a workflow share (and keep alive) one folder

    def __repr__(self) -> str:
        return f"TemporaryArtifacts({self.path!r})"


def remote_workers() -> list[str]:
    """Addresses of the active Dask client's workers that run on other machines (their
    host is none of this machine's addresses); empty without a client."""
    try:
        from distributed import default_client

        workers = list(default_client().scheduler_info(n_workers=-1)["workers"])
    except (ValueError, ImportError):
        return []
    import socket
    from urllib.parse import urlsplit

    import psutil

    local = {"localhost", "127.0.0.1", "::1", socket.gethostname()}
    local |= {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values()
              for a in addrs}
    return [w for w in workers if (urlsplit(w).hostname or "") not in local
            and not (urlsplit(w).hostname or "").startswith("127.")]


def check_temporary_artifacts_reach_workers() -> None:
    """Refuse a temporary artifacts folder (on this machine's disk) when workers run on other
    machines: they could not write or read the vocabularies there."""
    elsewhere = remote_workers()
    if elsewhere:
        raise ParameterError(
            f"Workers {elsewhere[:3]} run on other machines, which cannot read this machine's "
            "temporary artifacts folder. Pass artifacts_dir= a URL of an object store the "
            "workers reach (e.g. Workflow(..., artifacts_dir='s3://bucket/wf-artifacts', "
            "storage_options=...)) or a folder every worker mounts.")
