"""One push, end to end: shape -> stage -> check -> lock -> recover -> journal -> publish.

Everything that can reject the push runs before the table lock is taken and before anything
visible is written; a rejected push removes its staging folder, so the landing zone is left
byte-for-byte as it was.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb.errors import ConfigError, NotSupportedError
from openmirror_nb.landing_zone import (
    last_sequence_number,
    metadata_bytes,
    partner_events_bytes,
    read_metadata,
)
from openmirror_nb.model import (
    ROW_MARKER,
    Compression,
    Convention,
    PartnerInfo,
    PushMode,
    PushResult,
    RowMarker,
    TableOptions,
    TableRef,
)
from openmirror_nb.pipeline import checks, stage
from openmirror_nb.pipeline.changes import INVALID_MARKER, rowmarker, to_change_rows
from openmirror_nb.pipeline.normalize import check_columns, check_keys, normalize
from openmirror_nb.publish import Journal, JournalEntry, crash_point, next_sequence_number, publish, recover
from openmirror_nb.publish import staging_folder as staging_path
from openmirror_nb.state import TableState, read_state
from openmirror_nb.storage.base import Storage
from openmirror_nb.storage.local import LocalStorage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_MARKER_LABELS: dict[int, str] = {int(m): m.name.lower() for m in RowMarker}
_COMPRESSIONS = ("none", "snappy", "gzip", "zstd")


@dataclass(frozen=True)
class PushRequest:
    """Everything ``db.push`` was asked to do, already checked for form."""

    table: TableRef
    keys: tuple[str, ...] | None
    mode: PushMode
    op_column: str | None
    convention: Convention
    order_by: tuple[str, ...]
    table_options: TableOptions | None
    compression: Compression | None
    rows_per_file: int
    lock_timeout: float
    partner: PartnerInfo


def _compression(request: PushRequest, options: TableOptions) -> Compression:
    if request.compression not in (None, *_COMPRESSIONS):
        raise ConfigError(
            f"compression {request.compression!r} is not supported; use none, snappy, gzip or zstd."
        )
    if options.is_delimited:
        if request.compression not in (None, "none"):
            raise ConfigError(
                f"compression {request.compression!r} applies to Parquet only; delimited text is written "
                "uncompressed (the contract does not say how compressed text is marked)."
            )
        return "none"
    return request.compression or "snappy"


def _shape(df: DataFrame, request: PushRequest, keys: tuple[str, ...], options: TableOptions) -> DataFrame:
    if request.mode == "snapshot":
        check_columns(df)
        check_keys(df, keys)
        return normalize(df, options=options)
    op = request.op_column or ROW_MARKER
    check_columns(df, reserved_ok=frozenset({op}))
    check_keys(df, keys)
    shaped = normalize(df, options=options, keep=frozenset({op}))
    return to_change_rows(
        shaped, op_column=op, convention=request.convention, keys=keys, order_by=request.order_by
    )


def _invalid_ops(df: DataFrame, request: PushRequest) -> list[Any]:
    from pyspark.sql import functions as F

    op = F.col(f"`{request.op_column or ROW_MARKER}`")
    rows = df.where(rowmarker(op) == INVALID_MARKER).select(op.alias("op")).distinct().limit(6).collect()
    return [r["op"] for r in rows]


@dataclass(frozen=True)
class _Staged:
    """Checked staged files, ready to publish: where they are and what they hold."""

    folder: str
    stats: stage.StagedStats


def run_push(storage: Storage, df: DataFrame, request: PushRequest) -> PushResult:
    """Push one DataFrame to one table (see ``MirroredDatabase.push``)."""
    started = time.monotonic()
    ref, name = request.table, str(request.table)
    if request.rows_per_file < 1:
        raise ConfigError(f"rows_per_file {request.rows_per_file} must be at least 1.")
    meta = read_metadata(storage, ref.folder)
    options = checks.resolve_options(request.table_options, meta, name)
    compression = _compression(request, options)
    keys = checks.resolve_keys(request.keys, meta, name)
    state = read_state(storage, ref.folder)
    if request.mode == "snapshot" and (state is not None or last_sequence_number(storage, ref.folder)):
        raise NotSupportedError(
            f"Table {name!r} already has data; pushing a later snapshot needs the snapshot diff, which is "
            "not built yet. Push the changes with mode='changes' instead."
        )
    shaped = _shape(df, request, keys, options)
    checks.check_against_state(shaped.schema, state, options, name)

    push_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    staging = staging_path(ref.key, push_id)
    fresh = [p for p in _internal_parents(ref.key) if not storage.exists(p)]
    journaled = False
    try:
        staged = _stage(
            storage, df, shaped, request, staging=staging, keys=keys, options=options, compression=compression
        )
        crash_point("after_staging")
        with storage.lock(ref.key, timeout=request.lock_timeout):
            journal, size = _decide(
                storage, shaped, request, staged, push_id=push_id, staging=staging, keys=keys, options=options
            )
            journaled = True
            done = publish(storage, journal)
    except BaseException:
        if not journaled:
            storage.delete(staging)
            for path in reversed(fresh):
                storage.delete(path, recursive=False)
        raise
    return PushResult(
        table=name,
        mode=request.mode,
        sequence_numbers=tuple(e.sequence for e in done.entries),
        rows=_rows(staged.stats, request.mode),
        bytes=size,
        seconds=time.monotonic() - started,
        files=tuple(done.final(e) for e in done.entries),
    )


def _internal_parents(key: str) -> tuple[str, ...]:
    return ("_openmirror", "_openmirror/staging", f"_openmirror/staging/{key}")


def _stage(
    storage: Storage,
    df: DataFrame,
    shaped: DataFrame,
    request: PushRequest,
    *,
    staging: str,
    keys: tuple[str, ...],
    options: TableOptions,
    compression: Compression,
) -> _Staged:
    """Write, check and (if too fragmented) compact the staged files; upload them if needed."""
    local_dir = None if storage.SPARK_WRITABLE else tempfile.mkdtemp(prefix="openmirror-")
    try:

        def uri(sub: str) -> str:
            return storage.uri(f"{staging}/{sub}") if local_dir is None else f"file://{local_dir}/{sub}"

        kw: dict[str, Any] = {"schema": shaped.schema, "options": options}
        stage.write_parts(
            shaped,
            uri=uri("parts"),
            options=options,
            compression=compression,
            rows_per_file=request.rows_per_file,
        )
        spark = shaped.sparkSession
        stats = stage.staged_stats(spark, uri=uri("parts"), keys=keys, **kw)
        invalid = _invalid_ops(df, request) if stats.rows_by_marker.get(INVALID_MARKER) else []
        checks.check_stats(stats, keys=keys, table=str(request.table), invalid_values=invalid)
        if request.mode == "snapshot":
            dupes = stage.duplicate_keys(spark, uri=uri("parts"), keys=keys, **kw)
            if dupes:
                raise checks.duplicate_error(dupes, keys=keys, table=str(request.table))
        sub = "parts"
        files = max(1, math.ceil(sum(stats.rows_by_file.values()) / request.rows_per_file))
        if _fragmented(stats, files=files, rows_per_file=request.rows_per_file):
            stage.compact(
                spark,
                src_uri=uri("parts"),
                dst_uri=uri("compact"),
                compression=compression,
                files=files,
                rows_per_file=request.rows_per_file,
                **kw,
            )
            sub = "compact"
            stats = stage.staged_stats(spark, uri=uri(sub), keys=keys, **kw)
        if local_dir is not None:
            local = LocalStorage(local_dir)
            parts = stage.list_parts(local, sub, stats, keep_empty=True)
            storage.upload_files([(str(local.root / p.path), f"{staging}/{p.path}") for p in parts])
        return _Staged(f"{staging}/{sub}", stats)
    finally:
        if local_dir is not None:
            shutil.rmtree(local_dir, ignore_errors=True)


def _fragmented(stats: stage.StagedStats, *, files: int, rows_per_file: int) -> bool:
    """Many small parts (a shuffled or over-partitioned source) make the service lag.

    Merging keeps every part whole and in order, and parts this small are never split by the
    reader, so a key's changes (all in one part, design §4) stay in order.
    """
    names = list(stats.rows_by_file)
    if len(names) <= files:
        return False
    whole = all(stage.part_order(n)[1] == 0 for n in names)
    return whole and sum(stats.rows_by_file.values()) / len(names) < rows_per_file / 4


def _decide(
    storage: Storage,
    shaped: DataFrame,
    request: PushRequest,
    staged: _Staged,
    *,
    push_id: str,
    staging: str,
    keys: tuple[str, ...],
    options: TableOptions,
) -> tuple[Journal, int]:
    """Under the table lock: finish any interrupted push, re-check, assign sequence numbers."""
    ref, name = request.table, str(request.table)
    recover(storage, ref.key)
    meta = read_metadata(storage, ref.folder)
    checks.resolve_keys(keys, meta, name)
    state = read_state(storage, ref.folder)
    first = meta is None or (state is None and last_sequence_number(storage, ref.folder) == 0)
    if request.mode == "snapshot" and not first:
        raise NotSupportedError(f"Table {name!r} received data while this push was staging; push again.")
    checks.check_against_state(shaped.schema, state, options, name)
    parts = _parts(storage, staged, keep_empty=first)
    start = next_sequence_number(storage, ref.folder, floor=state.last_sequence_number if state else 0)
    data_schema = type(shaped.schema)([f for f in shaped.schema.fields if f.name != ROW_MARKER])
    new_state = TableState(
        key_columns=keys,
        schema=data_schema.json(),
        last_sequence_number=state.last_sequence_number if state else 0,
        pushes=(state.pushes if state else 0) + 1,
    )
    definition = checks.schema_definition(data_schema, keys) if options.is_delimited else ()
    metadata = (
        None if meta else metadata_bytes(key_columns=keys, options=options, schema_definition=definition)
    )
    partner = _partner(request.partner, shaped.sparkSession.version)
    journal = Journal(
        push_id=push_id,
        table=ref.key,
        folder=ref.folder,
        extension=options.extension,
        file_detection=options.file_detection,
        staging=staging,
        state=new_state.to_bytes().decode("utf-8"),
        metadata=metadata.decode("utf-8") if metadata else None,
        partner_events=partner_events_bytes(partner).decode("utf-8"),
        entries=tuple(JournalEntry(p.path, start + i) for i, p in enumerate(parts)),
    )
    return journal, sum(p.bytes for p in parts)


def _parts(storage: Storage, staged: _Staged, *, keep_empty: bool) -> list[stage.StagedPart]:
    return stage.list_parts(storage, staged.folder, staged.stats, keep_empty=keep_empty)


def _rows(stats: stage.StagedStats, mode: PushMode) -> dict[str, int]:
    if mode == "snapshot":
        return {"initial": sum(stats.rows_by_marker.values())}
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
