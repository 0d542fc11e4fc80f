"""Where things are in a Debezium event, and which fields order each key's events.

Paths are dotted (``source.lsn``, ``after.id``); ``ORDER_DEFAULTS`` say which ordering fields are
used when ``order_by`` names none, per shape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import ConfigError, did_you_mean
from openmirror_nb._core.identifiers import quoted

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

_ORDERABLE = (
    "byte short integer long decimal double float string date timestamp timestamp_ntz boolean".split()
)
# Default ordering, first match wins: (fields that must all exist, fields added when they do).
# A row's writer holds its lock until commit, so per key the WAL (PostgreSQL) or binlog (MySQL)
# position of a change follows commit order; commit times tie within a millisecond.
ENVELOPE_ORDER = (
    (("source.lsn",), ()),
    (("source.file", "source.pos"), ("source.row",)),
    (("source.ts_ms",), ("ts_ms",)),
    (("ts_ms",), ()),
)
FLAT_ORDER = (
    (("__source_lsn",), ()),
    (("__lsn",), ()),
    (("__source_file", "__source_pos"), ("__source_row",)),
    (("__source_ts_ms",), ("__ts_ms",)),
    (("__ts_ms",), ()),
)

Resolve = Callable[[str], "tuple[DataType, Column] | None"]


def ordering(
    given: tuple[str, ...],
    defaults: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...],
    resolve: Resolve,
    known: list[str],
    shape: str,
) -> tuple[tuple[str, Column], ...]:
    """The ordering fields: those given (names or dotted paths), else the first default found."""
    if not given:
        for needed, extra in defaults:
            if all(resolve(n) is not None for n in needed):
                given = (*needed, *[n for n in extra if resolve(n) is not None])
                break
    out = []
    for name in given:
        found = resolve(name)
        if found is None:
            raise ConfigError(
                f"order_by field {name!r} is not in the Debezium {shape} (fields: "
                f"{', '.join(known)}).{did_you_mean(name, known)}"
            )
        if found[0].typeName() not in _ORDERABLE:
            raise ConfigError(
                f"order_by field {name!r} is a {found[0].typeName()}, which has no order; name a "
                "number, text or time field instead, e.g. 'source.lsn'."
            )
        out.append((name, found[1]))
    return tuple(out)


def field_type(schema: StructType, path: str) -> DataType | None:
    from pyspark.sql.types import StructType

    kind: DataType = schema
    for part in path.split("."):
        if not isinstance(kind, StructType) or part not in kind.names:
            return None
        kind = kind[part].dataType
    return kind


def field(path: str) -> Column:
    from pyspark.sql import functions as F

    head, *rest = path.split(".")
    return functools.reduce(lambda c, p: c.getField(p), rest, F.col(quoted(head)))


def leaves(kind: DataType, path: str) -> list[str]:
    from pyspark.sql.types import StructType

    if not isinstance(kind, StructType):
        return [path]
    return [p for f in kind.fields for p in leaves(f.dataType, f"{path}.{f.name}")]
