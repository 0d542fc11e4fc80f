"""openmirror_nb: mirror Spark DataFrames into Microsoft Fabric open-mirrored databases.

``import openmirror_nb`` stays light: pyspark, ipywidgets, IPython and azure load only when used.
"""

from __future__ import annotations

from openmirror_nb.errors import (
    ChangeFeedError,
    ConfigError,
    KeyColumnsError,
    LandingZoneError,
    LockTimeoutError,
    MissingDependencyError,
    NotSupportedError,
    OpenMirrorError,
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

__version__ = "0.1.0"

__all__ = [
    "ChangeFeedError",
    "ConfigError",
    "DelimitedTextOptions",
    "KeyColumnsError",
    "LandingZoneError",
    "LockTimeoutError",
    "MissingDependencyError",
    "NotSupportedError",
    "OpenMirrorError",
    "PartnerInfo",
    "PushResult",
    "RowMarker",
    "SchemaChangeError",
    "StorageError",
    "TableOptions",
    "UnsupportedTypeError",
    "__version__",
]
