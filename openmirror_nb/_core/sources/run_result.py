"""What ``db.run_plan`` did: one ``PlanTableRun`` per planned table (ok, unchanged, skipped or failed,
and why), gathered in a ``PlanRun`` shown as text, HTML and pandas."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from openmirror_nb._core.errors import ConfigError, did_you_mean
from openmirror_nb._core.model import PushResult, SyncResult

if TYPE_CHECKING:
    import pandas as pd

RunStatus = Literal["ok", "unchanged", "skipped", "failed"]
"""What became of one planned table: ``ok`` (published, or with ``dry_run`` would push),
``unchanged`` (nothing to publish: only its last-checked record was written; or, when its source
says it has not changed since the last run read it, not read and nothing written, which
``reason`` then says), ``skipped`` (not run, and ``reason`` says why) or ``failed`` (``reason`` is
its one-line error)."""
_COLOURS = {"ok": "#2e7d32", "unchanged": "#616161", "skipped": "#ef6c00", "failed": "#c62828"}
_SHOWN = 500  # rows of the plain and HTML views; to_pandas() has every table


@dataclass(frozen=True)
class PlanTableRun:
    """One planned table in a run.

    Attributes:
        source: The table as the source names it.
        table: The mirrored table.
        strategy: How it was mirrored (``snapshot``, ``delta_sync``, ``incremental``, ``append``).
        status: ``RunStatus``.
        reason: Why it was skipped or failed, or (``dry_run``) what it would push; else empty.
        result: The push (``PushResult``) or sync (``SyncResult``) that ran, if any.
        seconds: How long the table took.
    """

    source: str
    table: str
    strategy: str
    status: RunStatus
    reason: str = ""
    result: PushResult | SyncResult | None = None
    seconds: float = 0.0

    @property
    def push(self) -> PushResult | None:
        """The push that ran (a sync's own push), if any."""
        if isinstance(self.result, SyncResult):
            return self.result.push
        return self.result

    @property
    def rows(self) -> dict[str, int]:
        """Rows published per marker (``initial`` for a first load); empty when nothing was."""
        return dict(self.push.rows) if self.push else {}


@dataclass(frozen=True)
class PlanRun:
    """What ``db.run_plan`` did with each table of a plan, in the plan's order.

    Attributes:
        tables: One ``PlanTableRun`` per planned table.
        dry_run: Whether this was a dry run (nothing was written).
        seconds: How long the run took.
    """

    tables: list[PlanTableRun]
    dry_run: bool = False
    seconds: float = 0.0
    counts: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        counts = {s: 0 for s in _COLOURS}
        for run in self.tables:
            counts[run.status] += 1
        object.__setattr__(self, "counts", counts)

    @property
    def failed(self) -> list[PlanTableRun]:
        """The tables that failed, each with its one-line error in ``reason``."""
        return [t for t in self.tables if t.status == "failed"]

    @property
    def ok(self) -> bool:
        """True when no table failed (skipped tables do not count as failures)."""
        return not self.failed

    def table(self, name: str) -> PlanTableRun:
        """The run of the table whose source or target is ``name`` (exactly as the plan has it).

        Raises:
            ConfigError: no table of the run has that name (the message suggests the nearest).
        """
        for run in self.tables:
            if name in (run.source, run.table):
                return run
        names = [t.table for t in self.tables]
        raise ConfigError(f"The run has no table {name!r}.{did_you_mean(name, names)}")

    def to_pandas(self) -> pd.DataFrame:
        """One row per table: source, table, strategy, status, reason, rows published per marker,
        bytes, sequence numbers and seconds.

        Example:
            >>> run.to_pandas().query("status == 'failed'")
        """
        import pandas as pd

        rows = [
            {
                "source": t.source,
                "table": t.table,
                "strategy": t.strategy,
                "status": t.status,
                "reason": t.reason,
                "rows": t.rows,
                "bytes": t.push.bytes if t.push else 0,
                "sequence_numbers": list(t.push.sequence_numbers) if t.push else [],
                "seconds": round(t.seconds, 3),
            }
            for t in self.tables
        ]
        columns = ["source", "table", "strategy", "status", "reason", "rows", "bytes", "sequence_numbers"]
        return pd.DataFrame(rows, columns=[*columns, "seconds"])

    @property
    def unread(self) -> list[PlanTableRun]:
        """The unchanged tables that were not read: their source says they have not changed since
        the last run read them (``Source.version``)."""
        return [t for t in self.tables if t.status == "unchanged" and t.result is None]

    def summary(self) -> str:
        """One line: how many tables ended how (and how many unchanged ones were not read)."""
        what = "PlanRun (dry run)" if self.dry_run else "PlanRun"
        unread = len(self.unread)
        said = f"{unread:,} " if unread < self.counts["unchanged"] else ""
        notes = {"unchanged": f" ({said}not read: the source says so)" if unread else ""}
        counts = ", ".join(f"{n:,} {s}{notes.get(s, '')}" for s, n in self.counts.items() if n)
        return f"{what} of {len(self.tables):,} tables in {self.seconds:.1f} s: {counts or 'nothing to do'}"

    def __repr__(self) -> str:
        lines = [self.summary()]
        lines += [f"  FAILED {t.table} ({t.source}): {t.reason}" for t in self.failed]
        for t in self.tables[:_SHOWN]:
            if t.status != "failed":
                lines.append(f"  {t.status:<9} {t.table} ({t.source}){_detail(t)}")
        if len(self.tables) > _SHOWN:
            lines.append(f"  ... and {len(self.tables) - _SHOWN:,} more (run.to_pandas() has them all)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        failed = "".join(
            f"<li><b>{html.escape(t.table)}</b>: {html.escape(t.reason)}</li>" for t in self.failed
        )
        failures = f"<ul style='color:#c62828'>{failed}</ul>" if failed else ""
        heads = "".join(f"<th style='text-align:left'>{h}</th>" for h in ("status", "table", "source", ""))
        body = "".join(_row_html(t) for t in self.tables[:_SHOWN])
        more = (
            f"<div><i>... and {len(self.tables) - _SHOWN:,} more (run.to_pandas() has them all)</i></div>"
            if len(self.tables) > _SHOWN
            else ""
        )
        return (
            f"<div class='om-plan-run'><b>{html.escape(self.summary())}</b>{failures}"
            f"<table><tr>{heads}</tr>{body}</table>{more}</div>"
        )


def _detail(run: PlanTableRun) -> str:
    if run.reason:
        return f": {run.reason}"
    rows = ", ".join(f"{k} {v:,}" for k, v in run.rows.items())
    return f": {rows}" if rows else ""


def _row_html(run: PlanTableRun) -> str:
    colour = _COLOURS[run.status]
    cells = (
        f"<td style='color:{colour};text-align:left'>{run.status}</td>"
        f"<td style='text-align:left'>{html.escape(run.table)}</td>"
        f"<td style='text-align:left'>{html.escape(run.source)}</td>"
        f"<td style='text-align:left'>{html.escape(_detail(run).removeprefix(': '))}</td>"
    )
    return f"<tr data-status='{run.status}'>{cells}</tr>"
