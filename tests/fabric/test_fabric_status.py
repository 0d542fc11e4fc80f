"""The Fabric mirroring-status client through sempy's FabricRestClient against a loopback API."""

from __future__ import annotations

import builtins
import datetime as dt
import json
import subprocess
import sys
import textwrap
import time
from email.utils import formatdate
from pathlib import Path
from types import SimpleNamespace

import pytest

from openmirror_nb._core.errors import ConfigError, MissingDependencyError
from openmirror_nb._core.fabric import (
    FabricRestError,
    MirroringStatus,
    fabric_rest_client,
    get_mirroring_status,
    get_tables_mirroring_status,
    rest,
)
from tests.dfs_server import StaticTokenCredential
from tests.fabric.fabric_api import ITEM_ID, TOKEN, WORKSPACE_ID, FabricApi

pytest.importorskip("sempy")


@pytest.fixture(scope="module")
def api():
    server = FabricApi()
    yield server
    server.close()


@pytest.fixture
def client(api):
    api.requests.clear()
    api.throttle = 0
    return fabric_rest_client(credential=StaticTokenCredential(TOKEN), base_url=api.url)


@pytest.fixture
def sleeps(monkeypatch):
    waited: list[float] = []
    monkeypatch.setattr(rest, "_sleep", waited.append)
    return waited


@pytest.fixture(autouse=True)
def no_prompt(monkeypatch):
    def refuse(*args):
        raise AssertionError("input() was called")

    monkeypatch.setattr(builtins, "input", refuse)


def test_database_status_by_ids(client, api):
    assert get_mirroring_status(WORKSPACE_ID, ITEM_ID, client=client) == MirroringStatus("Running")
    method, path, headers = api.requests[-1]
    assert (method, path) == (
        "POST",
        f"/v1/workspaces/{WORKSPACE_ID}/mirroredDatabases/{ITEM_ID}/getMirroringStatus",
    )
    assert headers["authorization"] == f"Bearer {TOKEN}"


def test_names_are_resolved_across_pages(client, api):
    assert get_mirroring_status("Sales", "orders_db.MirroredDatabase", client=client).status == "Running"
    paths = [p for _, p, _ in api.requests]
    assert paths.count("/v1/workspaces") == 2  # the workspace list came in two pages


def test_an_unknown_name_says_what_exists(client):
    with pytest.raises(ConfigError, match=r"No workspace named 'Nope'.*'Other', 'Sales'"):
        get_mirroring_status("Nope", ITEM_ID, client=client)


def test_tables_come_from_every_page_typed(client, api):
    tables = get_tables_mirroring_status(WORKSPACE_ID, ITEM_ID, client=client)
    assert [(t.source_schema_name, t.source_table_name, t.status) for t in tables] == [
        ("sales", "orders", "Replicating"),
        ("dbo", "empty", "Snapshotting"),
        ("dbo", "broken", "Failed"),
    ]
    orders, empty, broken = tables
    assert (orders.processed_rows, orders.processed_bytes) == (6, 1247)
    assert orders.last_sync == dt.datetime(2024, 10, 8, 5, 7, 11, 66336, tzinfo=dt.UTC)
    assert empty.processed_rows is None and empty.last_sync is None and empty.error is None
    assert broken.error is not None and broken.error.error_code == "InputValidationError"
    assert "SequenceNumber: 7" in broken.error.message
    assert broken.error.details[0].message == "No data rows available"
    calls = [p for _, p, _ in api.requests if p.endswith("getTablesMirroringStatus")]
    assert len(calls) == 2


def test_throttling_waits_retry_after_then_succeeds(client, api, sleeps):
    api.throttle = 1
    tables = get_tables_mirroring_status(WORKSPACE_ID, ITEM_ID, client=client)
    assert len(tables) == 3 and sleeps == [3.0]


def test_throttling_is_retried_a_bounded_number_of_times(client, api, sleeps):
    api.throttle = 100
    try:
        with pytest.raises(FabricRestError, match="429") as caught:
            get_mirroring_status(WORKSPACE_ID, ITEM_ID, client=client)
    finally:
        api.throttle = 0
    assert caught.value.status == 429 and caught.value.error_code == "RequestBlocked"
    assert len(sleeps) == 5 and len(api.requests) == 6


def test_retry_after_forms():
    def answer(value):
        return SimpleNamespace(headers={"Retry-After": value} if value is not None else {})

    assert rest._retry_after(answer("7"), 0) == 7.0
    assert rest._retry_after(answer("3600"), 0) == rest.MAX_RETRY_AFTER
    assert 0 < rest._retry_after(answer(formatdate(time.time() + 20, usegmt=True)), 0) <= 20
    assert rest._retry_after(answer(None), 2) == 4.0


def test_an_api_error_keeps_code_and_message(client):
    with pytest.raises(FabricRestError, match="ItemNotFound") as caught:
        get_mirroring_status(WORKSPACE_ID, "99999999-9999-9999-9999-999999999999", client=client)
    assert caught.value.status == 404


def test_a_refused_token_is_not_echoed(api):
    secret = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.bm90LXRoZS10b2tlbg"
    bad = fabric_rest_client(credential=StaticTokenCredential(secret), base_url=api.url)
    with pytest.raises(FabricRestError) as caught:
        get_mirroring_status(WORKSPACE_ID, ITEM_ID, client=bad)
    assert caught.value.status == 401 and secret not in str(caught.value)


def test_nothing_reaches_stdout_or_stderr(client, capfd):
    get_mirroring_status("Sales", "orders_db", client=client)
    get_tables_mirroring_status(WORKSPACE_ID, ITEM_ID, client=client)
    with pytest.raises(FabricRestError):
        get_mirroring_status(WORKSPACE_ID, "99999999-9999-9999-9999-999999999999", client=client)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_a_fresh_process_prints_nothing_and_never_prompts(api, tmp_path):
    script = textwrap.dedent(
        f"""
        import builtins, json, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        def refuse(*args):
            raise SystemExit("input() was called")
        builtins.input = refuse
        from tests.dfs_server import StaticTokenCredential
        from openmirror_nb._core.fabric import fabric_rest_client, get_mirroring_status, get_tables_mirroring_status
        client = fabric_rest_client(credential=StaticTokenCredential({TOKEN!r}), base_url={api.url!r})
        status = get_mirroring_status({WORKSPACE_ID!r}, "orders_db", client=client)
        tables = get_tables_mirroring_status("Sales", {ITEM_ID!r}, client=client)
        sys.stderr.write(json.dumps([status.status, len(tables)]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert json.loads(done.stderr.strip().splitlines()[-1]) == ["Running", 3]


def test_missing_sempy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sempy.fabric", None)
    with pytest.raises(MissingDependencyError, match=r"openmirror-nb\[fabric\]"):
        fabric_rest_client(credential=StaticTokenCredential(TOKEN))
