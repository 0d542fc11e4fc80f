"""The monitoring surface's logic (design §6): ``StatusReport`` built from the landing-zone
listing, ``Files/Monitoring`` and the Fabric REST API, its text, HTML and JSON forms, and row-count
reconciliation. ``db.status()`` and ``db.reconcile()`` are the entry points; the ``MonitorPane``
only lays out what is here.
"""

from __future__ import annotations

from openmirror_nb._core.status.gather import Sources, build_report
from openmirror_nb._core.status.records import COLUMNS, Health, ReplicatorStatus, TableStatus
from openmirror_nb._core.status.report import StatusReport
from openmirror_nb._core.status.row_counts import Reconciliation

__all__ = [
    "COLUMNS",
    "Health",
    "Reconciliation",
    "ReplicatorStatus",
    "Sources",
    "StatusReport",
    "TableStatus",
    "build_report",
]
