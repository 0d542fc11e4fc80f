"""The local mirror: a single-process emulator of the Fabric open-mirroring replicator.

``LocalMirror(path).run_once()`` replicates a local mirrored database's landing zone into Delta
tables under ``Tables/<schema>/<table>`` exactly as the landing-zone contract describes, and
writes ``Files/Monitoring``. Importing this package does not import pyspark.
"""

from __future__ import annotations

from openmirror_nb._core.mirror.delta_read import read_delta_arrow, read_delta_pandas, read_delta_spark
from openmirror_nb._core.mirror.replicator import LocalMirror
from openmirror_nb._core.mirror.results import MirrorRun, TableRun
from openmirror_nb._core.mirror.table_sync import SyncLimits

__all__ = [
    "LocalMirror",
    "MirrorRun",
    "SyncLimits",
    "TableRun",
    "read_delta_arrow",
    "read_delta_pandas",
    "read_delta_spark",
]
