"""Behaviour 10: Delta output at reader 1 / writer 2, and Files/Monitoring in service format."""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
from deltalake import DeltaTable

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$")
NEVER = "0001-01-01T00:00:00"


def test_monitoring_files_use_the_service_field_names(lz):
    lz.metadata("abc.12345", keyColumns=["id"])
    lz.parquet("abc.12345", 1, [{"id": 1}])
    lz.mirror.run_once()
    replicator = lz.monitoring("replicator.json")
    assert set(replicator) == {"status", "errorCode", "errorMessage", "lastHeartbeatTime"}
    # one pass and no loop: nothing replicates after it, so it is not Running
    assert replicator["status"] == "Stopped" and TIME.match(replicator["lastHeartbeatTime"])
    (table,) = lz.monitoring()["tables"]
    assert set(table) == {
        "id", "status", "errorCode", "errorMessage", "normalizedTableName",
        "sourceTableName", "sourceSchemaName", "sourceObjectType", "metrics",
    }  # fmt: skip
    assert set(table["metrics"]) == {
        "processedRowCount",
        "processedByte",
        "lastSourceCommitTimeUtc",
        "lastSyncTimeUtc",
    }
    assert (table["normalizedTableName"], table["sourceSchemaName"], table["sourceTableName"]) == (
        "abc.12345",
        "abc",
        "12345",
    )
    assert table["sourceObjectType"] == "Table" and table["metrics"]["lastSourceCommitTimeUtc"] == NEVER


def test_table_statuses_come_from_the_service_enum(lz):
    (lz.lz / "empty").mkdir()
    lz.metadata("waiting", keyColumns=["id"])
    lz.metadata("live", keyColumns=["id"])
    lz.parquet("live", 1, [{"id": 1}])
    lz.metadata("broken", keyColumns=["id"])
    lz.publish("broken", "00000000000000000001.parquet", b"x")
    lz.mirror.run_once()
    statuses = {t["sourceTableName"]: t["status"] for t in lz.monitoring()["tables"]}
    assert statuses == {
        "empty": "Initialized",
        "waiting": "Snapshotting",
        "live": "Replicating",
        "broken": "Failed",
    }
    lz.mirror.run(interval=0, max_iterations=1)
    statuses = {t["sourceTableName"]: t["status"] for t in lz.monitoring()["tables"]}
    assert statuses == {"empty": "Stopped", "waiting": "Stopped", "live": "Stopped", "broken": "Failed"}
    assert lz.monitoring("replicator.json")["status"] == "Stopped"


def test_metrics_count_processed_rows_bytes_and_last_sync(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.mirror.run_once()
    assert lz.table_status("orders")["metrics"] == {
        "processedRowCount": 0, "processedByte": 0, "lastSourceCommitTimeUtc": NEVER, "lastSyncTimeUtc": NEVER,
    }  # fmt: skip
    sizes = [
        lz.parquet("orders", 1, [{"id": i} for i in range(5)]).stat().st_size,
        lz.parquet("orders", 2, lz.with_marker([{"id": 1}, {"id": 9}], [2, 4])).stat().st_size,
    ]
    lz.mirror.run_once()
    metrics = lz.table_status("orders")["metrics"]
    assert metrics["processedRowCount"] == 7 and metrics["processedByte"] == sum(sizes)
    assert TIME.match(metrics["lastSyncTimeUtc"])


def test_delta_tables_keep_protocol_reader_1_writer_2(lz):
    schema = pa.schema(
        [("id", pa.int64()), ("naive", pa.timestamp("us")), ("aware", pa.timestamp("ns", tz="UTC"))]
    )
    moment = dt.datetime(2024, 5, 6, 7, 8, 9)
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1, "naive": moment, "aware": moment}], schema=schema)
    lz.parquet("orders", 2, lz.with_marker([{"id": 1, "naive": moment, "aware": moment}], [4], schema))
    lz.mirror.run_once()
    table = DeltaTable(str(lz.table_dir("orders")))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert str(pa.schema(table.schema().to_arrow()).field("naive").type) == "timestamp[us, tz=UTC]"
    assert lz.rows("orders")[0]["naive"] == moment.replace(tzinfo=dt.UTC)


def test_failed_table_error_is_in_tables_json(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.publish("orders", "00000000000000000001.parquet", b"")
    lz.mirror.run_once()
    status = lz.table_status("orders")
    assert status["errorCode"] == "InputValidationError"
    assert status["errorMessage"].endswith("SequenceNumber: 1")
    assert "ArtifactId: " + status["id"] in status["errorMessage"]


def test_the_replicator_says_running_only_while_its_loop_runs(lz):
    lz.metadata("t", keyColumns=["id"])
    lz.parquet("t", 1, [{"id": 1}])
    seen = []
    lz.mirror.run(
        interval=0, max_iterations=2, on_pass=lambda run: seen.append(lz.monitoring("replicator.json"))
    )
    assert [doc["status"] for doc in seen] == ["Running", "Running"]
    assert lz.monitoring("replicator.json")["status"] == "Stopped"  # the loop ended

    lz.mirror.start(interval=0, on_pass=lambda run: lz.mirror.stop())
    lz.mirror.stop()
    assert lz.monitoring("replicator.json")["status"] == "Stopped"
    lz.parquet("t", 2, [{"id": 2}])
    lz.mirror.run_once()
    assert lz.monitoring("replicator.json")["status"] == "Stopped"
