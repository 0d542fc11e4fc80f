"""Deciding a staged push: the journal that assigns its files their sequence numbers and holds
the table's next state (``landing_zone.publish`` carries it out), and what the result counts."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from openmirror_nb._core.landing_zone.freshness_log import SourceTimes
from openmirror_nb._core.landing_zone.journal import Journal, JournalEntry
from openmirror_nb._core.landing_zone.metadata import TableMetadata, metadata_bytes, partner_events_bytes
from openmirror_nb._core.landing_zone.names import METADATA_FILE, parse_sequence
from openmirror_nb._core.landing_zone.push_state import PushState, next_state
from openmirror_nb._core.landing_zone.table_folder import TableFolder
from openmirror_nb._core.model import ROW_MARKER, PartnerInfo, PushMode, RowMarker
from openmirror_nb._core.pipeline.push import checks, context, stage
from openmirror_nb._core.pipeline.push.request import PushRequest

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

_MARKER_LABELS: dict[int, str] = {int(m): m.name.lower() for m in RowMarker}


class StaleTable(Exception):
    """The table folder was deleted (by hand) while the push staged, taking its files along.

    Internal: ``pipeline.push.run`` settles and stages once more, and a second one in a row becomes
    a ``LandingZoneError``. It once escaped for every name that ``Path.as_uri()``
    percent-encodes: Spark staged into ``my%20table``, so the staged folder was never where the
    push looked for it."""


def decide(
    home: TableFolder,
    ctx: context.StageContext,
    schema: StructType,
    staged: context.Staged,
    *,
    request: PushRequest,
    meta: TableMetadata | None,
    state: PushState | None,
    seconds: float,
) -> tuple[Journal, int]:
    """The journal of a staged push (``schema``: its frame's) and the bytes it publishes.

    Runs under the table lock, against the table as it is now: one listing of the folder (and
    its cleanup folders) finds the last number and that ``_metadata.json`` is still there, and
    the listing of the staged files that they are; else ``StaleTable``. ``seconds``: how long
    the push took so far (kept for an initial load).
    """
    names = home.file_names()
    last = max((n for n in map(parse_sequence, names) if n is not None), default=0)
    first = state is None and last == 0
    try:
        parts = (
            stage.list_parts(home.storage, staged.folder, staged.stats, keep_empty=first)
            if staged.folder
            else []
        )
    except FileNotFoundError:
        raise StaleTable() from None
    if meta is not None and METADATA_FILE not in names:
        raise StaleTable()
    data_schema = type(schema)([f for f in schema.fields if f.name != ROW_MARKER])
    now = time.time()
    stream = request.stream and replace(request.stream, at=now, rows=staged.stats.rows)
    new_state = next_state(
        state,
        key_columns=ctx.keys,
        schema=data_schema.json(),
        folder=None if staged.nothing or not ctx.keys else ctx.state_dir,  # no keys: no key state
        new_base=staged.new_base,
        rows=staged.state_rows,
        incarnation=ctx.incarnation,
        now=now,
        buckets=staged.buckets,
        source=request.source,
        source_columns=request.source_columns,
        source_fallback=request.source_fallback,
        seconds=seconds,
        stream=stream,
        watermark=request.watermark,
        feed_schema=staged.feed_schema,
        position=request.position,
    )
    definition = checks.schema_definition(data_schema, ctx.keys) if ctx.options.is_delimited else ()
    metadata = (
        None
        if meta
        else metadata_bytes(key_columns=ctx.keys, options=ctx.options, schema_definition=definition)
    )
    start = max(last, state.last_sequence_number if state else 0) + 1
    journal = Journal(
        push_id=ctx.push_id,
        table=home.ref.key,
        folder=home.folder,
        extension=ctx.options.extension,
        file_detection=ctx.options.file_detection,
        staging=ctx.staging,
        state=new_state.to_bytes().decode("utf-8"),
        metadata=metadata.decode("utf-8") if metadata else None,
        partner_events=partner_events_bytes(_partner(request.partner, ctx.spark.version)).decode("utf-8"),
        entries=tuple(JournalEntry(p.path, start + i) for i, p in enumerate(parts)),
        # the key state a new base replaces goes once the new state is committed
        obsolete=tuple(state.key_state) if state and staged.new_base else (),
        incarnation=ctx.incarnation,
        freshness=times.to_doc() if (times := push_times(request, started=now - seconds)) else None,
    )
    return journal, sum(p.bytes for p in parts)


def push_times(request: PushRequest, *, started: float) -> SourceTimes | None:
    """When the push's changes happened at the source, for its files' freshness summaries: as
    the request says, else, for a snapshot, its start (a DataFrame is read while it is pushed, so
    nothing the source committed before then is missing); a change feed's, a stream batch's and an
    append's are unknown (Debezium's snapshot reads of a keyless table, for one, are left out)."""
    if request.source_times is not None:
        return request.source_times
    # a stream's batch and an append are no snapshot read: their times are what the stream says
    read = request.mode == "snapshot" and request.stream is None and not request.append
    return SourceTimes.read_at(started) if read else None


def published_rows(stats: stage.StagedStats, mode: PushMode, *, first: bool) -> dict[str, int]:
    """``PushResult.rows``: ``initial`` for an initial load, else rows per marker name."""
    if mode == "snapshot" and first:
        return {"initial": sum(stats.rows_by_marker.values())}
    if None in stats.rows_by_marker:  # an append: marker-free rows, every one an insert
        return {"insert": stats.rows_by_marker[None]}
    ordered = sorted((m, n) for m, n in stats.rows_by_marker.items() if m is not None)
    return {_MARKER_LABELS.get(m, str(m)): n for m, n in ordered}


def _partner(partner: PartnerInfo, spark_version: str) -> PartnerInfo:
    if partner.source_version:
        return partner
    return PartnerInfo(
        partner_name=partner.partner_name,
        source_type=partner.source_type,
        source_version=spark_version,
        additional_information=partner.additional_information,
    )
