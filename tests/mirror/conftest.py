"""Fixtures for the local mirror: a landing zone built by hand with pyarrow (no push path)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmirror_nb._core.mirror import LocalMirror, read_delta_arrow

MARKER = "__rowMarker__"


class LandingZone:
    """A local mirrored database whose landing zone a test writes file by file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lz = root / "Files" / "LandingZone"
        self.lz.mkdir(parents=True)
        self.mirror = LocalMirror(root)

    def folder(self, table: str) -> Path:
        """``sales.orders`` -> ``sales.schema/orders``; ``orders`` -> ``orders`` (schema dbo).

        A name with a ``/`` is taken as a path relative to the landing zone.
        """
        if "/" in table:
            return self.lz / table
        schema, _, name = table.partition(".")
        return self.lz / f"{schema}.schema" / name if name else self.lz / schema

    def metadata(self, table: str, doc: dict[str, Any] | None = None, **fields: Any) -> Path:
        folder = self.folder(table)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "_metadata.json"
        path.write_text(json.dumps(doc if doc is not None else fields))
        return path

    def publish(self, table: str, name: str, data: bytes) -> Path:
        """Write under an underscore name, then rename: the way publishers make files appear."""
        final = self.folder(table) / name
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f"_{final.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, final)
        return final

    def parquet(
        self,
        table: str,
        sequence: int | str,
        data: pa.Table | list[dict[str, Any]],
        *,
        schema: pa.Schema | None = None,
        compression: str = "snappy",
    ) -> Path:
        """Publish ``data`` as ``<20 digits>.parquet`` (or the given file name)."""
        if not isinstance(data, pa.Table):
            data = pa.Table.from_pylist(data, schema=schema)
        sink = pa.BufferOutputStream()
        pq.write_table(data, sink, compression=compression)
        name = sequence if isinstance(sequence, str) else f"{sequence:020d}.parquet"
        return self.publish(table, name, sink.getvalue().to_pybytes())

    def text(
        self, table: str, sequence: int, body: str, *, ext: str = "csv", encoding: str = "utf-8"
    ) -> Path:
        return self.publish(table, f"{sequence:020d}.{ext}", body.encode(encoding))

    @staticmethod
    def with_marker(
        rows: list[dict[str, Any]], markers: list[int], schema: pa.Schema | None = None
    ) -> pa.Table:
        """Rows plus ``__rowMarker__`` (int32) as the last column."""
        data = pa.Table.from_pylist(rows, schema=schema)
        return data.append_column(MARKER, pa.array(markers, pa.int32()))

    def table_dir(self, table: str) -> Path:
        schema, _, name = table.partition(".")
        return self.root / "Tables" / schema / name if name else self.root / "Tables" / "dbo" / schema

    def rows(self, table: str, *, key: str | tuple[str, ...] = "id") -> list[dict[str, Any]]:
        """The mirrored table's rows, sorted by ``key`` then by every column."""
        keys = (key,) if isinstance(key, str) else key
        data = read_delta_arrow(self.table_dir(table)).to_pylist()
        return sorted(
            data, key=lambda r: tuple(_sortable(r[k]) for k in keys) + tuple(map(_sortable, r.values()))
        )

    def monitoring(self, name: str = "tables.json") -> Any:
        return json.loads((self.root / "Files" / "Monitoring" / name).read_text())

    def table_status(self, table: str) -> dict[str, Any]:
        qualified = table if "." in table else f"dbo.{table}"
        found = [t for t in self.monitoring()["tables"] if t["normalizedTableName"] == qualified]
        assert found, f"{qualified} not in tables.json"
        return found[0]


def _sortable(value: Any) -> tuple[int, Any]:
    return (0, "") if value is None else (1, value)


@pytest.fixture
def lz(tmp_path: Path) -> LandingZone:
    return LandingZone(tmp_path / "db")
