"""openmirror_nb: mirror Spark DataFrames into Microsoft Fabric open-mirrored databases.

``import openmirror_nb`` stays light: pyspark, ipywidgets, IPython and azure load only when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openmirror_nb.errors import (
    ChangeFeedError,
    ConfigError,
    InvalidNameError,
    KeyColumnsError,
    LandingZoneError,
    LockTimeoutError,
    MirrorError,
    MirrorWaitTimeoutError,
    MissingDependencyError,
    NotSupportedError,
    OpenMirrorError,
    PathExistsError,
    PushCancelledError,
    ReseedError,
    SchemaChangeError,
    StorageError,
    UnsupportedTypeError,
)
from openmirror_nb.model import (
    DelimitedTextOptions,
    PartnerInfo,
    PushResult,
    RowMarker,
    TableOptions,
)

if TYPE_CHECKING:
    from openmirror_nb import widgets
    from openmirror_nb.api import MirroredDatabase, connect
    from openmirror_nb.mirror import LocalMirror
    from openmirror_nb.pipeline.arrow_input import arrow_to_spark
    from openmirror_nb.pipeline.delta_sync import read_delta

__version__ = "0.1.0"

__all__ = [
    "ChangeFeedError",
    "ConfigError",
    "DelimitedTextOptions",
    "InvalidNameError",
    "KeyColumnsError",
    "LandingZoneError",
    "LocalMirror",
    "LockTimeoutError",
    "MirrorError",
    "MirrorWaitTimeoutError",
    "MirroredDatabase",
    "MissingDependencyError",
    "NotSupportedError",
    "OpenMirrorError",
    "PartnerInfo",
    "PathExistsError",
    "PushCancelledError",
    "PushResult",
    "ReseedError",
    "RowMarker",
    "SchemaChangeError",
    "StorageError",
    "TableOptions",
    "UnsupportedTypeError",
    "__version__",
    "arrow_to_spark",
    "connect",
    "read_delta",
    "widgets",
]

_LAZY = {
    "arrow_to_spark": "openmirror_nb.pipeline.arrow_input",
    "connect": "openmirror_nb.api",
    "MirroredDatabase": "openmirror_nb.api",
    "LocalMirror": "openmirror_nb.mirror",
    "read_delta": "openmirror_nb.pipeline.delta_sync",
}


def __getattr__(name: str) -> Any:
    # The API and the mirror pull in pyarrow and deltalake, the panels ipywidgets: load them on
    # first use only.
    if name == "widgets":
        return importlib.import_module("openmirror_nb.widgets")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'openmirror_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    # Tab completion lists dir(): show the public names, lazy ones included, and hide the helper
    # imports (annotations, Any, importlib, TYPE_CHECKING) and the submodules loaded so far.
    return sorted({*__all__, *(n for n in globals() if n.startswith("__") and n.endswith("__"))})


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext openmirror_nb``: register the ``%openmirror`` magic (see ``openmirror_nb.magics``)."""
    importlib.import_module("openmirror_nb.magics").load_ipython_extension(shell)


def unload_ipython_extension(shell: Any) -> None:
    """``%unload_ext openmirror_nb``: stop the mirrors the magic started and unregister it."""
    importlib.import_module("openmirror_nb.magics").unload_ipython_extension(shell)
