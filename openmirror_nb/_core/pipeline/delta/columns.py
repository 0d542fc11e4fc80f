"""A Delta table's columns as Spark reads its Parquet files: logical names, physical names, ids.

Under column mapping (Delta PROTOCOL.md, "Column Mapping") every column, nested ones too, has a
physical name in the data files and a logical name in the schema; in ``id`` mode the files are
matched by Parquet field id. Files are read with the physical schema and each column cast to its
logical type, which renames nested struct fields by position. Partition columns are not in the
files: their values come from the log, serialized as the protocol's "Partition Value
Serialization" says. Every column is read as nullable, as Spark reads any Parquet file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openmirror_nb._core.identifiers import quoted

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

MODE = "delta.columnMapping.mode"
PHYSICAL = "delta.columnMapping.physicalName"
ID = "delta.columnMapping.id"
# Spark's own metadata key for matching a Parquet column by field id (spark.sql.parquet.fieldId.*).
FIELD_ID = "parquet.field.id"
FIELD_ID_READ = "spark.sql.parquet.fieldId.read.enabled"


@dataclass(frozen=True)
class TableColumns:
    """The columns of one version of a Delta table.

    Attributes:
        schema: The Delta schema as JSON (``metaData.schemaString``).
        partition_columns: Logical names of the partition columns.
        mode: Column mapping mode in force: ``"none"``, ``"name"`` or ``"id"``.
    """

    schema: dict[str, Any]
    partition_columns: tuple[str, ...]
    mode: str

    @classmethod
    def of(
        cls, schema: dict[str, Any], partition_columns: Any, config: dict[str, Any], mapping: bool
    ) -> TableColumns:
        """``mapping``: the protocol supports column mapping (the mode is honoured only then)."""
        mode = str(config.get(MODE) or "none").lower() if mapping else "none"
        return cls(schema, tuple(partition_columns), mode)

    @property
    def fields(self) -> list[dict[str, Any]]:
        return list(self.schema.get("fields", []))

    def logical(self) -> StructType:
        """The table's Spark schema, every column nullable, no Delta metadata."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(_strip({"type": "struct", "fields": self.fields}))

    def physical_data(self, *extra: dict[str, Any]) -> StructType:
        """The Spark schema that reads the data files (no partition columns), plus ``extra``."""
        from pyspark.sql.types import StructType

        data = [f for f in self.fields if f["name"] not in self.partition_columns]
        fields = [_physical_field(f, self.mode) for f in data] + list(extra)
        return StructType.fromJson({"type": "struct", "fields": fields})

    def physical_name(self, name: str) -> str:
        field = next(f for f in self.fields if f["name"] == name)
        return _physical_name(field, self.mode)

    def ids(self) -> dict[int, str] | None:
        """Top-level column id -> logical name, under column mapping; else ``None``."""
        if self.mode == "none":
            return None
        return {int(f["metadata"][ID]): f["name"] for f in self.fields if ID in f.get("metadata", {})}

    def data_columns(self) -> list[Column]:
        """Columns of a frame read with ``physical_data()``, renamed and cast to logical."""
        from pyspark.sql import functions as F

        logical = {f.name: f.dataType for f in self.logical().fields}
        out = []
        for field in self.fields:
            name = field["name"]
            if name in self.partition_columns:
                continue
            column = F.col(quoted(_physical_name(field, self.mode)))
            kind = logical[name]
            if _physical_type(field["type"], self.mode) != _strip(field)["type"]:
                column = column.cast(kind)  # nested physical names -> logical, by position
            out.append(column.alias(name))
        return out


def partition_value(raw: Column, kind: DataType) -> Column:
    """A serialized partition value (string) as a typed column; an empty string is NULL."""
    from pyspark.sql import functions as F

    typed = raw if kind.typeName() == "string" else raw.cast(kind)
    return F.when(raw.isNull() | (raw == ""), F.lit(None).cast(kind)).otherwise(typed)


def _physical_name(field: dict[str, Any], mode: str) -> str:
    if mode == "none":
        return str(field["name"])
    return str(field.get("metadata", {}).get(PHYSICAL, field["name"]))


def _physical_field(field: dict[str, Any], mode: str) -> dict[str, Any]:
    metadata = {}
    if mode == "id" and ID in field.get("metadata", {}):
        metadata[FIELD_ID] = int(field["metadata"][ID])
    return {
        "name": _physical_name(field, mode),
        "type": _physical_type(field["type"], mode),
        "nullable": True,
        "metadata": metadata,
    }


def _physical_type(kind: Any, mode: str) -> Any:
    if not isinstance(kind, dict):
        return kind
    if kind["type"] == "struct":
        return {"type": "struct", "fields": [_physical_field(f, mode) for f in kind["fields"]]}
    if kind["type"] == "array":
        return {
            "type": "array",
            "elementType": _physical_type(kind["elementType"], mode),
            "containsNull": True,
        }
    if kind["type"] == "map":
        return {
            "type": "map",
            "keyType": _physical_type(kind["keyType"], mode),
            "valueType": _physical_type(kind["valueType"], mode),
            "valueContainsNull": True,
        }
    return kind


def _strip(field: dict[str, Any]) -> dict[str, Any]:
    """``field`` (or a struct) nullable throughout, without Delta's metadata."""
    out: dict[str, Any] = json.loads(json.dumps(field))

    def clean(kind: Any) -> Any:
        if isinstance(kind, dict):
            if kind.get("type") == "struct":
                kind["fields"] = [
                    {"name": f["name"], "type": clean(f["type"]), "nullable": True, "metadata": {}}
                    for f in kind["fields"]
                ]
            elif kind.get("type") == "array":
                kind["elementType"], kind["containsNull"] = clean(kind["elementType"]), True
            elif kind.get("type") == "map":
                kind["keyType"], kind["valueType"] = clean(kind["keyType"]), clean(kind["valueType"])
                kind["valueContainsNull"] = True
        return kind

    if out.get("type") == "struct" and "fields" in out:
        cleaned: dict[str, Any] = clean(out)
        return cleaned
    out["type"], out["nullable"], out["metadata"] = clean(out["type"]), True, {}
    return out
