"""What every table of one ``db.run_plan`` shares (``Runner``), as a strategy's ``push`` is given it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from openmirror_nb._core.landing_zone.freshness_log import SourceTimes
from openmirror_nb._core.model import PartnerInfo, PushResult
from openmirror_nb._core.progress import ProgressCallback
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.sources.plan import PlannedTable
    from openmirror_nb._core.sources.table import Source


@dataclass(frozen=True)
class Runner:
    """What every table of one run shares: where it goes, how it pushes, and the run's options;
    and, in the copy one table's run is given, when that table's read began (``read_at``)."""

    storage: Storage
    source: Source
    lock_timeout: float
    partner: PartnerInfo
    accept_suggested: bool
    dry_run: bool
    overlap: float
    progress: ProgressCallback | None
    reread: bool = False  # read every table, even one its source says has not changed
    # epoch seconds, this machine's clock: set by run_table just before it reads the table
    read_at: float | None = None

    @property
    def source_times(self) -> SourceTimes | None:
        """The table's read time as its pushes carry it (``PushRequest.source_times``)."""
        return None if self.read_at is None else SourceTimes.read_at(self.read_at)

    def push(self, planned: PlannedTable, frame: DataFrame) -> PushResult:
        """``frame`` pushed as a snapshot of ``planned``'s table (diffed against its last push),
        with the run's lock timeout, partner and progress, and the table's read time for its
        freshness: ``snapshot``'s push, and what a strategy of your own calls with the frame it
        makes."""
        from openmirror_nb._core.pipeline.push.request import PushRequest
        from openmirror_nb._core.pipeline.push.run import run_push

        request = PushRequest.snapshot(
            table=planned.table,
            keys=planned.keys,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
            feed=planned.feed,  # a snapshot reads its update_marker
        )
        request = replace(request, source_times=self.source_times)
        return run_push(self.storage, frame, request, self.progress)
