"""Storage backends behind one narrow protocol, chosen by target and imported lazily."""

from __future__ import annotations

from openmirror_nb._core.storage.base import Entry, Storage
from openmirror_nb._core.storage.registry import open_files_storage, open_storage

__all__ = ["Entry", "Storage", "open_files_storage", "open_storage"]
