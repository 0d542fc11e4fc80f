"""Read delimited-text data files the way ``_metadata.json`` describes them (contract §2.1-2.2).

Types come from ``SchemaDefinition`` (all ``String`` when it is absent); NULL is the bare
``NullValue`` while a quoted empty string stays an empty string.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from openmirror_nb._core.landing_zone.metadata import TableMetadata, TextColumn
from openmirror_nb._core.mirror.faults import TableFault
from openmirror_nb._core.model import ROW_MARKER

_TYPES: dict[str, pa.DataType] = {
    "double": pa.float64(),
    "single": pa.float32(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "datetime": pa.string(),
    "idate": pa.date32(),
    "itime": pa.string(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "bytearray": pa.string(),
}
_SEPARATORS = {"csv": ",", "tsv": "\t", "psv": "|"}
_ITIME = r"^\d{1,2}:\d{2}(:\d{2}(\.\d{1,7})?)?$"


@dataclass(frozen=True)
class TextFormat:
    """How the table's delimited-text files are laid out."""

    separator: str | None
    quote: str
    escape: str
    null_value: str
    encoding: str
    columns: tuple[TextColumn, ...]


def text_format(meta: TableMetadata) -> TextFormat:
    """The delimited-text layout a table's ``_metadata.json`` declares (checked when parsed)."""
    d = meta.options.delimited
    return TextFormat(
        separator=meta.separator,
        quote=d.quote,
        escape=d.escape,
        null_value=d.null_value,
        encoding=d.encoding,
        columns=meta.text_columns,
    )


def read_delimited(path: Path, *, size: int, fmt: TextFormat, extension: str) -> pa.Table:
    """Parse one delimited-text file into typed Arrow columns (raises ``TableFault``)."""
    if size == 0:
        raise TableFault("No data rows available. The file is empty (0 bytes).")
    declared = {c.name: c for c in fmt.columns}
    escape: str | Literal[False] = fmt.escape if fmt.escape and fmt.escape != fmt.quote else False
    parse = pcsv.ParseOptions(
        delimiter=fmt.separator or _SEPARATORS.get(extension, ","),
        quote_char=fmt.quote or False,
        escape_char=escape,
        double_quote=not escape,
        newlines_in_values=True,
    )
    read = pcsv.ReadOptions(encoding=fmt.encoding, block_size=1 << 24)
    try:
        if declared:
            types = {name: _TYPES[c.data_type] for name, c in declared.items()}
        else:
            # Without SchemaDefinition every column is String: no type guessing from the data.
            with pcsv.open_csv(str(path), read_options=read, parse_options=parse) as header:
                types = dict.fromkeys(header.schema.names, pa.string())
        types[ROW_MARKER] = pa.int64()
        convert = pcsv.ConvertOptions(
            column_types=types,
            null_values=[fmt.null_value],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        )
        table = pcsv.read_csv(str(path), read_options=read, parse_options=parse, convert_options=convert)
    except (pa.ArrowInvalid, UnicodeDecodeError, ValueError, OSError) as exc:
        raise TableFault(f"ReadDataRowsAsync: Failed to read data rows. Exception: {exc}") from None
    if not declared:
        return table
    return _typed(table, declared)


def _typed(table: pa.Table, declared: dict[str, TextColumn]) -> pa.Table:
    fields, arrays = [], []
    for name in table.column_names:
        values = table.column(name)
        column = declared.get(name)
        if column is None and name != ROW_MARKER:
            raise TableFault(
                f"Column '{name}' is in the file header but not in SchemaDefinition; "
                "declare it in _metadata.json (schema evolution of delimited text needs a reseed)."
            )
        if column is not None:
            values = _convert(name, column.data_type, values)
        fields.append(pa.field(name, values.type, nullable=column.nullable if column else True))
        arrays.append(values)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _convert(name: str, data_type: str, values: pa.ChunkedArray[Any]) -> pa.ChunkedArray[Any]:
    if data_type == "datetime":
        # .NET writers emit 7 fractional digits; Delta keeps 6 (contract §8).
        trimmed = pc.replace_substring_regex(values, r"(\.\d{6})\d+", r"\1")
        for target in (pa.timestamp("us"), pa.timestamp("us", tz="UTC")):
            try:
                return trimmed.cast(target)
            except pa.ArrowInvalid:
                continue
        raise TableFault(
            f"Column '{name}' holds a value that is not a DateTime (yyyy-MM-dd HH:mm:ss.ffffff)."
        )
    if data_type == "itime":
        bad = pc.invert(pc.match_substring_regex(values, _ITIME))
        if pc.any(bad).as_py():
            raise TableFault(f"Column '{name}' holds a value that is not an ITime (HH:mm:ss.ffffff).")
        return values
    if data_type == "bytearray":
        try:
            decoded = [None if v is None else base64.b64decode(v, validate=True) for v in values.to_pylist()]
        except (binascii.Error, ValueError):
            raise TableFault(f"Column '{name}' holds a value that is not base64 (ByteArray).") from None
        return pa.chunked_array([pa.array(decoded, pa.binary())])
    return values
