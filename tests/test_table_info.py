"""``db.describe(table)``, ``db.tables()`` and the database's reprs, on hand-written landing zones
(no Spark): what ``_metadata.json`` and the push state say, read back as the user sees it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import LandingZoneError
from openmirror_nb._core.table_info import ColumnInfo

CREATED = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
LAST_PUSH = 1_700_003_600.5  # one hour and half a second later
SPARK_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
        {"name": "<b>", "type": "string", "nullable": True, "metadata": {}},
        {"name": "a`b", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
    ],
}


def state_bytes(**changes) -> bytes:
    """``_openmirror/state.json`` as ``PushState.to_bytes`` writes it."""
    doc = {
        "version": 1,
        "key_columns": ["id"],
        "schema": json.dumps(SPARK_SCHEMA),
        "last_sequence_number": 7,
        "pushes": 3,
        "base": "orders/_openmirror/keystate/inc0001.p1",
        "deltas": ["orders/_openmirror/keystate/inc0001.p2", "orders/_openmirror/keystate/inc0001.p3"],
        "base_rows": 1000,
        "delta_rows": 25,
        "buckets": None,
        "incarnation": "inc0001",
        "created": CREATED,
        "last_push": LAST_PUSH,
        **changes,
    }
    return json.dumps(doc, indent=2).encode()


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db")


def pushed_table(db, folder: str = "orders", **state) -> None:
    db.storage.write_bytes(f"{folder}/_metadata.json", b'{"keyColumns": ["id"]}')
    db.storage.write_bytes(f"{folder}/_openmirror/state.json", state_bytes(**state))
    db.storage.write_bytes(f"{folder}/_ProcessedFiles/00000000000000000005.parquet", b"five")
    db.storage.write_bytes(f"{folder}/00000000000000000006.parquet", b"six")


DELIMITED_META = {
    "KeyColumns": ["id"],
    "SchemaDefinition": {
        "Columns": [
            {"Name": "id", "DataType": "Int32", "IsNullable": False},
            {"Name": "name", "DataType": "String", "IsNullable": True},
            {"Name": "small", "DataType": "Int16"},
            {"Name": "big", "DataType": "Int64"},
            {"Name": "ratio", "DataType": "Single"},
            {"Name": "price", "DataType": "Double"},
            {"Name": "at", "DataType": "DateTime"},
            {"Name": "day", "DataType": "IDate"},
            {"Name": "clock", "DataType": "ITime"},
            {"Name": "flag", "DataType": "Boolean"},
            {"Name": "blob", "DataType": "ByteArray"},
        ]
    },
    "FileFormat": "DelimitedText",
    "FileExtension": "tsv",
    "FileFormatTypeProperties": {"FirstRowAsHeader": True, "ColumnSeparator": "\t"},
}


def test_describe_reads_metadata_and_push_state(db):
    pushed_table(db)
    info = db.describe("orders")
    assert (info.table, info.folder, info.keys) == ("orders", "orders", ("id",))
    assert info.columns == (
        ColumnInfo("id", "BIGINT", False, True),
        ColumnInfo("amount", "DECIMAL(10,2)", True, False),
        ColumnInfo("<b>", "STRING", True, False),
        ColumnInfo("a`b", "TIMESTAMP_NTZ", True, False),
    )
    assert info.ddl == "`id` BIGINT NOT NULL, `amount` DECIMAL(10,2), `<b>` STRING, `a``b` TIMESTAMP_NTZ"
    assert (info.options.file_format, info.options.file_detection) == ("parquet", "SequentialFileName")
    assert info.last_sequence == 7  # the state's, above the listed 6
    assert (info.base_rows, info.changed_keys, info.state_rows) == (1000, 25, None)
    assert (info.pushes, info.pushes_since_base, info.incarnation) == (3, 2, "inc0001")
    assert info.created == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert info.last_push == datetime(2023, 11, 14, 23, 13, 20, 500000, tzinfo=UTC)
    assert info.created.utcoffset().total_seconds() == 0


def test_describe_takes_the_last_sequence_from_the_listing_when_it_is_ahead(db):
    pushed_table(db)
    db.storage.write_bytes("orders/00000000000000000009.parquet", b"nine")
    assert db.describe("orders").last_sequence == 9


def test_state_rows_are_exact_only_right_after_a_new_base(db):
    pushed_table(db, deltas=[], delta_rows=0, pushes=4)
    info = db.describe("orders")
    assert (info.base_rows, info.changed_keys, info.state_rows, info.pushes_since_base) == (1000, 0, 1000, 0)
    pushed_table(db, "old", base_rows=None, delta_rows=None)  # a state older than the counts
    old = db.describe("old")
    assert (old.base_rows, old.changed_keys, old.state_rows) == (None, None, None)
    assert "  rows in key state: unknown" in repr(old).splitlines()


def test_repr_lists_every_fact_in_plain_lines(db):
    pushed_table(db)
    assert repr(db.describe("orders")).splitlines() == [
        "Table orders (folder orders)",
        "  keys: id",
        "  format: parquet, SequentialFileName, upsert default false",
        "  last sequence: 7",
        "  rows in key state: 1,000 at the base, then at most 25 keys changed",
        "  pushes: 3 (2 since the key-state base)",
        "  incarnation: inc0001",
        "  created: 2023-11-14 22:13:20 UTC",
        "  last push: 2023-11-14 23:13:20 UTC",
        "  columns: `id` BIGINT NOT NULL, `amount` DECIMAL(10,2), `<b>` STRING, `a``b` TIMESTAMP_NTZ",
    ]


def test_repr_html_escapes_names(db):
    pushed_table(db)
    page = db.describe("orders")._repr_html_()
    assert "<td>&lt;b&gt;</td><td>STRING</td><td></td>" in page
    assert "<td><b></td>" not in page and page.count("<b>") == page.count("</b>") == 1
    assert "<td>🔑 id</td><td>BIGINT</td><td>NOT NULL</td>" in page
    assert "<td>amount</td><td>DECIMAL(10,2)</td><td></td>" in page
    assert "<th style='text-align:left'>incarnation</th><td>inc0001</td>" in page


def test_describe_a_delimited_table_without_state(db):
    db.storage.write_bytes("s.schema/t/_metadata.json", json.dumps(DELIMITED_META).encode())
    db.storage.write_bytes("s.schema/t/00000000000000000002.tsv", b"id\n1\n")
    info = db.describe("s.t")
    assert (info.table, info.folder, info.keys) == ("s.t", "s.schema/t", ("id",))
    assert info.options.file_format == "tsv" and info.options.column_separator == "\t"
    # SchemaDefinition types in the Spark types the mirror reads them as
    assert [(c.name, c.type, c.nullable, c.key) for c in info.columns] == [
        ("id", "INT", False, True),
        ("name", "STRING", True, False),
        ("small", "SMALLINT", True, False),
        ("big", "BIGINT", True, False),
        ("ratio", "FLOAT", True, False),
        ("price", "DOUBLE", True, False),
        ("at", "TIMESTAMP", True, False),
        ("day", "DATE", True, False),
        ("clock", "STRING", True, False),
        ("flag", "BOOLEAN", True, False),
        ("blob", "BINARY", True, False),
    ]
    assert info.ddl.startswith("`id` INT NOT NULL, `name` STRING, `small` SMALLINT")
    assert info.last_sequence == 2
    assert (info.base_rows, info.changed_keys, info.state_rows) == (None, None, None)
    assert (info.pushes, info.incarnation, info.created, info.last_push) == (0, None, None, None)
    lines = repr(info).splitlines()
    assert "  format: tsv (separator '\\t'), SequentialFileName, upsert default false" in lines
    assert "  incarnation: none (not pushed by openmirror_nb)" in lines
    assert "  created: unknown" in lines and "  last push: unknown" in lines


def test_describe_a_parquet_table_without_state_has_no_columns(db):
    db.storage.write_bytes("plain/_metadata.json", b'{"keyColumns": ["k1", "k2"]}')
    info = db.describe("plain")
    assert info.keys == ("k1", "k2") and info.columns == () and info.ddl == ""
    assert repr(info).splitlines()[-1] == "  columns: unknown"
    assert "<i>columns unknown</i>" in info._repr_html_()


def test_describe_a_missing_table_names_it_and_the_close_ones(db):
    pushed_table(db)
    db.storage.write_bytes("sales.schema/orders/_metadata.json", b'{"keyColumns": ["id"]}')
    with pytest.raises(LandingZoneError, match=r"Table 'ordres' does not exist.*Did you mean 'orders'\?"):
        db.describe("ordres")
    with pytest.raises(
        LandingZoneError, match=r"Table 'customers' does not exist.*Tables: orders, sales.orders\."
    ):
        db.describe("customers")
    db.storage.write_bytes("nometa/00000000000000000001.parquet", b"x")  # a folder is not a table yet
    with pytest.raises(LandingZoneError, match="'nometa' does not exist"):
        db.describe("nometa")


def test_describe_in_an_empty_database(db):
    with pytest.raises(LandingZoneError) as caught:
        db.describe("orders")
    assert str(caught.value) == "Table 'orders' does not exist in the landing zone."


def test_tables_lists_folders_with_metadata_only(db):
    meta = b'{"keyColumns": ["id"]}'
    for path in (
        "orders/_metadata.json",
        "sales.schema/orders/_metadata.json",
        "sales.schema/returns/_metadata.json",
        "hr.schema/people/_metadata.json",
        "_x/_metadata.json",  # underscore folders are never tables
        "sales.schema/_y/_metadata.json",
        "_archive.schema/t/_metadata.json",
    ):
        db.storage.write_bytes(path, meta)
    db.storage.write_bytes("staging/00000000000000000001.parquet", b"no metadata yet")
    db.storage.write_bytes("_openmirror/locks/orders.lock", b"")
    assert db.tables() == ["hr.people", "orders", "sales.orders", "sales.returns"]


def test_database_reprs_count_and_list_the_tables(db):
    assert repr(db).endswith(", 0 tables)")
    pushed_table(db)
    db.storage.write_bytes("s.schema/t/_metadata.json", json.dumps(DELIMITED_META).encode())
    db.storage.write_bytes("notatable/00000000000000000001.parquet", b"x")
    text = repr(db)
    assert text.startswith("MirroredDatabase(") and text.endswith(", 2 tables)")
    page = db._repr_html_()
    assert ", 2 tables<table>" in page
    assert page.count("<tr><td>") == 2
    assert (
        "<tr><td>orders</td><td>id</td><td style='text-align:right'>7</td>"
        "<td style='text-align:right'>1,000 (±25)</td></tr>" in page
    )
    assert (
        "<tr><td>s.t</td><td>id</td><td style='text-align:right'>0</td>"
        "<td style='text-align:right'></td></tr>" in page
    )
