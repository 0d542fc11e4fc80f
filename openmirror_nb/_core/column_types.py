"""Column types a plan declares (``PlannedTable.types``): ``decimal(p,s)`` or ``string`` for a
column whose source type no Spark type holds whole (PostgreSQL's ``numeric`` without precision,
or with more than 38 digits), and the exact conversion a run applies.

A declared decimal is never rounded: a value with more digits than it holds, in its integer part
or its fraction, or one that is not a number (``NaN``), stops the table's read with one line that
names the table, the column and the value, before anything is written. ``string`` keeps the value
as the source writes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from openmirror_nb._core.errors import REFUSAL_MARK, ConfigError, did_you_mean
from openmirror_nb._core.identifiers import quoted

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType

MAX_DIGITS = 38  # Spark's (and Delta's) widest decimal
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)\Z")
_NUMBER = r"^[+-]?[0-9]+(\.[0-9]*)?$"  # a plain decimal number, as databases write one as text
_CONVERTS = ("string", "decimal", "byte", "short", "integer", "long")
SHAPE = "decimal(p,s) (precision p up to 38, scale s up to p) or string"


def parse_type(text: object, *, column: str) -> tuple[int, int] | None:
    """The precision and scale a declared ``decimal(p,s)`` gives, or ``None`` for ``string``.

    Raises:
        ConfigError: ``text`` is neither; the message names the column and the forms.
    """
    if text == "string":
        return None
    found = _DECIMAL.match(text.strip().lower()) if isinstance(text, str) else None
    if found:
        precision, scale = int(found[1]), int(found[2])
        if 1 <= precision <= MAX_DIGITS and scale <= precision:
            return precision, scale
    raise ConfigError(f"types: {column}: {text!r} is not {SHAPE}; write e.g. {column}: decimal(38,10).")


def type_problems(schema: StructType, types: Mapping[str, str], untyped: Mapping[str, str]) -> list[str]:
    """What is wrong with a table's declared ``types`` (a column it does not have, a form that is
    not one, a decimal for a column that is not a number), and each column whose source type
    needs one and has none (``untyped``: column -> its type in the source)."""
    found = []
    names = schema.fieldNames()
    for column, text in types.items():
        if column not in names:
            found.append(f"types: {column!r} is not a column of the table.{did_you_mean(column, names)}")
            continue
        try:
            declared = parse_type(text, column=column)
        except ConfigError as exc:
            found.append(str(exc).rstrip("."))
            continue
        kind = schema[column].dataType.typeName()
        if declared is not None and kind not in _CONVERTS:
            found.append(
                f"types: {column} is {schema[column].dataType.simpleString()}, which is not converted to a "
                f"decimal; remove it, or write {column}: string"
            )
    for column, source_type in untyped.items():
        if column not in types:
            found.append(
                f"column {column!r} is {source_type} in the source, which can hold more digits than any "
                f"Spark decimal ({MAX_DIGITS}), so it would be rounded or fail: declare its type in the "
                f"plan, types: {{{column}: decimal(p,s)}} for the precision its values need, or "
                f"types: {{{column}: string}} for its exact text"
            )
    return found


def apply_types(frame: DataFrame, types: Mapping[str, str], *, table: str) -> DataFrame:
    """``frame`` with each declared column converted: to text, or to ``decimal(p,s)`` exactly (a
    value that does not fit fails the Spark job that reads it, in one line naming ``table``, the
    column and the value). Columns not declared are as they were, in their place."""
    if not types:
        return frame
    out = []
    for name in frame.columns:
        text = types.get(name)
        if text is None:
            out.append(frame[quoted(name)])
            continue
        declared = parse_type(text, column=name)
        value = frame[quoted(name)]
        if declared is None:
            out.append(value.cast("string").alias(name))
        else:
            kind = frame.schema[name].dataType.typeName()
            out.append(_exact_decimal(value, kind, declared, table=table, column=name).alias(name))
    return frame.select(*out)


def _exact_decimal(value: Column, kind: str, declared: tuple[int, int], *, table: str, column: str) -> Column:
    """``value`` as ``decimal(p,s)`` when that holds it exactly, else a failure naming it."""
    from pyspark.sql import functions as F

    precision, scale = declared
    target = f"decimal({precision},{scale})"
    converted = value.cast(target)
    if kind == "string":
        text = F.trim(value)
        whole = F.regexp_extract(text, r"^[+-]?0*([0-9]*)", 1)
        fraction = F.regexp_extract(text, r"\.([0-9]*?)0*$", 1)
        fits = text.rlike(_NUMBER) & (F.length(whole) <= precision - scale) & (F.length(fraction) <= scale)
        converted = text.cast(target)
    else:  # a number: exact when converting it back gives it again (a cast rounds, or is NULL)
        fits = converted.isNotNull() & (converted == value)
    refused = F.raise_error(
        F.concat(
            F.lit(f"{REFUSAL_MARK}Table {table} column {column!r} holds "),
            shown(value.cast("string")),
            F.lit(
                f", which {target} (declared in the plan's types) does not hold without rounding; nothing "
                f"was written: declare a wider decimal or {column}: string"
            ),
        )
    )
    return F.when(value.isNull() | fits, converted).otherwise(refused)


def shown(text: Column) -> Column:
    """A value's text as a refusal quotes it: whole up to 60 characters (a ``numeric`` can have
    thousands of digits), else its start and ``…``."""
    from pyspark.sql import functions as F

    return F.when(F.length(text) > 60, F.concat(F.substring(text, 1, 60), F.lit("…"))).otherwise(text)


# The decimal digits each whole-number type holds whole (a long's 9,223,372,036,854,775,807: 19).
_WHOLE_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 19}


def widens(narrow: DataType, wide: DataType) -> bool:
    """Whether every value of ``narrow`` is a value of ``wide``, so a cast from one to the other
    loses nothing: a wider whole number, ``float`` to ``double``, or a decimal with at least as
    many digits on each side of the point."""
    from pyspark.sql.types import DecimalType, DoubleType, FloatType

    if narrow == wide:
        return True
    digits = _WHOLE_DIGITS.get(narrow.typeName())
    if digits is not None and wide.typeName() in _WHOLE_DIGITS:
        return digits <= _WHOLE_DIGITS[wide.typeName()]
    if digits is not None and isinstance(wide, DecimalType):
        return wide.precision - wide.scale >= digits
    if isinstance(narrow, DecimalType) and isinstance(wide, DecimalType):
        return wide.scale >= narrow.scale and wide.precision - wide.scale >= narrow.precision - narrow.scale
    return isinstance(narrow, FloatType) and isinstance(wide, DoubleType)
