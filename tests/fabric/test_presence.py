"""Whether the mirror still lists a table: the REST answer first (inside Fabric), the service's
``Files/Monitoring/tables.json`` otherwise or when REST fails; and the wait after a drop."""

from __future__ import annotations

import json

import pytest

from openmirror_nb._core.errors import FabricRestError, MirrorWaitTimeoutError
from openmirror_nb._core.fabric.presence import listing, wait_until_unlisted
from openmirror_nb._core.fabric.status import TableMirroringStatus
from openmirror_nb._core.model import TableRef
from openmirror_nb._core.storage.local import LocalStorage


def _files(tmp_path, tables: list[tuple[str, str]]) -> LocalStorage:
    files = LocalStorage(tmp_path / "Files")
    doc = {
        "tables": [{"sourceSchemaName": s, "sourceTableName": t, "status": "Replicating"} for s, t in tables]
    }
    files.write_bytes("Monitoring/tables.json", json.dumps(doc).encode(), overwrite=True)
    beat = {"status": "Running", "lastHeartbeatTime": "2026-11-23T09:00:00.0000000Z"}
    files.write_bytes("Monitoring/replicator.json", json.dumps(beat).encode(), overwrite=True)
    return files


def test_monitoring_files_name_root_tables_dbo_and_compare_without_case(tmp_path):
    files = _files(tmp_path, [("dbo", "Orders"), ("sales", "lines")])
    assert listing(files, TableRef("orders")).listed
    assert listing(files, TableRef("LINES", "Sales")).listed
    assert not listing(files, TableRef("lines")).listed  # dbo.lines is another table
    seen = listing(files, TableRef("gone"))
    assert seen.source == "Files/Monitoring/tables.json" and "replicator Running" in seen.replicator


def test_rest_answers_first_and_a_rest_failure_falls_back_to_the_files(tmp_path):
    files = _files(tmp_path, [("dbo", "orders")])
    entries = [
        TableMirroringStatus(source_schema_name=None, source_table_name="orders", status="Replicating")
    ]
    assert listing(files, TableRef("orders"), rest=lambda: entries).source == "getTablesMirroringStatus"
    assert not listing(files, TableRef("orders"), rest=lambda: []).listed  # REST says gone already

    def refused() -> list[TableMirroringStatus]:
        raise FabricRestError("HTTP 429 throttled", status=429)

    fallback = listing(files, TableRef("orders"), rest=refused)
    assert fallback.listed and fallback.source == "Files/Monitoring/tables.json"


def test_wait_ends_when_the_table_is_gone_or_says_what_to_check(tmp_path):
    files = _files(tmp_path, [("dbo", "orders")])
    calls = []

    def rest() -> list[TableMirroringStatus]:
        calls.append(1)  # listed twice, then gone
        return [] if len(calls) > 2 else [TableMirroringStatus(None, "orders", "Replicating")]

    assert wait_until_unlisted(files, TableRef("orders"), timeout=30, hint="x", rest=rest, poll=0.01) >= 0
    assert len(calls) == 3
    with pytest.raises(MirrorWaitTimeoutError) as info:
        wait_until_unlisted(files, TableRef("orders"), timeout=0.05, hint="is the mirror running?", poll=0.01)
    text = str(info.value)
    assert "orders" in text and "tables.json" in text and "is the mirror running?" in text
    assert "\n" not in text
