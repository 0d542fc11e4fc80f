"""Open the storage behind a connect target: a local folder or a OneLake item.

The OneLake backend (and with it azure) is imported only when a OneLake target is opened.
"""

from __future__ import annotations

from typing import Any

from openmirror_nb._core.storage.base import Storage
from openmirror_nb._core.storage.local import LocalStorage
from openmirror_nb._core.target import LocalTarget, OneLakeTarget, Target

# Beside the landing zone of a local mirrored database: locks never change the landing zone.
LOCK_DIR = ".openmirror/locks"


def open_storage(target: Target, *, credential: Any = None) -> Storage:
    """The landing zone of ``target`` as a ``Storage``.

    Args:
        target: from ``parse_target``: a local mirrored database or a OneLake item.
        credential: an azure ``TokenCredential`` for OneLake; by default the Fabric notebook
            identity inside Fabric, else ``DefaultAzureCredential``. Ignored for local targets.

    Raises:
        MissingDependencyError: a OneLake target without ``openmirror-nb[azure]`` installed.

    Example:
        >>> open_storage(parse_target("abfss://ws@onelake.dfs.fabric.microsoft.com/db/Files/LandingZone"))
    """
    return _open(target, credential=credential, folder="Files/LandingZone")


def open_files_storage(target: Target, *, credential: Any = None) -> Storage:
    """The item's ``Files`` area (holding ``LandingZone`` and ``Monitoring``) as a ``Storage``."""
    return _open(target, credential=credential, folder="Files")


def _open(target: Target, *, credential: Any, folder: str) -> Storage:
    if isinstance(target, LocalTarget):
        return LocalStorage(target.root / folder, lock_dir=target.root / LOCK_DIR)
    if isinstance(target, OneLakeTarget):
        from openmirror_nb._core.storage.adls import AdlsStorage

        return AdlsStorage.from_target(target, credential=credential, folder=folder)
    raise TypeError(f"open_storage() needs a LocalTarget or a OneLakeTarget, not {type(target).__name__}.")
