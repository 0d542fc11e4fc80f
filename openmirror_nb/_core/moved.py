"""Modules that moved behind ``_core`` but that earlier versions documented: reading a name from
their old home still works, with a ``DeprecationWarning`` that names the call replacing it."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

DEFAULT = "the API at the package root (import openmirror_nb as om)"


def forwarder(module: str, instead: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``openmirror_nb.<module>`` that forwards to its ``_core`` home."""

    def __getattr__(name: str) -> Any:
        value = getattr(importlib.import_module(f"openmirror_nb._core.{module}"), name)
        message = f"openmirror_nb.{module}.{name} moved; use {instead.get(name, DEFAULT)}."
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return value

    return __getattr__
