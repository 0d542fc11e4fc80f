"""Schema checks and normalization: DataFrame -> DataFrame, before anything is written.

Complex values become JSON strings (contract §3.1), names are checked against the landing-zone
rules, and types that the chosen file format cannot carry are rejected with the fix. Nothing here
runs a Spark job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openmirror_nb._core.errors import InvalidNameError, KeyColumnsError, UnsupportedTypeError, did_you_mean
from openmirror_nb._core.identifiers import quoted
from openmirror_nb._core.model import ROW_MARKER, TableOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

# The columns a push adds to a frame while it writes (and drops before the files) are named so.
INTERNAL_PREFIXES = ("_om_", "_openmirror_")
# Field metadata key that keeps a column's declared delimited-text type after base64 encoding.
TEXT_TYPE = "openmirror.textType"
_JSON_TYPES = ("struct", "array", "map", "variant")
# Timestamps inside JSON text are written in UTC, whatever the session's time zone.
_JSON_OPTIONS = {"timeZone": "UTC"}
_REJECTED = {
    "void": "it holds only NULLs with no type; cast it, e.g. F.lit(None).cast('string')",
    "interval": "cast it to a string or a number of seconds",
    "calendarinterval": "cast it to a string",
}


def _type_name(data_type: DataType) -> str:
    name: str = data_type.typeName()
    return "interval" if name.endswith("interval") and name != "calendarinterval" else name


def check_columns(df: DataFrame, *, reserved_ok: frozenset[str] = frozenset()) -> None:
    """Reject duplicate (case-insensitive) and reserved column names."""
    problems = column_name_problems(df.columns, reserved_ok=reserved_ok)
    if problems:
        raise InvalidNameError(problems[0])


def column_name_problems(names: list[str], *, reserved_ok: frozenset[str] = frozenset()) -> list[str]:
    """Why each refused column name is refused (reserved, empty, or equal to another but for
    case), in column order: the messages ``check_columns`` raises."""
    problems = []
    seen: dict[str, str] = {}
    for name in names:
        if name == ROW_MARKER and name not in reserved_ok:
            problems.append(
                f"Column {ROW_MARKER!r} is reserved for the row marker; rename it, or push it as a "
                f"change feed with mode='changes', op_column={ROW_MARKER!r}."
            )
        elif not name.strip():
            problems.append(f"Column name {name!r} is empty; give every column a name.")
        elif name.lower().startswith(INTERNAL_PREFIXES) and name not in reserved_ok:
            # Spark resolves names regardless of case: such a column would be replaced by, or
            # dropped with, one of the columns a push adds while it writes (and lost silently).
            problems.append(
                f"Column {name!r} starts with {name[: name.index('_', 1) + 1]!r}, which openmirror_nb keeps "
                f"for the columns it adds while it writes; rename it, e.g. "
                f"df.withColumnRenamed({name!r}, {name.lstrip('_')!r})."
            )
        elif name.lower() in seen:
            problems.append(
                f"Columns {seen[name.lower()]!r} and {name!r} differ only by case; the mirrored Delta "
                "table is case-insensitive, so rename one of them."
            )
        seen.setdefault(name.lower(), name)
    return problems


def check_keys(df: DataFrame, keys: tuple[str, ...]) -> None:
    """Key columns must exist (exact spelling) and have a simple type."""
    if not keys:
        raise KeyColumnsError(
            "No key columns given; pass keys=['id'] (the columns that identify a row) on the first push."
        )
    if len(set(keys)) != len(keys):
        raise KeyColumnsError(f"Key columns {list(keys)} repeat a column; list each key column once.")
    types = dict(df.dtypes)
    missing = [k for k in keys if k not in types]
    if missing:
        hint = did_you_mean(missing[0], types)
        raise KeyColumnsError(
            f"Key column {missing[0]!r} is not in the DataFrame (columns: {', '.join(df.columns)}).{hint}"
        )
    for key in keys:
        field = df.schema[key]
        if _type_name(field.dataType) in _JSON_TYPES or _type_name(field.dataType) in _REJECTED:
            raise KeyColumnsError(
                f"Key column {key!r} has type {field.dataType.simpleString()}; key columns must be "
                "simple values (string, number, date, timestamp)."
            )


def normalize(df: DataFrame, *, options: TableOptions, keep: frozenset[str] = frozenset()) -> DataFrame:
    """Make every column writable to the landing zone in ``options.file_format``.

    Struct, array, map and variant columns become JSON strings (timestamps in them in UTC, not
    the session's time zone); for delimited text, binary becomes base64 and decimals are refused
    (delimited text has no decimal type, contract §2.1).
    Columns in ``keep`` (the op column of a change feed) pass through untouched.
    """
    from pyspark.sql import functions as F

    out = []
    changed = False
    for field in df.schema.fields:
        name, kind = field.name, _type_name(field.dataType)
        col = F.col(quoted(name))
        if name in keep:
            out.append(col)
            continue
        if kind in _REJECTED:
            raise UnsupportedTypeError(
                f"Column {name!r} has type {field.dataType.simpleString()}, which the landing zone "
                f"cannot hold; {_REJECTED[kind]}."
            )
        if kind == "udt":
            raise UnsupportedTypeError(
                f"Column {name!r} has a user-defined type; convert it to a plain column first."
            )
        if kind in _JSON_TYPES:
            out.append(F.to_json(col, _JSON_OPTIONS).alias(name))
            changed = True
        elif options.is_delimited and kind == "binary":
            out.append(F.base64(col).alias(name, metadata={TEXT_TYPE: "ByteArray"}))
            changed = True
        elif options.is_delimited and kind == "decimal":
            raise UnsupportedTypeError(
                f"Column {name!r} is {field.dataType.simpleString()} but delimited text has no decimal "
                "type; use file_format='parquet' (keeps decimals exactly) or cast it to double or string."
            )
        else:
            out.append(col)
    return df.select(*out) if changed else df
