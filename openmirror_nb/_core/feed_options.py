"""``FeedOptions``: how a change feed is read, as one frozen value (delta-rs's ``WriterProperties``
is the model). ``db.push``, ``db.batch_sink``, ``db.mirror_stream``, a plan's tables and the
``push`` / ``stream`` verbs all take it as ``feed=``; the keyword forms those calls also take
(``op_column="op"``, ...) become one here (``feed_of``), so the options' names, defaults and checks
have this one home. Nothing here touches Spark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from openmirror_nb._core.errors import ConfigError, did_you_mean
from openmirror_nb._core.model import ROW_MARKER, Convention, RowMarker

DEFAULT_OP_COLUMN: dict[str, str] = {
    "rowmarker": ROW_MARKER,
    "sys_op": "sys_op",
    "cdf": "_change_type",
    "debezium": "op",
}
"""The operation column each convention reads when ``FeedOptions.op_column`` is not given."""


@dataclass(frozen=True)
class FeedOptions:
    """The options of a change feed: which column says what happened to each row and in which
    convention, the order of each key's changes, and how its rows become row markers.

    Pass it as ``feed=`` to ``db.push(mode="changes")``, ``db.batch_sink``, ``db.mirror_stream``
    and in a plan's ``PlannedTable``; ``%openmirror push|stream`` and ``openmirror push`` build one
    from their flags. Those calls also take each option as a keyword of its own, as before; giving
    both ``feed=`` and such a keyword is a ``ConfigError``.

    Attributes:
        op_column: The operation column (default per convention: ``__rowMarker__``, ``sys_op``,
            ``_change_type``, ``op``).
        convention: How ``op_column`` encodes operations: ``"rowmarker"`` (0/1/2/4),
            ``"sys_op"`` (Prostore: 0 upsert, 1 delete; one change per key), ``"cdf"`` (Delta
            change data feed ``_change_type``; within a commit deletes before inserts),
            ``"debezium"`` (c/r/u/d: the envelope with or without ``payload``,
            ExtractNewRecordState output, or a flattened feed).
        order_by: Columns that order each key's changes (default: the DataFrame's order;
            Debezium: ``source.lsn``, binlog position or ``ts_ms``; dotted paths allowed). A list
            is taken and kept as a tuple.
        update_marker: Marker of updates of cdf and debezium feeds, and of changed rows of a
            snapshot diff: 4 (upsert, the default) or 1 (update).
        compact: Keep only each key's net change of a change feed.
        strict_delete: ``sys_op`` only: refuse the batch unless every delete carries exactly the
            current row (checked against the table's key state).

    Raises:
        ConfigError: a value no feed can take; the message names it and the fix.

    Example:
        >>> feed = om.FeedOptions(convention="debezium", order_by=["source.lsn"], compact=True)
        >>> db.push(events, table="inv.customers", keys=["id"], mode="changes", feed=feed)
    """

    op_column: str | None = None
    convention: Convention = "rowmarker"
    order_by: Sequence[str] = ()
    update_marker: Literal[1, 4] = 4
    compact: bool = False
    strict_delete: bool = False

    def __post_init__(self) -> None:
        if self.op_column is not None and (not isinstance(self.op_column, str) or not self.op_column):
            raise ConfigError(
                f"op_column {self.op_column!r} is not a column name; write op_column='op', or leave it "
                "out for the convention's own."
            )
        if self.convention not in get_args(Convention):
            raise ConfigError(
                f"convention {self.convention!r} is not known; use rowmarker, sys_op, cdf or debezium."
                + did_you_mean(str(self.convention), get_args(Convention))
            )
        order = self.order_by
        if isinstance(order, str) or not isinstance(order, Sequence):
            raise ConfigError(
                f"order_by {order!r} is not a list; order_by takes a list of column names, e.g. "
                "order_by=['lsn']."
            )
        if not all(isinstance(c, str) and c for c in order):
            raise ConfigError(
                f"order_by {list(order)!r} holds something other than a column name; list names only."
            )
        object.__setattr__(self, "order_by", tuple(order))  # frozen: hashable, and equal however given
        marker = self.update_marker
        if isinstance(marker, bool) or marker not in (int(RowMarker.UPDATE), int(RowMarker.UPSERT)):
            raise ConfigError(f"update_marker {marker!r} must be 1 (update) or 4 (upsert).")
        object.__setattr__(self, "update_marker", int(marker))  # RowMarker.UPDATE reads as 1
        for name in ("compact", "strict_delete"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} {getattr(self, name)!r} is not True or False; write {name}=True.")
        if self.strict_delete and self.convention != "sys_op":
            raise ConfigError("strict_delete is Prostore's rule; use it with convention='sys_op'.")

    @property
    def op(self) -> str:
        """The operation column read: ``op_column``, else the convention's own."""
        return self.op_column or DEFAULT_OP_COLUMN[self.convention]


FEED_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(FeedOptions))


def feed_of(
    feed: FeedOptions | None,
    *,
    op_column: str | None = None,
    convention: Convention | None = None,
    order_by: Sequence[str] | None = None,
    update_marker: Literal[1, 4] | None = None,
    compact: bool | None = None,
    strict_delete: bool | None = None,
) -> FeedOptions:
    """The ``FeedOptions`` of a call that takes both forms: ``feed``, or the keywords given
    (``None``: not given) over the defaults. Both at once is a ``ConfigError`` naming them."""
    given: dict[str, Any] = {
        name: value
        for name, value in (
            ("op_column", op_column),
            ("convention", convention),
            ("order_by", order_by),
            ("update_marker", update_marker),
            ("compact", compact),
            ("strict_delete", strict_delete),
        )
        if value is not None
    }
    if feed is None:
        return FeedOptions(**given)
    if not isinstance(feed, FeedOptions):
        raise ConfigError(
            f"feed={feed!r} is not an om.FeedOptions; write feed=om.FeedOptions(op_column='op', ...)."
        )
    if given:
        named = ", ".join(f"{n}=" for n in given)
        raise ConfigError(
            f"Both feed= and {named} were given; pass the change-feed options one way: move {named} "
            "into om.FeedOptions(...), or drop feed=."
        )
    return feed


def changed(feed: FeedOptions) -> dict[str, Any]:
    """The options ``feed`` sets to other than their defaults, in field order (what a saved plan
    writes of it)."""
    default = FeedOptions()
    return {n: getattr(feed, n) for n in FEED_FIELDS if getattr(feed, n) != getattr(default, n)}
