"""What a planned table's user should know though nothing stops its run, each note one line with
what to do: keys only today's rows make unique (the evidence, rows profiled and distinct values;
the risk, that nothing in the source keeps them so), and a table mirrored insert-only by a column
the source numbers its rows by (what insert-only leaves out). Pure: the planner gives the facts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb._core.sources.plan_strategy import DEFAULT

if TYPE_CHECKING:
    from openmirror_nb._core.keys import KeyProfile
    from openmirror_nb._core.sources.table import SourceTable

_INSTANT = "a timestamp repeats whenever two rows are written in the same instant"
# Types whose values repeat by nature, whatever today's rows show (ColumnInfo.type's names).
_REPEATING = {"timestamp": _INSTANT, "timestamp_ntz": _INSTANT, "date": "a date repeats on every busy day"}


def guessed_keys(profile: KeyProfile, table: SourceTable) -> str:
    """The note of keys suggested from ``table``'s rows (``profile``: what profiling counted):
    the evidence, why it may not last, and the ways to a key that does."""
    kinds = {c.name: c.type for c in table.columns}
    by_nature = next((_REPEATING[kinds[k]] for k in profile.keys if kinds.get(k) in _REPEATING), None)
    values = "value" if len(profile.keys) == 1 else "combination"
    seen = (
        f"all {profile.rows:,} rows profiled ({profile.distinct:,} distinct {values}s)"
        if profile.rows != 1
        else f"the one row profiled (1 distinct {values})"
    )
    if table.increasing:
        insert_only = f" mirror it insert-only (strategy: append, watermark: {table.increasing[0]}, keys: [])"
    else:
        insert_only = (
            ", if it only grows, give it an identity column in the source and mirror it insert-only "
            "(strategy: append)"
        )
    return (
        f"keys [{', '.join(profile.keys)}] suggested from today's rows only: unique and never NULL in "
        f"{seen}, but no primary key or unique constraint in the source keeps them so"
        + (f", and {by_nature}" if by_nature else "")
        + "; a later row that repeats them fails the table's run. Declare the key in the source or "
        f"in the plan (key_origin: declared), or{insert_only}"
    )


def insert_only(column: str) -> str:
    """The note of a table mirrored insert-only past ``column``, which the source numbers rows by."""
    return (
        f"insert-only: each run adds the rows past the highest {column} mirrored ({column} is numbered "
        "by the source), and a row updated or deleted in the source is never mirrored; if this "
        f"table's rows change, declare keys (key_origin: declared) and choose {DEFAULT}"
    )


def keyless(table: str) -> str:
    """The note of a table a strategy that takes keys only from the source (``cdc``) mirrors
    insert-only, having found none."""
    return (
        f"no key: {table} has no primary key nor unique constraint on NOT NULL columns, so it is mirrored "
        "insert-only, from Debezium's own snapshot; an update or delete of its rows stops the table. "
        "Give the source table a primary key, or declare keys (key_origin: declared) with REPLICA "
        "IDENTITY FULL"
    )
