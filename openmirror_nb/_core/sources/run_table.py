"""One planned table in a run of ``db.run_plan``: the gates (disabled, no key, keys only suggested,
problems in the plan), the source's word that the table has not changed since the last run
(``unchanged``: then it is not read), the run-time checks (the source table is there and
readable, the keys are the mirrored table's), then its strategy's push. Whatever goes wrong
becomes this table's one-line ``failed``; nothing here stops another table."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError, KeyColumnsError, OpenMirrorError, user_line
from openmirror_nb._core.landing_zone.run_outcome import clear_failed_run, record_failed_run
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import PushResult, SyncResult
from openmirror_nb._core.sources.plan import PlannedTable
from openmirror_nb._core.sources.plan_strategy import feed_problem, get_strategy
from openmirror_nb._core.sources.run_result import PlanTableRun
from openmirror_nb._core.sources.runner import Runner
from openmirror_nb._core.sources.unchanged import Asked, ask, remember, unchanged
from openmirror_nb._core.storage.base import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.sources.table import Source

log = logging.getLogger(__name__)


def run_table(runner: Runner, planned: PlannedTable) -> PlanTableRun:
    """Run one planned table; never raises for that table's own trouble (it is ``failed``)."""
    started = time.monotonic()
    try:  # a strategy no one registered (or that cannot be imported) fails this table alone
        strategy = get_strategy(planned.strategy)
        unread = feed_problem(planned)
        if unread:
            raise ConfigError(f"{unread}.")
        skipped = gate(planned, accept_suggested=runner.accept_suggested)
        if skipped:
            return _done(planned, started, "skipped", skipped)
        asked = ask(runner.source, planned)  # before the read: a change during it is seen next time
        same = unchanged(runner, planned, asked)
        if same:
            return _done(planned, started, "unchanged", same)
        # The read begins now: a Delta or catalog table's version is fixed as read_source makes the
        # frame, a JDBC query runs later, during the push. Every change the source committed
        # before this moment is in the rows pushed either way (for JDBC a bound from below, by
        # the time the checks before the push take), so it is the table's read time
        # (PushRequest.source_times; a delta_sync push carries its commit times instead).
        runner = replace(runner, read_at=time.time())
        frame = read_source(runner.source, planned)
        check_keys(runner.storage, planned)
        if runner.dry_run:
            return _done(planned, started, "ok", strategy.would_push(runner, planned, frame))
        result = strategy.push(runner, planned, frame)
    except Exception as exc:  # this table's failure is its own: the others run on
        line = one_line(runner.source, exc)
        if not runner.dry_run:
            _remember(runner.storage, planned, line)
        return _done(planned, started, "failed", line)
    _remember(runner.storage, planned, None, asked, result)
    return _done(planned, started, "unchanged" if _nothing(result) else "ok", result=result)


def _remember(
    storage: Storage,
    planned: PlannedTable,
    error: str | None,
    asked: Asked | None = None,
    result: PushResult | SyncResult | None = None,
) -> None:
    """Record the run's failure (``error``) or its success for ``db.status``, and the source's
    version the success read (forgotten on a failure); a landing zone that cannot take the
    records does not change the run's result, it is logged."""
    remember(storage, planned, asked if error is None else None, result)
    try:
        if error is None:
            clear_failed_run(storage, table=planned.table)
        else:
            record_failed_run(storage, table=planned.table, error=error)
    except Exception:
        log.exception("Recording the run of %s for db.status failed", planned.table)


def gate(planned: PlannedTable, *, accept_suggested: bool) -> str | None:
    """Why a run leaves ``planned`` alone, or ``None`` when it runs it."""
    if not planned.enabled:
        return "disabled in the plan (enabled: false)"
    if planned.problems:
        more = f" (and {len(planned.problems) - 1} more)" if len(planned.problems) > 1 else ""
        return (
            f"the plan found a problem: {planned.problems[0]}{more}; fix it and plan again "
            "(db.plan_sources(source, like=plan))"
        )
    if not planned.keys and get_strategy(planned.strategy).keys is True:
        return (
            "no key: declare keys in the plan (keys: [...], key_origin: declared), or mirror it "
            "insert-only with strategy: append"
        )
    if planned.key_origin == "suggested" and not accept_suggested:
        return (
            f"keys {list(planned.keys)} are only suggested by today's rows and can never change once "
            "pushed: accept them with run_plan(accept_suggested=True), or declare them in the plan "
            "(key_origin: declared)"
        )
    return None


def read_source(source: Source, planned: PlannedTable) -> DataFrame:
    """The source table, lazily, with the plan's declared column types; a table that is gone, a
    source that cannot be reached or a column whose type needs declaring fails here."""
    try:
        return source.read_typed(planned.source, planned.types)
    except OpenMirrorError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"Source table {planned.source!r} of {source!r} cannot be read ({one_line(source, exc)}); if "
            "it is gone, set enabled: false for it in the plan or plan again (db.plan_sources(source, "
            "like=plan))."
        ) from None


def check_keys(storage: Storage, planned: PlannedTable) -> None:
    """The plan's keys are the mirrored table's: keys never change once pushed."""
    meta = TableFolder.of(storage, planned.table).read_metadata()
    existing = meta.key_columns if meta else ()
    if meta is not None and set(existing) != set(planned.keys):
        raise KeyColumnsError(
            f"Table {planned.table} is mirrored with keyColumns {list(existing) or 'none'}, which never "
            f"change, but the plan gives {list(planned.keys) or 'none'}: put keys: {list(existing)} back "
            "in the plan, or change them through the schema wizard (om.widgets.SchemaWizard)."
        )


def one_line(source: Source, exc: BaseException) -> str:
    """``exc`` in one line (``errors.user_line``), without the source's secrets."""
    return user_line(exc, hide=source.hide)


def _nothing(result: PushResult | SyncResult | None) -> bool:
    push = result.push if isinstance(result, SyncResult) else result
    return push is None or not push.sequence_numbers


def _done(
    planned: PlannedTable,
    started: float,
    status: str,
    reason: str = "",
    result: PushResult | SyncResult | None = None,
) -> PlanTableRun:
    return PlanTableRun(
        source=planned.source,
        table=planned.table,
        strategy=planned.strategy,
        status=status,  # type: ignore[arg-type]  # one of RunStatus, by the callers above
        reason=reason,
        result=result,
        seconds=time.monotonic() - started,
    )
