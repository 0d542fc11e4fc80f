"""The records a ``StatusReport`` (``status.report``) is made of: one ``TableStatus`` per table,
the replicator's ``ReplicatorStatus`` and, when asked for, a ``Reconciliation`` of row counts.

Built in ``status.gather``; a ``TableStatus`` draws itself in full (``to_html``: the monitoring
pane's detail view), with the pieces of ``status.render``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, get_args

from openmirror_nb._core.landing_zone.blockers import Blocker, BlockerKind
from openmirror_nb._core.landing_zone.stream_lags import PartitionLag, lag_text
from openmirror_nb._core.landing_zone.table_scan import DataFileInfo
from openmirror_nb._core.status.freshness_html import freshness_html
from openmirror_nb._core.status.freshness_records import Freshness
from openmirror_nb._core.status.render import ago, badge, since
from openmirror_nb._core.status.row_counts import Reconciliation

# The badge of a table, worst first: the mirror failed it; something stops it (a gap, an empty
# file, ...); something needs tidying but does not stop it; files wait; all replicated; the mirror
# has not said anything about it yet.
Health = Literal["failed", "blocked", "warning", "pending", "ok", "unknown"]
HEALTH_ORDER: tuple[Health, ...] = ("failed", "blocked", "warning", "pending", "ok", "unknown")
# Blockers that stop replication (a name conflict too: only one of the folders is mirrored); the
# others (left-over staging, a drop's trash, a long-held lock) only need attention.
STOPPING = frozenset(get_args(BlockerKind)) - {"orphaned_staging", "unfinished_drop", "stale_lock"}
SCHEMA_CHANGE_CODE = "SchemaChangeNotSupported"  # the service's errorCode for a type change
NOT_LISTED = "NotListed"  # the table's status while the mirror does not list it (yet)

COLUMNS = (
    "table",
    "health",
    "status",
    "pending_files",
    "processed_files",
    "blocked_by",
    "error",
    "run_error",
    "failed_file",
    "last_sequence",
    "processed_rows",
    "mirrored_rows",
    "state_rows",
    "source_rows",
    "last_push",
    "last_sync",
    "last_checked",
    "lag_seconds",
    "stream_query",
    "stream_batch",
    "stream_batch_time",
    "stream_batch_rows",
    "stream_seconds",
    "stream_lag",
    "held_events",
    "age_seconds",
    "published_p50",
    "published_p95",
    "applied_p50",
    "applied_p95",
    "freshness_goal",
)


@dataclass(frozen=True)
class TableStatus:
    """One table as the landing zone, the mirror and the publisher's state see it.

    Attributes:
        table: ``name`` or ``schema.name``, as ``db.push`` names it.
        folder: The table folder in the landing zone (``""`` if only the mirror lists it).
        health: The badge (``Health``), from all the sources.
        status: The mirror's word for the table (``Initialized``, ``Snapshotting``, ``Replicating``,
            ``Reseeding``, ``Stopped``, ``Failed``), or ``NotListed``.
        pending: Data files not processed yet, in the order the mirror takes them.
        processed_files: Files processed (moved to ``_ProcessedFiles``, plus the newest one, kept
            in place).
        ready_to_delete: Files in ``_FilesReadyToDelete``.
        blockers: What the listing shows stopping or threatening the table, each with its fix.
        error_code: The mirror's ``errorCode`` (empty unless failed).
        error: The mirror's error text, or the note of a table waiting on a gap.
        failed_file: The data file the mirror failed on, when its error names one.
        last_sequence: The largest sequence number published.
        processed_rows: Rows the mirror reports processed (cumulative, changes included).
        mirrored_rows: Rows in the mirrored table, when counted (local databases, ``reconcile``).
        state_rows: Rows in the publisher's key state, when known exactly.
        last_push: When this toolkit last pushed to the table; ``last_sync``: the mirror's last sync.
        last_checked: When a push last looked at the table: the last push, or a later one that
            found nothing to publish. A scheduled job that keeps finding nothing keeps this
            moving while ``last_push`` stands still; a dead job lets both age.
        lag_seconds: How long the oldest pending file has waited (0 with nothing pending).
        reconciliation: Row counts compared, with ``reconcile=True``.
        notes: Anything a source could not tell, in words.
        run_error: The one-line error of the table's last ``db.run_plan`` run, if it failed to
            read or publish (the table is ``failed`` until a later run of it succeeds).
        stream_query: The streaming query whose micro-batch the table got last (``db.batch_sink``).
        stream_batch: That batch's id; ``stream_batch_time``: when it was published.
        stream_batch_rows: Change rows that batch published to the table.
        stream_seconds: How long ago that batch ended (``lag_seconds`` is the pending files' wait):
            a stream whose trigger interval is much shorter than this is stalled or stopped.
        stream_lag: A Kafka mirror's topic partitions (``db.mirror_kafka``): the offset applied,
            the latest and ``.lag``, the messages between, as last saved after a batch.
        held_events: Messages a Kafka mirror keeps for the table since a schema change stopped
            it (applied once the table is reseeded; the note says why and how).
        freshness: How fresh the table is (``Freshness``: age, published and applied figures),
            ``None`` when nothing is known of it.
    """

    table: str
    folder: str
    health: Health
    status: str
    pending: tuple[DataFileInfo, ...] = ()
    processed_files: int = 0
    ready_to_delete: int = 0
    blockers: tuple[Blocker, ...] = ()
    error_code: str = ""
    error: str = ""
    failed_file: str | None = None
    last_sequence: int = 0
    processed_rows: int | None = None
    mirrored_rows: int | None = None
    state_rows: int | None = None
    last_push: datetime | None = None
    last_sync: datetime | None = None
    last_checked: datetime | None = None
    lag_seconds: float | None = None
    reconciliation: Reconciliation | None = None
    notes: tuple[str, ...] = ()
    run_error: str = ""
    # streamed tables (db.batch_sink)
    stream_query: str | None = None
    stream_batch: int | None = None
    stream_batch_time: datetime | None = None
    stream_batch_rows: int | None = None
    stream_seconds: float | None = None
    stream_lag: tuple[PartitionLag, ...] = ()
    held_events: int = 0
    freshness: Freshness | None = None

    @property
    def blocked_by(self) -> str:
        """The first thing that stops the table, in words (empty if nothing does)."""
        first = [b for b in self.blockers if b.kind in STOPPING] or list(self.blockers)
        return first[0].message if first else ""

    @property
    def advice(self) -> tuple[str, ...]:
        """What to do, one line per problem, worst first."""
        lines: list[str] = []
        blockers = list(self.blockers)
        if self.run_error:
            lines.append(f"the last run failed: {self.run_error}")
        if self.health == "failed" and (self.status == "Failed" or not self.run_error):
            where = f" on file {self.failed_file}" if self.failed_file else ""
            # the listing's word for the failed file (empty, misnamed) is the one to act on
            named = next((b for b in blockers if self.failed_file and b.file == self.failed_file), None)
            if named is not None:
                blockers.remove(named)
            if named is not None:
                lines.append(f"the mirror failed: {named.message}")
            else:
                lines.append(f"the mirror failed{where}: {self.error or self.error_code}")
            if self.error_code == SCHEMA_CHANGE_CODE:
                lines.append(
                    "a column changed in a way the mirror cannot absorb: only a reseed fixes it "
                    f"(db.drop({self.table!r}, wait=True), then push the table again)."
                )
        lines += [b.message for b in blockers if b.kind in STOPPING]
        lines += [b.message for b in blockers if b.kind not in STOPPING]
        lines += list(self.notes)
        return tuple(lines)

    @property
    def rows_text(self) -> str:
        """Rows of the mirrored table when counted, else what the mirror processed, as text."""
        if self.mirrored_rows is not None:
            return f"{self.mirrored_rows:,}"
        if self.processed_rows is not None:
            return f"{self.processed_rows:,} processed"
        return "-"

    def to_html(self, *, now: datetime | None = None) -> str:
        """The table in full: its counts, error, what to do and its pending files (the first 50),
        times relative to ``now`` (default: the present; a report passes when it was taken)."""
        return _detail_html(self, now or datetime.now(UTC))

    def _repr_html_(self) -> str:
        return self.to_html()

    def row(self) -> dict[str, object]:
        """The table's line of ``StatusReport.to_pandas()``."""
        recon = self.reconciliation
        return {
            "table": self.table,
            "health": self.health,
            "status": self.status,
            "pending_files": len(self.pending),
            "processed_files": self.processed_files,
            "blocked_by": self.blocked_by,
            "error": self.error,
            "run_error": self.run_error,
            "failed_file": self.failed_file,
            "last_sequence": self.last_sequence,
            "processed_rows": self.processed_rows,
            "mirrored_rows": self.mirrored_rows,
            "state_rows": self.state_rows,
            "source_rows": recon.source_rows if recon else None,
            "last_push": self.last_push,
            "last_sync": self.last_sync,
            "last_checked": self.last_checked,
            "lag_seconds": self.lag_seconds,
            "stream_query": self.stream_query,
            "stream_batch": self.stream_batch,
            "stream_batch_time": self.stream_batch_time,
            "stream_batch_rows": self.stream_batch_rows,
            "stream_seconds": self.stream_seconds,
            "stream_lag": sum(p.lag for p in self.stream_lag) if self.stream_lag else None,
            "held_events": self.held_events,
            **_freshness_row(self.freshness),
        }


def _freshness_row(f: Freshness | None) -> dict[str, float | None]:
    return {
        "age_seconds": f.age if f else None,
        "published_p50": f.published.p50 if f else None,
        "published_p95": f.published.p95 if f else None,
        "applied_p50": f.applied.p50 if f else None,
        "applied_p95": f.applied.p95 if f else None,
        "freshness_goal": f.goal if f else None,
    }


@dataclass(frozen=True)
class ReplicatorStatus:
    """The database's replicator: ``Running``, ``Stopped`` (or the REST API's ``Initializing``,
    ``Starting``...), ``NotStarted``, or ``Stale`` (its ``replicator.json`` says ``Running`` but
    its heartbeat is older than ``STALE_AFTER``, 10 min: it is not running), its error, and how
    old its last heartbeat is."""

    status: str
    heartbeat: datetime | None = None
    heartbeat_age: float | None = None
    error_code: str = ""
    error: str = ""
    source: str = ""

    @property
    def summary(self) -> str:
        """One line: ``replicator Running, heartbeat 12 s ago`` and the error, if any."""
        beat = f", heartbeat {ago(self.heartbeat_age)} ago" if self.heartbeat_age is not None else ""
        error = f"; {self.error_code or 'error'}: {self.error}" if self.error else ""
        if self.status == "Stale":
            return f"replicator not running (stale: last said Running){beat}{error}"
        return f"replicator {self.status}{beat}{error}"


def _detail_html(t: TableStatus, now: datetime) -> str:
    facts = [
        ("status", t.status),
        ("folder", t.folder or "(deleted)"),
        ("last sequence", str(t.last_sequence)),
        ("processed files", f"{t.processed_files:,}"),
        ("ready to delete", f"{t.ready_to_delete:,}"),
        ("rows", t.rows_text),
        ("key-state rows", "-" if t.state_rows is None else f"{t.state_rows:,}"),
        ("last push", since(t.last_push, now)),
        ("last checked", since(t.last_checked, now)),
        ("last sync", since(t.last_sync, now)),
    ]
    if t.stream_query is not None:
        facts.append(("stream", f"query {t.stream_query}"))
        rows = f"{t.stream_batch_rows:,} rows" if t.stream_batch_rows is not None else "rows unknown"
        facts.append(("last batch", f"{t.stream_batch}, {rows}, ended {since(t.stream_batch_time, now)}"))
    if t.stream_lag:
        facts.append(("kafka lag", lag_text(t.stream_lag)))
    if t.held_events:
        facts.append(("kept events", f"{t.held_events:,}, applied once the table is reseeded"))
    if t.error:
        facts.append(("error", f"{t.error_code}: {t.error}" if t.error_code else t.error))
    if t.reconciliation is not None:
        facts.append(("row counts", t.reconciliation.message))
    cells = "".join(
        f"<tr><th style='text-align:left;white-space:nowrap;padding-right:1em'>{html.escape(k)}</th>"
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in facts
    )
    files = "".join(
        f"<tr><td><code>{html.escape(f.name)}</code></td><td style='text-align:right'>{f.size:,} B</td>"
        f"<td>{ago(max(0.0, now.timestamp() - f.mtime))} ago</td></tr>"
        for f in t.pending[:50]
    )
    more = f"<div>... and {len(t.pending) - 50:,} more</div>" if len(t.pending) > 50 else ""
    pending = f"<b>Pending files</b><table>{files}</table>{more}" if files else "<i>No pending files.</i>"
    problems = "".join(f"<li>{html.escape(line)}</li>" for line in t.advice)
    return (
        f"<div class='om-detail' data-table='{html.escape(t.table)}'>{badge(t.health)} "
        f"<b>{html.escape(t.table)}</b>"
        f"<table>{cells}</table>{f'<ul>{problems}</ul>' if problems else ''}"
        f"{freshness_html(t.freshness)}{pending}</div>"
    )
