"""What ``db.push`` was asked to do (``PushRequest``), and the DataFrame shaped for it: checked
columns and keys, normalized values, and for change feeds the marker column in order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.errors import ConfigError
from openmirror_nb._core.feed_options import FeedOptions
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.landing_zone.freshness_log import SourceTimes
from openmirror_nb._core.landing_zone.push_state import StreamBatch
from openmirror_nb._core.model import (
    DEFAULT_ROWS_PER_FILE,
    Compression,
    PartnerInfo,
    PushMode,
    TableOptions,
    TableRef,
)
from openmirror_nb._core.pipeline.feeds import debezium
from openmirror_nb._core.pipeline.feeds.changes import INVALID_MARKER, to_change_rows, to_marker
from openmirror_nb._core.pipeline.push.normalize import check_columns, check_keys, normalize

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_COMPRESSIONS = ("none", "snappy", "gzip", "zstd")


@dataclass(frozen=True)
class PushRequest:
    """Everything ``db.push`` was asked to do, checked for form here and only here.

    Checks that need the table (its keys, format and state) run in ``pipeline.push.checks``; the change
    feed's options are checked as ``FeedOptions`` (``feed``; a snapshot reads its update_marker).
    """

    table: TableRef
    keys: tuple[str, ...] | None
    mode: PushMode
    feed: FeedOptions
    table_options: TableOptions | None
    compression: Compression | None
    rows_per_file: int
    lock_timeout: float
    partner: PartnerInfo
    # db.sync_delta: the (source, version) this push brings the table to, and the version it
    # was read against (None: the table's first sync), checked under the table lock; that
    # version's columns and why the sync pushed a snapshot diff, if it did (both kept in the state).
    source: tuple[str, int] | None = None
    source_after: int | None = None
    source_columns: tuple[tuple[str, str, bool], ...] = ()
    source_fallback: str | None = None
    # db.batch_sink: the micro-batch this push applies, committed with its files; and the
    # columns of a routed feed that order each key's changes without being published
    stream: StreamBatch | None = None
    unpublished: tuple[str, ...] = ()
    # db.run_plan's incremental and append strategies: the (column, value) this push brings the
    # table's watermark to, and the value it was read past (None: none yet), checked under the lock.
    watermark: tuple[str, str] | None = None
    watermark_after: str | None = None
    append: bool = False  # insert-only rows to a table without keyColumns, marker-free
    # a Debezium stream: the source position this push brings the table to (streaming.positions)
    position: str | None = None
    # when the pushed changes happened at the source (landing_zone.freshness_log); a snapshot
    # push without them takes its own start as the read time
    source_times: SourceTimes | None = None

    @classmethod
    def create(
        cls,
        *,
        table: str,
        keys: Sequence[str] | None,
        feed: FeedOptions | None = None,
        **fields: Any,
    ) -> PushRequest:
        """Build a request from ``db.push``'s arguments (keys as given, the table as text;
        ``feed``: the defaults when ``None``)."""
        if isinstance(keys, str):
            raise ConfigError("keys take a list of column names, e.g. keys=['id'].")
        return cls(
            table=TableRef.parse(table),
            keys=tuple(keys) if keys else None,
            feed=FeedOptions() if feed is None else feed,
            **fields,
        )

    @classmethod
    def snapshot(
        cls,
        *,
        table: str,
        keys: Sequence[str] | None,
        lock_timeout: float,
        partner: PartnerInfo,
        table_options: TableOptions | None = None,
        feed: FeedOptions | None = None,
    ) -> PushRequest:
        """A plain snapshot push with the defaults (``sync_delta``, a reseed's reload); ``feed``:
        the change-feed options of a ``sync_delta`` that reads the change data feed."""
        return cls.create(
            table=table,
            keys=keys,
            feed=feed,
            mode="snapshot",
            table_options=table_options,
            compression=None,
            rows_per_file=DEFAULT_ROWS_PER_FILE,
            lock_timeout=lock_timeout,
            partner=partner,
        )

    def __post_init__(self) -> None:
        if self.mode not in ("snapshot", "changes"):
            raise ConfigError(f"mode {self.mode!r} is not valid; use 'snapshot' or 'changes'.")
        if self.mode == "snapshot" and self.feed.op_column is not None:
            raise ConfigError("op_column is for change feeds; pass mode='changes' with it.")
        if self.compression not in (None, *_COMPRESSIONS):
            raise ConfigError(
                f"compression {self.compression!r} is not supported; use none, snappy, gzip or zstd."
            )
        if (
            isinstance(self.rows_per_file, bool)
            or not isinstance(self.rows_per_file, int)
            or self.rows_per_file < 1
        ):
            raise ConfigError(f"rows_per_file {self.rows_per_file!r} must be at least 1 (a whole number).")


def compression_for(request: PushRequest, options: TableOptions) -> Compression:
    """The compression of this push's files, given the table's format."""
    if options.is_delimited:
        if options.delimited.row_separator not in ("\n", "\r"):
            raise ConfigError(
                f"Table {request.table} declares RowSeparator {options.delimited.row_separator!r}; Spark "
                "writes one-character line separators only, so use '\\n' or '\\r' (or Parquet)."
            )
        if request.compression not in (None, "none"):
            raise ConfigError(
                f"compression {request.compression!r} applies to Parquet only; delimited text is written "
                "uncompressed (the contract does not say how compressed text is marked)."
            )
        return "none"
    return request.compression or "snappy"


def shape(df: DataFrame, request: PushRequest, keys: tuple[str, ...], options: TableOptions) -> DataFrame:
    if request.mode == "snapshot":
        check_columns(df)
        if not request.append:  # an append's table has no keys to check
            check_keys(df, keys)
        return normalize(df, options=options)
    feed = request.feed
    op, order_by = feed.op, tuple(feed.order_by)
    hidden: tuple[str, ...] = request.unpublished
    if feed.convention == "debezium":
        # Envelope, payload wrapper, ExtractNewRecordState or flattened: one flat feed of the row's
        # columns, the op letter and ordering fields that are not published.
        df, hidden = debezium.read_feed(df, op_column=feed.op_column, order_by=order_by).rows(keys)
        op, order_by = debezium.OP, hidden
    check_columns(df, reserved_ok=frozenset({op, *hidden}))
    check_keys(df, keys)
    shaped = normalize(df, options=options, keep=frozenset({op, *hidden}))
    return to_change_rows(
        shaped,
        op_column=op,
        convention=feed.convention,
        keys=keys,
        order_by=order_by,
        update_marker=feed.update_marker,
        compact=feed.compact,
        unpublished=hidden,
    )


def invalid_ops(df: DataFrame, request: PushRequest) -> list[Any]:
    """A few operation values outside the convention, for the staged-file check's message.

    A Debezium feed raises its own error instead: it knows where the operation is read (op,
    payload.op, __op), and that __deleted or a missing ordering field can make an event unreadable.
    """
    from pyspark.sql import functions as F

    feed = request.feed
    if feed.convention == "debezium":
        raise debezium.read_feed(df, op_column=feed.op_column, order_by=tuple(feed.order_by)).invalid_error()

    op = F.col(quoted(feed.op))
    marker = to_marker(op, feed.convention, update_marker=feed.update_marker)
    rows = df.where(marker == INVALID_MARKER).select(op.alias("op")).distinct().limit(6).collect()
    return [r["op"] for r in rows]
