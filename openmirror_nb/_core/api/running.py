"""Running many tables through the handle: ``run_plan`` (mirror every table of a source plan)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.progress import Progress, ProgressCallback, ProgressEvent

if TYPE_CHECKING:
    from openmirror_nb._core.sources import SourcePlan
    from openmirror_nb._core.sources.run_result import PlanRun

OVERLAP_SECONDS = 3600.0


class Running(DatabaseBase):
    """The handle's run of a source plan (see ``MirroredDatabase``)."""

    def run_plan(
        self,
        plan: SourcePlan,
        *,
        parallel: int = 4,
        dry_run: bool = False,
        accept_suggested: bool = False,
        overlap: float = OVERLAP_SECONDS,
        progress: Progress = None,
        reread: bool = False,
    ) -> PlanRun:
        """Mirror every enabled table of ``plan``, ``parallel`` tables at a time.

        Per table, by its strategy: ``snapshot`` pushes the whole table (only what changed is
        published), ``delta_sync`` syncs its change data feed, ``incremental`` upserts the rows past
        the watermark committed with its last files (re-reading ``overlap`` seconds before it for
        a timestamp or date watermark, publishing only rows that changed) and, with
        ``detect_deletes``, deletes the keys the source no longer has. A table is skipped, and the
        run says why, when it is disabled, has problems in the plan, has no key, or has keys that
        are only suggested (unless ``accept_suggested``). Before it pushes, each table is checked:
        the source table is readable and its keys are the mirrored table's.

        One table's failure (its source table gone, its keys changed, duplicate or NULL keys, the
        source unreachable) is that table's ``failed`` result with a one-line error; the other
        tables run, and a failed push leaves its table byte-for-byte as it was. A rerun publishes
        only what changed: an unchanged table writes nothing but its last-checked record. A table
        whose source says it has not changed since the last run read it (a Delta table's version,
        PostgreSQL's statistics: ``Source.version``) is not read at all, and is ``unchanged`` with
        the reason.

        Freshness: each push carries when its table's read began (a ``delta_sync`` push, its
        versions' commit times), for ``db.status``. The ``freshness_goal`` of each enabled table
        that has one is stored as the run starts (as ``db.set_freshness_goal`` does); a table
        whose plan entry has none keeps the goal ``db.set_freshness_goal`` gave it.

        Args:
            plan: From ``db.plan_sources`` or ``om.load_plan``.
            parallel: Tables pushed at a time (each on a thread, its Spark jobs in a group of its own).
            dry_run: Write nothing; say per table what it would push (one count of its rows).
            accept_suggested: Push tables whose keys were only suggested from their rows (keys never
                change once pushed: check them first).
            overlap: Seconds an ``incremental`` run re-reads before a timestamp or date watermark,
                for rows committed late with an earlier value.
            progress: Called with every push's progress events (``event.table`` says which table;
                events come from several threads at once). Default: in IPython, one line per
                table as its push ends (``TextProgress``); nothing in scripts; ``False``: nothing.
            reread: Read every table, also those whose source says they have not changed.

        Returns:
            PlanRun: per table its status (ok, unchanged, skipped, failed), reason and push result.

        Raises:
            ConfigError: ``plan`` is not a plan, or ``parallel`` is not a whole number of at least 1.
            PushCancelledError: interrupted; tables still staging published nothing, pushes already
                decided finished, and running the plan again finishes it.

        Example:
            >>> run = db.run_plan(om.load_plan("erp.yaml"), parallel=4)
            >>> run.failed
        """
        from openmirror_nb._core.errors import ConfigError
        from openmirror_nb._core.progress import TextProgress, _shell
        from openmirror_nb._core.sources import SourcePlan
        from openmirror_nb._core.sources.run import run_plan
        from openmirror_nb._core.sources.runner import Runner

        if not isinstance(plan, SourcePlan):
            raise ConfigError(
                f"run_plan takes a SourcePlan (from db.plan_sources or om.load_plan), not "
                f"{type(plan).__name__}."
            )
        if progress is None:  # in IPython, a line per table as it ends: 50 tables' phases are too many
            progress = _endings(TextProgress()) if _shell() is not None else False
        runner = Runner(
            storage=self.storage,
            source=plan.source,
            lock_timeout=self.lock_timeout,
            partner=self.partner,
            accept_suggested=accept_suggested,
            dry_run=dry_run,
            overlap=float(overlap),
            progress=progress or None,
            reread=bool(reread),
        )
        return run_plan(runner, plan, parallel=parallel)


def _endings(lines: ProgressCallback) -> ProgressCallback:
    """``lines`` told only how each push ended (finished, failed, cancelled)."""
    from openmirror_nb._core.progress import FINAL

    def told(event: ProgressEvent) -> None:
        if isinstance(event, FINAL):
            lines(event)

    return told
