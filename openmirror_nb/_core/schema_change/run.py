"""Run a reseed as one resumable operation (design §7): record the plan, drop the table folder,
wait until the mirror no longer lists the table, load the new data as an initial load, wait until
the mirror has the table back, verify its row count.

Steps 1-4 run under the table lock, so another writer waits and then finds a new incarnation of the
table (``run_push`` refuses it with a message saying so). Every step is recorded in the reseed
journal (``landing_zone.reseed_journal``) before the next begins; a crash or a kernel restart
anywhere leaves the journal, and the same call continues from the step after the last one done.
The wait for the drop always runs: loading before the service dropped the old table is the very
mistake a reseed by hand makes.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import (
    ConfigError,
    LandingZoneError,
    MirrorError,
    OpenMirrorError,
    ReseedError,
)
from openmirror_nb._core.landing_zone.lifecycle import drop
from openmirror_nb._core.landing_zone.publish import crash_point
from openmirror_nb._core.landing_zone.reseed_journal import (
    LOADED,
    STEPS,
    ReseedJournal,
    end_reseed,
    read_reseed,
    write_reseed,
)
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import PushResult
from openmirror_nb._core.pipeline.push.request import PushRequest
from openmirror_nb._core.pipeline.push.run import run_push
from openmirror_nb._core.progress import ProgressCallback
from openmirror_nb._core.schema_change.plan import SchemaPlan
from openmirror_nb._core.schema_change.waits import Mirror

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from openmirror_nb._core.storage.base import Storage

StepCallback = Callable[[int, str, str], None]  # (step number, what it does, "running" | "done")


@dataclass(frozen=True)
class ReseedResult:
    """What ``apply_schema_change`` did.

    Attributes:
        table: ``name`` or ``schema.name``.
        reseeded: ``False`` for a plan the mirror absorbs: the data was simply pushed.
        push: The reload's (or the plain push's) result; ``None`` if a resumed reseed found the
            reload already in.
        rows: Rows published by the reload (what the mirrored table must hold).
        mirrored_rows: Rows of the mirrored table once it was back (``None``: not waited for).
        steps: The steps this call ran, in order (a resumed reseed skips those done before).
        seconds: How long this call took.
    """

    table: str
    reseeded: bool
    push: PushResult | None
    rows: int
    mirrored_rows: int | None
    steps: tuple[str, ...]
    seconds: float

    @property
    def verified(self) -> bool | None:
        """Whether the mirrored table holds as many rows as were pushed; ``None`` if not checked."""
        return None if self.mirrored_rows is None else self.mirrored_rows == self.rows

    @property
    def summary(self) -> str:
        """One line: what was done to the table, and whether the result was verified."""
        if not self.reseeded:
            return f"{self.table}: no reseed needed; pushed {self.rows:,} rows."
        if self.mirrored_rows is None:
            return f"{self.table}: reseeded with {self.rows:,} rows (not waited for the mirror)."
        return (
            f"{self.table}: reseeded and verified: the mirrored table holds {self.mirrored_rows:,} rows, "
            f"as pushed, in {self.seconds:.1f} s."
        )

    def __repr__(self) -> str:
        return f"ReseedResult({self.summary})"

    def _repr_html_(self) -> str:
        colour = "#2e7d32" if self.verified is not False else "#c62828"
        steps = "".join(f"<li>{html.escape(s)}</li>" for s in self.steps)
        return f"<div><b style='color:{colour}'>{html.escape(self.summary)}</b><ol>{steps}</ol></div>"


def apply_plan(
    *,
    storage: Storage,
    mirror: Mirror,
    plan: SchemaPlan,
    df: DataFrame,
    request: PushRequest,
    confirm: str,
    wait: bool,
    timeout: float,
    progress: ProgressCallback | None,
    on_step: StepCallback | None = None,
) -> ReseedResult:
    """Run (or continue) the reseed of ``plan`` with ``df`` (see the module docstring)."""
    started = time.monotonic()
    _check_call(plan, df, confirm)
    home = TableFolder.of(storage, plan.table)
    if not plan.needs_reseed and read_reseed(home) is None:
        result = run_push(storage, df, request, progress)
        return ReseedResult(
            plan.table, False, result, result.total_rows, None, (), time.monotonic() - started
        )
    pushed: list[PushResult] = []
    mirrored: list[int | None] = []
    with home.lock(timeout=request.lock_timeout):
        steps = _Steps(home, plan.table, _begin(home, plan), on_step)
        steps.run(1, lambda: None)  # the journal it writes records the plan
        steps.run(2, lambda: drop(home))
        steps.run(3, lambda: mirror.wait_dropped(home.ref, timeout=timeout))
        steps.run(4, lambda: _load(home, df, request, progress, steps.journal, pushed))
    rows = pushed[0].total_rows if pushed else steps.journal.rows
    if wait:
        steps.run(5, lambda: mirror.wait_back(home.ref, timeout=timeout))
        steps.run(6, lambda: mirrored.append(mirror.count(home.ref)))
    end_reseed(home)
    held = mirrored[0] if mirrored else (mirror.count(home.ref) if wait else None)
    _check_mirrored(plan.table, held, rows)
    push = pushed[0] if pushed else None
    return ReseedResult(plan.table, True, push, rows, held, tuple(steps.ran), time.monotonic() - started)


def _check_call(plan: SchemaPlan, df: DataFrame, confirm: str) -> None:
    """Refuse a reseed not confirmed by the table's name, or given another DataFrame than planned."""
    if confirm != plan.table:
        raise ConfigError(
            f"confirm must be the table's name, {plan.table!r} (got {confirm!r}): a reseed deletes the "
            "mirrored table until the reload is mirrored."
        )
    if json_schema(df) != plan.schema:
        raise ConfigError(
            f"df is not the DataFrame the plan for {plan.table!r} was made for (its columns or types "
            "differ); make the plan again with db.plan_schema_change(table, df)."
        )


class _Steps:
    """The steps of one call: runs each the journal has not done yet and records it there."""

    def __init__(
        self, home: TableFolder, table: str, journal: ReseedJournal, on_step: StepCallback | None
    ) -> None:
        self.home, self.table, self.journal, self.on_step = home, table, journal, on_step
        self.ran: list[str] = []

    def run(self, k: int, work: Callable[[], object]) -> None:
        """Step ``k`` unless done before: ``work`` does it; a journal it returns (the reload's,
        with what it loaded) is the one recorded."""
        journal = self.journal
        if journal.done >= k:
            return
        if self.on_step is not None:
            self.on_step(k, STEPS[k - 1], "running")
        try:
            done = work()
        except OpenMirrorError as exc:
            if journal.done < 2:
                raise  # the table is untouched: the error is the whole story
            raise ReseedError(
                f"Reseed of {self.table} stopped at {journal.step_text}: {exc} Run "
                f"db.apply_schema_change(plan, df, confirm={self.table!r}) again to continue from there.",
                step=journal.done + 1,
            ) from None
        self.journal = (done if isinstance(done, ReseedJournal) else journal).advanced(k)
        write_reseed(self.home, self.journal)
        self.ran.append(STEPS[k - 1])
        if self.on_step is not None:
            self.on_step(k, STEPS[k - 1], "done")
        crash_point(f"reseed_step_{k}")


def _check_mirrored(table: str, held: int | None, rows: int) -> None:
    """Refuse a finished reseed whose mirrored table does not hold the rows the reload pushed."""
    if held is not None and held != rows:
        raise MirrorError(
            f"Reseed of {table} is done but the mirrored table holds {held:,} rows where "
            f"{rows:,} were pushed; check db.status({table!r}) for what the mirror says."
        )


def _begin(home: TableFolder, plan: SchemaPlan) -> ReseedJournal:
    journal = read_reseed(home)
    if journal is not None and journal.plan != plan.digest:
        raise LandingZoneError(
            f"Table {plan.table} is being reseeded with another plan ({journal.step_text}); finish that "
            "one first, with the plan and DataFrame it was started with."
        )
    if journal is not None:
        return journal
    state = home.read_state()
    return ReseedJournal(
        table=plan.table,
        plan=plan.digest,
        done=0,
        started=time.time(),
        incarnation_before=state.incarnation if state else None,
        rows=plan.rows,
        plan_doc=plan.to_doc(),
    )


def _load(
    home: TableFolder,
    df: DataFrame,
    request: PushRequest,
    progress: ProgressCallback | None,
    journal: ReseedJournal,
    pushed: list[PushResult],
) -> ReseedJournal:
    """The initial load of the new incarnation, unless a crash came after it was in."""
    state = home.read_state()
    if state is not None and state.incarnation and state.incarnation != journal.incarnation_before:
        return journal.advanced(4, incarnation_after=state.incarnation)  # loaded before a crash
    if state is not None:
        raise LandingZoneError(
            f"Table {home.ref} still has the state of its old incarnation after the drop; drop it again."
        )
    result = run_push(home.storage, df, request, progress, lock_held=True, reseed=True)
    pushed.append(result)
    after = home.read_state()
    return journal.advanced(4, incarnation_after=after.incarnation if after else None, rows=result.total_rows)


def plan_in_progress(home: TableFolder, df_schema: str) -> SchemaPlan | None:
    """The plan of the reseed in progress, for ``plan_schema_change`` once the table is gone.

    Raises:
        LandingZoneError: a reseed with another DataFrame (schema) is in progress.
    """
    journal = read_reseed(home)
    if journal is None or journal.plan_doc is None:
        return None
    plan = SchemaPlan.from_doc(journal.plan_doc)
    if plan.schema != df_schema:
        raise LandingZoneError(
            f"Table {plan.table} is being reseeded ({journal.step_text}) with a DataFrame of other "
            "columns or types; finish it with that DataFrame first."
        )
    return plan


def json_schema(df: Any) -> str:
    """``df``'s schema as the plan records it (without the row marker of a change feed)."""
    return str(df.schema.json())


def finish_loaded(home: TableFolder, mirror: Mirror, *, timeout: float) -> ReseedJournal | None:
    """``db.recover``'s part of a reseed: one whose reload is in needs no data to finish (wait
    until the table is back, verify, end); one that is not yet loaded needs ``df`` again.

    Raises:
        ReseedError: the reload is not in yet (the message says how to finish).
        MirrorError: the mirrored table's row count differs from the reload's.
    """
    journal = read_reseed(home)
    if journal is None:
        return None
    table = journal.table
    if journal.done < LOADED:
        raise ReseedError(
            f"Table {table} is being reseeded ({journal.step_text}) and the reload needs the new data: "
            f"run db.apply_schema_change(plan, df, confirm={table!r}) with the plan and DataFrame.",
            step=journal.done + 1,
        )
    if journal.done < 5:
        mirror.wait_back(home.ref, timeout=timeout)
        journal = journal.advanced(5)
        write_reseed(home, journal)
    held = mirror.count(home.ref)
    end_reseed(home)
    _check_mirrored(table, held, journal.rows)
    return journal
