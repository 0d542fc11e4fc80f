"""What every table of one ``db.run_plan`` shares (``Runner``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from openmirror_nb._core.model import PartnerInfo
from openmirror_nb._core.progress import ProgressCallback
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from openmirror_nb._core.sources.table import Source


@dataclass(frozen=True)
class Runner:
    """What every table of one run shares: where it goes, how it pushes, and the run's options."""

    storage: Storage
    source: Source
    lock_timeout: float
    partner: PartnerInfo
    accept_suggested: bool
    dry_run: bool
    overlap: float
    progress: ProgressCallback | None
