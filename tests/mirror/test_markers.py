"""Behaviour 4: the __rowMarker__ matrix of contract §4, rows in file order."""

from __future__ import annotations

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("qty", pa.int32())])


def _seed(lz, table="orders", **meta):
    lz.metadata(table, keyColumns=["id"], **meta)
    lz.parquet(
        table, 1, [{"id": 1, "city": "Oslo", "qty": 1}, {"id": 2, "city": "Rome", "qty": 2}], schema=SCHEMA
    )


def test_marker_0_inserts_even_when_the_key_exists(lz):
    _seed(lz)
    lz.parquet("orders", 2, lz.with_marker([{"id": 1, "city": "Lima", "qty": 9}], [0], SCHEMA))
    run = lz.mirror.run_once()
    assert run["orders"].rows_inserted == 3
    assert lz.rows("orders") == [
        {"id": 1, "city": "Lima", "qty": 9},
        {"id": 1, "city": "Oslo", "qty": 1},
        {"id": 2, "city": "Rome", "qty": 2},
    ]


def test_markers_1_and_4_insert_or_replace(lz):
    _seed(lz)
    rows = [
        {"id": 1, "city": "Lima", "qty": 10},
        {"id": 2, "city": "Kyiv", "qty": 20},
        {"id": 3, "city": "Baku", "qty": 30},
        {"id": 4, "city": "Doha", "qty": 40},
    ]
    lz.parquet("orders", 2, lz.with_marker(rows, [1, 4, 1, 4], SCHEMA))
    run = lz.mirror.run_once()
    assert run["orders"].rows_updated == 4
    assert lz.rows("orders") == rows


def test_marker_2_deletes_or_does_nothing(lz):
    _seed(lz)
    deletes = lz.with_marker(
        [{"id": 2, "city": None, "qty": None}, {"id": 99, "city": None, "qty": None}], [2, 2], SCHEMA
    )
    lz.parquet("orders", 2, deletes)
    run = lz.mirror.run_once()
    assert run["orders"].status == "Replicating"
    assert run["orders"].rows_deleted == 2
    assert lz.rows("orders") == [{"id": 1, "city": "Oslo", "qty": 1}]


def test_marker_free_file_inserts(lz):
    _seed(lz)
    lz.parquet("orders", 2, [{"id": 1, "city": "Lima", "qty": 5}], schema=SCHEMA)
    lz.mirror.run_once()
    assert [r["city"] for r in lz.rows("orders")] == ["Lima", "Oslo", "Rome"]


def test_marker_free_file_upserts_when_isUpsertDefaultRowMarker(lz):
    _seed(lz, isUpsertDefaultRowMarker=True)
    lz.parquet(
        "orders", 2, [{"id": 1, "city": "Lima", "qty": 5}, {"id": 3, "city": "Baku", "qty": 3}], schema=SCHEMA
    )
    run = lz.mirror.run_once()
    assert run["orders"].rows_updated == 4  # both files are applied as upserts
    assert [(r["id"], r["city"]) for r in lz.rows("orders")] == [(1, "Lima"), (2, "Rome"), (3, "Baku")]


def test_rows_apply_in_file_order_with_repeated_keys(lz):
    _seed(lz)
    rows = [
        {"id": 1, "city": "A", "qty": 1},  # 0: a duplicate of id 1
        {"id": 1, "city": "B", "qty": 2},  # 4: replaces every row of id 1
        {"id": 1, "city": "C", "qty": 3},  # 0: a second row for id 1
        {"id": 2, "city": None, "qty": None},  # 2: delete id 2
        {"id": 2, "city": "D", "qty": 4},  # 0: id 2 is back
        {"id": 5, "city": "E", "qty": 5},  # 2: nothing to delete
        {"id": 5, "city": "F", "qty": 6},  # 1: insert
        {"id": 5, "city": "G", "qty": 7},  # 4: replace
    ]
    lz.parquet("orders", 2, lz.with_marker(rows, [0, 4, 0, 2, 0, 2, 1, 4], SCHEMA))
    lz.mirror.run_once()
    assert [(r["id"], r["city"]) for r in lz.rows("orders")] == [(1, "B"), (1, "C"), (2, "D"), (5, "G")]


def test_update_replaces_the_whole_row_missing_columns_become_null(lz):
    _seed(lz)
    lz.parquet(
        "orders",
        2,
        lz.with_marker(
            [{"id": 1, "city": "Lima"}], [1], pa.schema([("id", pa.int64()), ("city", pa.string())])
        ),
    )
    lz.mirror.run_once()
    assert lz.rows("orders")[0] == {"id": 1, "city": "Lima", "qty": None}


def test_update_replaces_every_row_of_a_duplicated_key(lz):
    _seed(lz)
    lz.parquet("orders", 2, lz.with_marker([{"id": 1, "city": "Dup", "qty": 0}], [0], SCHEMA))
    lz.parquet("orders", 3, lz.with_marker([{"id": 1, "city": "One", "qty": 1}], [4], SCHEMA))
    lz.mirror.run_once()
    assert [(r["id"], r["city"]) for r in lz.rows("orders")] == [(1, "One"), (2, "Rome")]


def test_composite_keys_match_on_every_key_column(lz):
    schema = pa.schema([("region", pa.string()), ("id", pa.int32()), ("v", pa.string())])
    lz.metadata("sales.orders", keyColumns=["region", "id"])
    lz.parquet(
        "sales.orders",
        1,
        [{"region": "eu", "id": 1, "v": "a"}, {"region": "us", "id": 1, "v": "b"}],
        schema=schema,
    )
    lz.parquet(
        "sales.orders",
        2,
        lz.with_marker(
            [{"region": "us", "id": 1, "v": "B"}, {"region": "eu", "id": 2, "v": None}], [1, 2], schema
        ),
    )
    lz.mirror.run_once()
    assert lz.rows("sales.orders", key=("region", "id")) == [
        {"region": "eu", "id": 1, "v": "a"},
        {"region": "us", "id": 1, "v": "B"},
    ]


def test_contract_example_update_of_E0001(lz):
    lz.metadata("employees", keyColumns=["EmployeeID"])
    rows = [
        ("E0001", "Redmond", 0),
        ("E0002", "Redmond", 0),
        ("E0003", "Redmond", 0),
        ("E0001", "Bellevue", 1),
    ]
    lz.text(
        "employees",
        1,
        "EmployeeID,EmployeeLocation,__rowMarker__\n" + "\n".join(f"{a},{b},{m}" for a, b, m in rows),
    )
    lz.mirror.run_once()
    assert lz.rows("employees", key="EmployeeID") == [
        {"EmployeeID": "E0001", "EmployeeLocation": "Bellevue"},
        {"EmployeeID": "E0002", "EmployeeLocation": "Redmond"},
        {"EmployeeID": "E0003", "EmployeeLocation": "Redmond"},
    ]


def test_update_marker_without_key_columns_fails_the_table(lz):
    lz.metadata("log")
    lz.parquet("log", 1, [{"id": 1, "city": "Oslo", "qty": 1}], schema=SCHEMA)
    lz.parquet("log", 2, lz.with_marker([{"id": 1, "city": "Lima", "qty": 1}], [0], SCHEMA))
    lz.parquet("log", 3, lz.with_marker([{"id": 1, "city": "Rome", "qty": 1}], [1], SCHEMA))
    run = lz.mirror.run_once()
    assert run["log"].status == "Failed"
    assert run["log"].files_applied == ("00000000000000000001.parquet", "00000000000000000002.parquet")
    assert "declares no keyColumns" in run["log"].error
    assert run["log"].error.endswith("SequenceNumber: 3")
    # keyColumns "may be added later" (contract §2.1): then the same file applies.
    lz.metadata("log", keyColumns=["id"])
    run = lz.mirror.run_once()
    assert run["log"].status == "Replicating"
    assert [r["city"] for r in lz.rows("log")] == ["Rome"]


def test_null_key_in_a_change_row_fails_the_table(lz):
    _seed(lz)
    lz.parquet("orders", 2, lz.with_marker([{"id": None, "city": "X", "qty": 1}], [4], SCHEMA))
    run = lz.mirror.run_once()
    assert run["orders"].status == "Failed"
    assert "Key column 'id' is NULL" in run["orders"].error


def test_key_and_column_names_with_spaces_capitals_and_symbols(lz):
    schema = pa.schema([("Order ID", pa.int64()), ("$Company", pa.string()), ("a,b=c", pa.int32())])
    lz.metadata("orders", keyColumns=["Order ID", "$Company"])
    lz.parquet(
        "orders",
        1,
        [{"Order ID": 1, "$Company": "X", "a,b=c": 1}, {"Order ID": 2, "$Company": "X", "a,b=c": 2}],
        schema=schema,
    )
    change = [{"Order ID": 1, "$Company": "X", "a,b=c": 10}, {"Order ID": 2, "$Company": "X", "a,b=c": None}]
    lz.parquet("orders", 2, lz.with_marker(change, [1, 2], schema))
    run = lz.mirror.run_once()
    assert run["orders"].status == "Replicating", run["orders"].error
    assert lz.rows("orders", key="Order ID") == [{"Order ID": 1, "$Company": "X", "a,b=c": 10}]
