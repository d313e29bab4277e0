"""Files and folders below every layer: fsspec storage (:mod:`.storage`), atomic output
folders, manifests, writer leases, the object-store commit protocol (:mod:`.commit`) and
artifacts folders. Imports nothing of the package but its errors.
"""

from interactive_recsys.store import commit, storage

__all__ = ["commit", "storage"]
