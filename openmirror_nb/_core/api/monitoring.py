"""Monitoring through the handle: ``status``, ``scan`` and ``reconcile``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openmirror_nb._core.api.base import DatabaseBase
from openmirror_nb._core.errors import (
    ConfigError,
    OpenMirrorError,
    StorageError,
    user_line,
)
from openmirror_nb._core.status.report import StatusReport
from openmirror_nb._core.status.row_counts import Reconciliation

if TYPE_CHECKING:
    from openmirror_nb._core.landing_zone.table_scan import TableScan
    from openmirror_nb._core.status.freshness_records import Freshness


class Monitoring(DatabaseBase):
    """The handle's status methods (see ``MirroredDatabase``)."""

    def status(
        self, table: str | None = None, *, reconcile: bool = False, source: Any = None
    ) -> StatusReport:
        """What is pending, processed, blocked or failed, per table and file, and why.

        Joins the landing-zone listing (``landing_zone.scan``), ``Files/Monitoring`` (written by
        the service, or by the local mirror) and, inside Fabric, the REST mirroring status. A
        source that cannot be read becomes a note in the report, never an error.

        Args:
            table: One table (``name`` or ``schema.name``); default every table.
            reconcile: Also count the rows of the mirrored table and the key state (on Spark)
                and say which disagrees (see ``reconcile``).
            source: With ``table`` and ``reconcile``: the source DataFrame (Spark or pandas),
                counted too.

        Raises:
            LandingZoneError: ``table`` does not exist (the message names the tables that do).

        Example:
            >>> db.status()             # the HTML grid in a notebook; print() reads like git status
            >>> db.status().to_pandas()
        """
        from openmirror_nb._core.status.gather import build_report
        from openmirror_nb._core.status.reconcile import reconciled
        from openmirror_nb._core.status.sources import database_sources

        if source is not None and (table is None or not reconcile):
            raise ConfigError("status(source=...) counts one table's source: pass table= and reconcile=True.")
        sources = database_sources(
            self.target, self.storage, credential=self._credential, count_mirrored=reconcile
        )
        report = build_report(str(self.target), sources, table=table)
        if not reconcile:
            return report
        return reconciled(
            report,
            mirrored=sources.mirrored_rows,
            state=self._state_rows,
            source_rows=None if source is None else _row_count(source),
        )

    def scan(self, table: str) -> TableScan:
        """One table folder, from its listing alone: pending, processed and ready-to-delete
        files, and what blocks the table (a gap in the numbers, a zero-byte file, a name the
        contract does not allow, a missing ``_metadata.json``, an interrupted push, staging left
        by a dead push, an unfinished drop, a lock held for over an hour).

        Example:
            >>> db.scan("sales.orders").blockers
        """
        from openmirror_nb._core.landing_zone.table_scan import scan

        return scan(self.storage, table)

    def reconcile(self, table: str, df: Any = None) -> Reconciliation:
        """Compare the row counts of the mirrored table, the key state and (if given) ``df``,
        and say which one disagrees.

        Example:
            >>> db.reconcile("sales.orders", df).verdict
            'match'
        """
        found = self.status(table, reconcile=True, source=df).tables
        recon = found[0].reconciliation if found else None
        assert recon is not None  # status(table) has that table, or raised
        return recon

    def freshness(self, table: str) -> Freshness:
        """How fresh ``table`` is, and where the time goes: its age, the *published* and
        *applied* figures (latest, p50, p95 over the files of the last 15 minutes, at least the
        last 20), the time split into source → topic, topic → published (or source → published)
        and published → applied, the recent files' figures and the goal it misses, if any.

        The same as ``db.status(table)[table].freshness``, but never ``None``: a table with
        nothing known has ``age`` ``None`` and empty figures.

        Raises:
            LandingZoneError: ``table`` does not exist (the message names the tables that do).

        Example:
            >>> f = db.freshness("public.orders")
            >>> f.age, f.applied.p95, [(s.name, s.figure.p95) for s in f.stages]
        """
        from openmirror_nb._core.status.freshness_records import Freshness

        found = self.status(table).tables
        return (found[0].freshness if found else None) or Freshness(table=table)

    def set_freshness_goal(self, table: str, *, seconds: float | None) -> None:
        """Set how fresh ``table`` should be: ``db.status()`` warns, naming the slow stage, when
        its age or the p95 of its figures exceeds ``seconds``; ``None`` clears the goal. The goal
        is kept at the landing zone's root, so it outlives the table's reseeds. A plan's
        ``freshness_goal`` sets the same goal when the plan runs.

        Raises:
            ConfigError: ``seconds`` is not a positive number.
            LandingZoneError: ``table`` does not exist (the message names the tables that do).

        Example:
            >>> db.set_freshness_goal("public.orders", seconds=60)
        """
        from openmirror_nb._core.landing_zone.freshness_log import write_goal
        from openmirror_nb._core.landing_zone.table_folder import TableFolder

        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 < seconds < float("inf")
        ):
            raise ConfigError(
                f"seconds={seconds!r} is not a freshness goal: give a positive number of seconds, "
                "e.g. seconds=60, or seconds=None to clear it."
            )
        self.status(table)  # refuses a table that does not exist, naming those that do
        write_goal(self.storage, TableFolder.of(self.storage, table).lock_name, seconds)

    def _state_rows(self, table: str) -> int | None:
        from openmirror_nb._core.pipeline.keystate.stored import count_state_rows

        try:
            return count_state_rows(self.storage, table)
        except OpenMirrorError:
            raise
        except Exception as exc:  # Spark's errors: the count is missing, the report says why
            raise StorageError(f"reading the key state failed: {user_line(exc)}") from None


def _row_count(df: Any) -> int:
    """Rows of a Spark or pandas DataFrame."""
    count = getattr(df, "count", None)
    if hasattr(df, "sparkSession") and callable(count):
        return int(count())
    if hasattr(df, "shape"):
        return int(df.shape[0])
    raise ConfigError(f"source must be a Spark or pandas DataFrame, not {type(df).__name__}.")
