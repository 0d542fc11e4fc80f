"""Column types as Delta stores them, and the schema-evolution rules of contract §5.1.

Every file column is brought to one canonical Arrow type per Delta type (all string flavours to
``string``, every timestamp to ``timestamp[us, UTC]`` so the protocol stays at reader 1 / writer 2,
times of day to ``string`` because Delta has no time type). A file then either fits the table,
adds columns to it, or fails it: a changed type or an omitted non-nullable column.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from openmirror_nb._core.mirror.faults import TableFault

UTC_MICROS = pa.timestamp("us", tz="UTC")
_WIDER_SIGNED = {8: pa.int16(), 16: pa.int32(), 32: pa.int64(), 64: pa.int64()}


def canonical_type(column: str, t: pa.DataType) -> pa.DataType:
    """The type a column of Arrow type ``t`` is stored with; ``null`` stays ``null``."""
    if pa.types.is_dictionary(t):
        return canonical_type(column, t.value_type)
    if pa.types.is_null(t) or pa.types.is_boolean(t) or pa.types.is_signed_integer(t):
        return t
    if pa.types.is_unsigned_integer(t):
        # Delta has no unsigned types; uint64 values above 2**63-1 fail the cast with a clear message.
        return _WIDER_SIGNED[t.bit_width]
    if pa.types.is_floating(t):
        return pa.float32() if t.bit_width <= 32 else pa.float64()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_timestamp(t):
        return UTC_MICROS
    if pa.types.is_date(t):
        return pa.date32()
    if pa.types.is_time(t):
        return pa.string()
    if pa.types.is_decimal(t) and t.precision <= 38:
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return pa.list_(canonical_type(column, t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, canonical_type(column, f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(canonical_type(column, t.key_type), canonical_type(column, t.item_type))
    raise TableFault(f"Column '{column}' has type {t}, which a Delta table cannot store.")


def type_name(t: pa.DataType) -> str:
    """A comparable name: equal for types Delta stores alike, whatever their child field names."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{type_name(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {type_name(f.type)}" for f in t) + ">"
    if pa.types.is_map(t):
        return f"map<{type_name(t.key_type)}, {type_name(t.item_type)}>"
    return str(t)


def cast_column(column: str, values: pa.ChunkedArray[Any], target: pa.DataType) -> pa.ChunkedArray[Any]:
    """Cast ``values`` to ``target``; a value that does not fit fails the file."""
    if values.type.equals(target):
        return values
    try:
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        # Timestamps finer than microseconds are truncated, as Delta keeps 6 digits (contract §8).
        return values.cast(target, safe=not pa.types.is_timestamp(target))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise TableFault(f"Column '{column}' cannot be read as {target}: {exc}") from None


def evolve_schema(current: pa.Schema | None, incoming: pa.Schema) -> pa.Schema:
    """The table schema after applying a file with schema ``incoming`` (marker removed).

    Raises:
        TableFault: kind ``schema`` when a column changes type or a non-nullable column is
            omitted; the table stays failed until its folder is recreated (contract §5.1).
    """
    if current is None:
        return pa.schema([_new_field(f, f.nullable) for f in incoming])
    by_name = {f.name: f for f in incoming}
    for field in current:
        got = by_name.get(field.name)
        if got is None and not field.nullable:
            raise TableFault(
                f"Column '{field.name}' is not nullable but the data file omits it; a column "
                "missing from a file must be nullable. Keep publishing the column, or delete and "
                "recreate the table folder to change the schema.",
                kind="schema",
            )
        if got is not None and not pa.types.is_null(got.type):
            if type_name(got.type) != type_name(field.type):
                raise TableFault(
                    f"Column '{field.name}' changed type from {type_name(field.type)} to "
                    f"{type_name(got.type)}; a column type change stops replication of the table. "
                    "Delete and recreate the table folder with all data in the new type.",
                    kind="schema",
                )
    added = [_new_field(f, True) for f in incoming if current.get_field_index(f.name) < 0]
    return pa.schema([*current, *added]) if added else current


def _new_field(field: pa.Field[Any], nullable: bool) -> pa.Field[Any]:
    # A column that is NULL in every row of its first file has no type yet; store it as string.
    t = pa.string() if pa.types.is_null(field.type) else field.type
    return pa.field(field.name, t, nullable=nullable)


def align(data: pa.Table, schema: pa.Schema, *, nullable: bool = False) -> pa.Table:
    """``data`` with exactly ``schema``'s columns and types; absent columns are NULL.

    With ``nullable`` the result's fields are all nullable (a MERGE source carrying delete rows).
    """
    arrays = []
    for field in schema:
        if field.name in data.column_names:
            arrays.append(cast_column(field.name, data.column(field.name), field.type))
        else:
            arrays.append(pa.chunked_array([pa.nulls(data.num_rows, field.type)]))
    fields = [f.with_nullable(True) for f in schema] if nullable else list(schema)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def null_violations(data: pa.Table, schema: pa.Schema) -> str | None:
    """Name the first non-nullable column of ``schema`` that ``data`` has a NULL in, if any."""
    for field in schema:
        if not field.nullable and field.name in data.column_names:
            nulls = data.column(field.name).null_count
            if nulls:
                return (
                    f"Column '{field.name}' is not nullable but {nulls} inserted or updated row(s) hold NULL."
                )
    return None
