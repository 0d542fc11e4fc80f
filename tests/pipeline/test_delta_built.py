"""``db.sync_delta`` on Delta tables built here: INT96 timestamps of the years 1 and 9999
(pyarrow + ``convert_to_deltalake``), column mapping by id (files whose column names are not
the physical ones: only the field ids find them), reader features this reader cannot read, and
schema changes of a ``deltalake`` table. Plus the deletion-vector decoder against bytes that
CRoaring (pyroaring 1.2.0) serialized, and the example of Delta's PROTOCOL.md."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, convert_to_deltalake, write_deltalake

import openmirror_nb as om
from openmirror_nb._core.pipeline.delta.deletion_vectors import (
    DeletionVector,
    DeletionVectorError,
    decode_bitmap,
)
from tests.pipeline.delta_tables import mirrored

# BitMap64(values).serialize() (after run_optimize() where runs), zlib + base64.
ROARING = {
    "runs_two_buckets": (
        "eNpjYkAAawNGBmYGhtn/GRnyBRkZUsAsBiAbKMhgZcDAwAhVKADErAwAtbIFkA==",
        [*range(100, 70000), (3 << 32) + 5],
    ),
    "bitmap_container": (
        "eNrt2rENgDAQA0DzDEC2SEvNHuy/CiRNJDZAuissyzO4slxnss129PbmDQDA7wQAAAAAAD7GF2B9AiptbpU9DyFUP3k=",
        [*range(0, 20000, 2), (1 << 32) + 1, (1 << 32) + 2, (1 << 32) + 3],
    ),
    "arrays_with_offsets": (
        "eNpjZEAAKwMGBlYomxGImYCYGYhZgDygFIMREJsAsRkQWzAgA0YGADQUAYE=",
        [0, 65536, 131072, 196608, 262144, 262145],
    ),
    "runs_with_offsets": (
        "eNpjZEAAawMWBnkGBm1GRiBmAmJmIGYBYl2gpDEQWwKxPRC7AjEjA0QldhIAmZIDdA==",
        [v for k in range(5) for v in range(k * 65536, k * 65536 + 300)],
    ),
}


pytestmark = pytest.mark.runtime13  # Delta sync: both Fabric lines


@pytest.mark.parametrize("case", sorted(ROARING))
def test_deletion_vector_bitmaps_decode_as_croaring_wrote_them(case):
    packed, values = ROARING[case]
    data = struct.pack("<I", 1681511377) + zlib.decompress(base64.b64decode(packed))
    assert decode_bitmap(data).tolist() == values


def test_an_inline_deletion_vector_and_a_damaged_file():
    # PROTOCOL.md's inline example (the native layout), its integers little-endian as Delta writes them
    raw = bytes.fromhex("d0d33964010000001c0000003a3000000100000000000500100000000300040007000b0012001d00")
    z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
    text = "".join(
        "".join(z85[(n // 85**i) % 85] for i in range(4, -1, -1)) for n in struct.unpack(">10I", raw)
    )
    dv = DeletionVector.of(
        {"deletionVector": {"storageType": "i", "pathOrInlineDv": text, "sizeInBytes": 40, "cardinality": 6}}
    )
    assert dv.rows(None).tolist() == [3, 4, 7, 11, 18, 29]
    on_disk = DeletionVector("u", "ab" + text[:20], 1, 40, 6)
    assert on_disk.location().startswith("ab/deletion_vector_")
    framed = b"\x01" + struct.pack(">i", 40) + raw + struct.pack(">I", zlib.crc32(raw) ^ 1)
    with pytest.raises(DeletionVectorError, match="damaged"):
        on_disk.rows(framed)


@pytest.mark.spark
def test_int96_timestamps_and_dates_of_the_years_1_and_9999(spark, tmp_path):
    """The ``ArrowInvalid ... would lose data`` of issue 21; pyarrow writes INT96 in the
    proleptic Gregorian calendar, as Delta defines timestamps."""
    source = tmp_path / "source"
    source.mkdir()
    stamps = [
        datetime(9999, 12, 31, 23, 59, 59, 999999, UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1582, 10, 4, 12, tzinfo=UTC),
    ]
    days = [date(9999, 12, 31), date(1, 1, 1), date(1582, 10, 4)]
    rows = pa.table({"id": [1, 2, 3], "valid_to": pa.array(stamps, pa.timestamp("us", "UTC")), "day": days})
    pq.write_table(rows, source / "part-0.parquet", use_deprecated_int96_timestamps=True)
    assert pq.ParquetFile(source / "part-0.parquet").schema.column(1).physical_type == "INT96"
    convert_to_deltalake(str(source))
    db = om.connect(tmp_path / "db")
    assert db.sync_delta(str(source), table="t", keys=["id"]).push.rows == {"initial": 3}
    assert mirrored(db, "t", ("id", "valid_to", "day")) == list(zip([1, 2, 3], stamps, days, strict=True))


def _id_mode_table(path: Path) -> None:
    """Column mapping by id: physical names col-1.., but the files name their columns x1..;
    only the field ids say which is which (PROTOCOL.md: id mode reads by field id)."""
    (path / "_delta_log").mkdir(parents=True)
    _id_commit(path, 0, "name", [(1, "ann", "Oslo"), (2, "bob", "Rome")], first=True)


def _id_commit(path: Path, version: int, name: str, rows: list, *, first: bool = False) -> None:
    def field(fid, kind, children=None):
        meta = {b"PARQUET:field_id": str(fid).encode()}
        return pa.field(f"x{fid}", pa.struct(children) if children else kind, metadata=meta)

    schema = pa.schema([field(1, pa.int64()), field(2, pa.string()), field(3, None, [field(4, pa.string())])])
    data = pa.table([[r[0] for r in rows], [r[1] for r in rows], [{"x4": r[2]} for r in rows]], schema=schema)
    file = f"part-{version:05d}.parquet"
    pq.write_table(data, path / file)

    def mapped(fid, logical, kind):
        meta = {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": f"col-{fid}"}
        return {"name": logical, "type": kind, "nullable": True, "metadata": meta}

    city = {"type": "struct", "fields": [mapped(4, "city", "string")]}
    fields = [mapped(1, "id", "long"), mapped(2, name, "string"), mapped(3, "address", city)]
    config = {
        "delta.columnMapping.mode": "id",
        "delta.columnMapping.maxColumnId": "4",
        "delta.enableChangeDataFeed": "true",
    }
    meta = {"id": "t", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [], "configuration": config,
            "schemaString": json.dumps({"type": "struct", "fields": fields})}  # fmt: skip
    size = (path / file).stat().st_size
    add = {"path": file, "partitionValues": {}, "size": size, "modificationTime": 0, "dataChange": True,
           "stats": json.dumps({"numRecords": len(rows)})}  # fmt: skip
    actions = [{"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}}] if first else []
    actions += [{"metaData": meta}, {"add": add}]
    (path / "_delta_log" / f"{version:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in actions) + "\n"
    )


@pytest.mark.spark
def test_column_mapping_by_id_reads_by_field_id_and_a_rename_needs_a_reseed(spark, tmp_path, lz_hash):
    source = tmp_path / "source"
    _id_mode_table(source)
    db = om.connect(tmp_path / "db", lock_timeout=5)
    db.sync_delta(str(source), table="t", keys=["id"])
    assert mirrored(db, "t", ("id", "name", "address")) == [
        (1, "ann", '{"city":"Oslo"}'),
        (2, "bob", '{"city":"Rome"}'),
    ]
    _id_commit(source, 1, "full_name", [(3, "cy", "Pisa")])  # renames column 2, adds a row
    before = lz_hash(db.target.landing_zone)
    with pytest.raises(om.SchemaChangeError, match="column 'name' was renamed to 'full_name'"):
        db.sync_delta(str(source), table="t")
    assert lz_hash(db.target.landing_zone) == before
    df = om.read_delta(str(source))
    db.apply_schema_change(db.plan_schema_change("t", df), df, confirm="t")
    _id_commit(source, 2, "full_name", [(4, "di", "Bern")])
    assert db.sync_delta(str(source), table="t").push.rows == {"insert": 1}  # a diff after the reseed
    _id_commit(source, 3, "full_name", [(5, "ed", None)])
    assert db.sync_delta(str(source), table="t").push.rows == {"upsert": 1}  # then the feed
    assert mirrored(db, "t", ("id", "full_name", "address")) == [
        (1, "ann", '{"city":"Oslo"}'),
        (2, "bob", '{"city":"Rome"}'),
        (3, "cy", '{"city":"Pisa"}'),
        (4, "di", '{"city":"Bern"}'),
        (5, "ed", "{}"),
    ]


@pytest.mark.spark
def test_a_folder_without_a_delta_log_is_refused_with_the_path(spark, tmp_path, reader):
    db = om.connect(tmp_path / "db")
    with pytest.raises(om.ConfigError, match=r"is not a Delta table .*_delta_log"):
        db.sync_delta(str(tmp_path / "nothing"), table="t", keys=["id"], reader=reader)
    with pytest.raises(om.ConfigError, match="nothing"):
        om.read_delta(str(tmp_path / "nothing"))
    assert not db.target.landing_zone.joinpath("t").exists()


@pytest.mark.spark
@pytest.mark.parametrize(
    ("reader", "feature"),
    [("deltalake", "futureFeature"), ("deltalake", "typeWidening"), ("spark", "futureFeature")],
)
def test_a_reader_feature_this_reader_cannot_read_is_refused(spark, tmp_path, lz_hash, reader, feature):
    """``deltalake``'s reader refuses what it cannot read (Spark's Delta 4.2 reads type widening)."""
    source = str(tmp_path / "source")
    write_deltalake(source, pa.table({"id": [1, 2]}))
    db = om.connect(tmp_path / "db")
    db.sync_delta(source, table="t", keys=["id"], reader=reader)
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": [feature],
        "writerFeatures": [feature],
    }
    Path(source, "_delta_log", f"{1:020d}.json").write_text(json.dumps({"protocol": protocol}) + "\n")
    before = lz_hash(db.target.landing_zone)
    with pytest.raises(om.NotSupportedError) as error:
        db.sync_delta(source, table="t", reader=reader)
    message = str(error.value)
    assert source in message and feature in message and "Fabric" in message and "db.push" in message
    assert lz_hash(db.target.landing_zone) == before


@pytest.mark.spark
def test_added_and_dropped_columns_are_absorbed_a_type_change_stops_the_sync(spark, tmp_path, lz_hash):
    source = str(tmp_path / "source")
    ids = pa.array([1, 2], pa.int64())
    config = {"delta.enableChangeDataFeed": "true"}
    write_deltalake(source, pa.table({"id": ids, "v": ids, "note": ["a", "b"]}), configuration=config)
    db = om.connect(tmp_path / "db")
    db.sync_delta(source, table="t", keys=["id"])
    extra = pa.table(
        {"id": pa.array([3], pa.int64()), "v": pa.array([3], pa.int64()), "note": ["c"], "extra": [True]}
    )
    write_deltalake(source, extra, mode="append", schema_mode="merge")  # v1: a column added
    assert db.sync_delta(source, table="t").push.rows == {"upsert": 1}
    kept = DeltaTable(source).to_pyarrow_table().drop_columns(["note"])
    write_deltalake(source, kept, mode="overwrite", schema_mode="overwrite")  # v2: note dropped
    assert db.sync_delta(source, table="t").how == "changes"
    assert mirrored(db, "t", ("id", "v", "extra", "note")) == [
        (1, 1, None, None),
        (2, 2, None, None),
        (3, 3, True, None),
    ]
    retyped = kept.set_column(1, "v", pa.array(["1", "2", "3"]))
    write_deltalake(source, retyped, mode="overwrite", schema_mode="overwrite")  # v3: v is text now
    before = lz_hash(db.target.landing_zone)
    with pytest.raises(om.SchemaChangeError, match="column 'v' changed type from long to string"):
        db.sync_delta(source, table="t")
    assert lz_hash(db.target.landing_zone) == before
