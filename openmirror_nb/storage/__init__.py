"""Storage backends behind one narrow protocol, chosen by URL scheme and imported lazily."""

from __future__ import annotations

from openmirror_nb.storage.base import Entry, Storage

__all__ = ["Entry", "Storage"]
