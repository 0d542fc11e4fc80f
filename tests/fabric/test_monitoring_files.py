"""``Files/Monitoring/replicator.json`` and ``tables.json`` read from local and OneLake storage."""

from __future__ import annotations

import json
import uuid

import pytest

from openmirror_nb._core.errors import StorageError
from openmirror_nb._core.fabric import read_monitoring_files
from openmirror_nb._core.storage.local import LocalStorage
from tests.dfs_server import StaticTokenCredential, start_server

REPLICATOR = {
    "status": "Running",
    "errorCode": "",
    "errorMessage": "",
    "lastHeartbeatTime": "2025-05-20T00:02:24Z",
}
TABLES = {
    "tables": [
        {
            "id": "db54958b-cdec-43a5-9dd6-d9b76287aea1",
            "status": "Replicating",
            "errorCode": "",
            "errorMessage": "",
            "normalizedTableName": "abc.12345",
            "sourceTableName": "12345",
            "sourceSchemaName": "abc",
            "sourceObjectType": "Table",
            "metrics": {
                "processedRowCount": 5,
                "processedByte": 60,
                "lastSourceCommitTimeUtc": "0001-01-01T00:00:00",
                "lastSyncTimeUtc": "2025-05-20T00:02:24.2389983Z",
            },
        }
    ]
}


@pytest.fixture
def files(tmp_path):
    return LocalStorage(tmp_path / "db" / "Files")


def test_reads_both_files(files):
    files.write_bytes("Monitoring/replicator.json", json.dumps(REPLICATOR).encode())
    files.write_bytes("Monitoring/tables.json", json.dumps(TABLES).encode("utf-8-sig"))  # with a BOM
    replicator, tables = read_monitoring_files(files)
    assert replicator["status"] == "Running"
    assert tables[0]["sourceTableName"] == "12345" and tables[0]["metrics"]["processedRowCount"] == 5


def test_absent_files_mean_not_started(files):
    assert read_monitoring_files(files) == ({}, [])


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("replicator.json", b"{not json", "not valid JSON"),
        ("replicator.json", b"[1, 2]", "not a JSON object"),
        ("tables.json", b'{"tables": {"a": 1}}', "no list of table objects"),
    ],
)
def test_malformed_files_are_reported(files, name, content, message):
    files.write_bytes(f"Monitoring/{name}", content)
    with pytest.raises(StorageError, match=message):
        read_monitoring_files(files)


def test_reads_from_onelake_files(tmp_path, monkeypatch):
    from openmirror_nb._core.storage.adls import AdlsStorage

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server, cert = start_server(tmp_path)
    try:
        fs = f"ws-{uuid.uuid4().hex[:8]}"
        server.create_filesystem(fs)
        files = AdlsStorage(
            account_url=server.account_url,
            file_system=fs,
            base_path="orders.MirroredDatabase/Files",
            credential=StaticTokenCredential(),
            connection_verify=str(cert),
        )
        assert read_monitoring_files(files) == ({}, [])
        files.write_bytes("Monitoring/replicator.json", json.dumps(REPLICATOR).encode())
        files.write_bytes("Monitoring/tables.json", json.dumps(TABLES).encode())
        replicator, tables = read_monitoring_files(files)
        assert replicator == REPLICATOR and tables == TABLES["tables"]
    finally:
        server.close()
