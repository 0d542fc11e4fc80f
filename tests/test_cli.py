from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmirror_nb.cli import main


@pytest.mark.spark
def test_cli_push_initial_and_changes(spark, tmp_path, capsys):
    src = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), src)
    db = tmp_path / "db"
    assert main(["push", str(db), "--table", "sales.orders", "--keys", "id", "--from", str(src)]) == 0
    assert "sales.orders: file 1; initial 3" in capsys.readouterr().out
    changes = tmp_path / "changes.parquet"
    pq.write_table(pa.table({"id": [2, 4], "v": [None, "d"], "op": [2, 0]}), changes)
    argv = [
        "push",
        str(db),
        "--table",
        "sales.orders",
        "--from",
        str(changes),
        "--mode",
        "changes",
        "--op-column",
        "op",
    ]
    assert main(argv) == 0
    assert "file 2; insert 1, delete 1" in capsys.readouterr().out
    meta = json.loads((db / "Files/LandingZone/sales.schema/orders/_metadata.json").read_text())
    assert meta["keyColumns"] == ["id"]


@pytest.mark.spark
def test_cli_reports_errors_in_one_line(spark, tmp_path, capsys):
    src = tmp_path / "dupes.parquet"
    pq.write_table(pa.table({"id": [1, 1], "v": ["a", "b"]}), src)
    assert main(["push", str(tmp_path / "db"), "--table", "t", "--keys", "id", "--from", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("openmirror: KeyColumnsError: ") and "\n" not in err


@pytest.mark.spark
def test_cli_demo_publishes_initial_load_and_change_batch(spark, tmp_path, capsys):
    assert main(["demo", str(tmp_path / "db"), "--rows", "2000"]) == 0
    out = capsys.readouterr().out
    assert "Initial load:  PushResult(demo.orders: file 1; initial 2,000" in out
    assert "Change batch:  PushResult(demo.orders: file 2; insert 50" in out
    folder = tmp_path / "db/Files/LandingZone/demo.schema/orders"
    second = pq.read_table(folder / "00000000000000000002.parquet")
    assert second.column_names[-1] == "__rowMarker__"
    assert set(second.column("__rowMarker__").to_pylist()) == {0, 2, 4}
    assert "Read back demo.orders: 2,030 rows" in out  # 2000 + 50 inserted - 20 deleted, mirrored
    # a second run pushes a new snapshot of the same table: only the difference is published
    assert main(["demo", str(tmp_path / "db"), "--rows", "2000"]) == 0
    again = capsys.readouterr().out
    assert "Snapshot diff: PushResult(demo.orders: file 3;" in again and "file 4;" in again
    assert "Read back demo.orders:" in again
