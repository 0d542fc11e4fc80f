"""Moved: ``openmirror_nb.fabric`` is internal now; use the API at the package root. Names read
from here still work, with a ``DeprecationWarning``."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_NEW = {
    "scan": "db.scan(table)",
    "get_mirroring_status": "db.status()",
    "get_tables_mirroring_status": "db.status()",
    "read_monitoring_files": "db.status()",
}


def __getattr__(name: str) -> Any:
    value = getattr(importlib.import_module("openmirror_nb._core.fabric"), name)
    instead = _NEW.get(name, "the API at the package root (import openmirror_nb as om)")
    message = f"openmirror_nb.fabric.{name} moved; use {instead}."
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    return value
