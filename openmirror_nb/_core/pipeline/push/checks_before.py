"""What a push checks before it stages.

The frame against the table (``check_frame``: keys, options, column names and types, the
table's schema), the one home of those checks: a push runs them under its lock, and a routed
stream's batch runs them for every table before any table publishes, handing each push what it
checked so the push does not check again (unless the table changed meanwhile). And, under the
push's lock, the table itself: that it is in the incarnation the push started against (no
reseed since, none half done), that a sync's source is at the version it was read at, and that
a streamed batch is not in the table already.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.landing_zone.metadata import TableMetadata
from openmirror_nb._core.landing_zone.push_state import PushState
from openmirror_nb._core.landing_zone.reseed_journal import LOADED, read_reseed
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import TableOptions
from openmirror_nb._core.pipeline.push import checks
from openmirror_nb._core.pipeline.push.request import PushRequest, shape

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Checked:
    """A frame ``check_frame`` passed: its table's keys and options, the frame shaped as it is
    staged, and the table's metadata and state it was checked against."""

    keys: tuple[str, ...]
    options: TableOptions
    shaped: DataFrame
    meta: TableMetadata | None
    state: PushState | None

    def holds(self, meta: TableMetadata | None, state: PushState | None) -> bool:
        """Whether the checks hold for the table as it is now: it has the same metadata and state
        (a push meanwhile, or a settled journal, may have changed its schema)."""
        return meta == self.meta and state == self.state


def check_frame(
    df: DataFrame, request: PushRequest, meta: TableMetadata | None, state: PushState | None
) -> Checked:
    """Check ``df`` against the table (its ``meta`` and ``state``): the keys and options the table
    fixes, the column names, key columns and types the landing zone takes, and no column whose
    type changed since the last push. Every failure is the ``OpenMirrorError`` a push raises."""
    name = str(request.table)
    options = checks.resolve_options(request.table_options, meta, name)
    keys = checks.resolve_keys(request.keys, meta, name, append=request.append)
    shaped = shape(df, request, keys, options)
    checks.check_against_state(shaped.schema, state, options, name)
    return Checked(keys, options, shaped, meta, state)


def incarnation(home: TableFolder) -> str | None:
    """The table's incarnation as its push state says (``None``: no state, or one that cannot be read,
    which is settled or reported under the lock)."""
    try:
        state = home.read_state()
    except LandingZoneError:
        return None
    return state.incarnation if state else None


def check_incarnation(
    home: TableFolder, state: PushState | None, started_on: str | None, *, reseed: bool, reseeding: bool
) -> None:
    """Refuse to push into a reseed that has not loaded yet, or into another incarnation of the table
    than the one this push started against (``started_on``; ``reseeding``: a reseed was running then):
    it was reseeded while the push waited for the lock. ``state``: the table's, as settled."""
    if reseed:
        return
    table = str(home.ref)
    running = read_reseed(home)
    if running is not None and running.done < LOADED:
        raise LandingZoneError(
            f"Table {table} is being reseeded ({running.step_text}); a push waits until the new data "
            f"is in: finish the reseed with db.apply_schema_change(plan, df, confirm={table!r})."
        )
    now = state.incarnation if state else None
    if (started_on and now and now != started_on) or (reseeding and now):
        raise LandingZoneError(
            f"Table {table} was reseeded (or dropped and pushed again) while this push waited for its "
            "lock; its schema and keys may have changed: check db.describe() and push again."
        )


def check_source(request: PushRequest, state: PushState | None) -> None:
    """A sync was read against the version the table held then, a plan's run past the watermark
    the table held then; another sync or run may have moved them."""
    if request.watermark is not None:
        now = state.watermark if state else None
        if now != request.watermark_after:
            raise LandingZoneError(
                f"Table {request.table} holds watermark {now} of column {request.watermark[0]!r} now, but "
                f"this run read past {request.watermark_after}; another run pushed it meanwhile: run again."
            )
    if request.source is None:
        return
    held = state.source_version if state else None
    if held != request.source_after:
        raise LandingZoneError(
            f"Table {request.table} holds version {held} of {request.source[0]} now, but this sync read "
            f"it at version {request.source_after}; another sync ran meanwhile: run sync_delta again."
        )


def check_stream(request: PushRequest, state: PushState | None) -> None:
    """A streamed batch is applied once: the sink skips one the table holds, under this same lock."""
    if request.stream is None or state is None:
        return
    held = state.applied(request.stream.query)
    if held is not None and held >= request.stream.batch:
        raise LandingZoneError(
            f"Table {request.table} already holds batch {held} of streaming query {request.stream.query}; "
            f"batch {request.stream.batch} must not be applied again: restart the query."
        )


def moves_source(request: PushRequest, state: PushState | None) -> bool:
    """Whether this push brings the table to another version of its sync source, or another
    watermark (which is then committed even when nothing is published)."""
    held = state.source_version if state else None
    mark = state.watermark if state else None
    moved = request.watermark is not None and request.watermark[1] != mark
    return moved or (request.source is not None and request.source[1] != held)
