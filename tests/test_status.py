"""``db.status()`` and ``build_report`` on landing zones built by the real publish protocol and
replicated by the real local mirror: pending, processed, blocked and failed as the mirror sees them,
the Fabric inference from ``lastSyncTimeUtc``, the REST source, and what cannot be read."""

from __future__ import annotations

import io
import itertools
import json
import os
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError, LandingZoneError
from openmirror_nb._core.fabric.status import FabricErrorInfo, MirroringStatus, TableMirroringStatus
from openmirror_nb._core.landing_zone import TableFolder, scan
from openmirror_nb._core.status import COLUMNS, Sources, build_report
from openmirror_nb._core.status.reconcile import compare
from openmirror_nb._core.status.sources import database_sources
from openmirror_nb._core.storage.local import LocalStorage
from tests.test_table_scan import parquet, push, seq

GAP_MESSAGE = (
    "file 00000000000000000002.parquet is missing: file 3 waits for it; publish 2 or reseed the table."
)
_ids = itertools.count(1)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "db"


@pytest.fixture
def db(root):
    return om.connect(root)


@pytest.fixture
def mirror(root, db):
    return om.LocalMirror(root)


def publish(db, table: str, *parts: bytes) -> TableFolder:
    """Publish ``parts`` as the next files of ``table`` with the real protocol (no Spark)."""
    home = TableFolder.of(db.storage, table)
    push(home, list(parts), push_id=f"p{next(_ids)}")
    return home


def put(db, home: TableFolder, n: int, data: bytes) -> str:
    """Write data file ``n`` by hand (out of order, empty, another type...)."""
    path = f"{home.folder}/{seq(n)}"
    db.storage.write_bytes(path, data)
    return path


def backdate(root, home: TableFolder, n: int, moment: float) -> None:
    os.utime(root / "Files" / "LandingZone" / home.folder / seq(n), (moment, moment))


def report(db, *, now: datetime | None = None, table: str | None = None):
    return build_report(str(db.target), database_sources(db.target, db.storage), table=table, now=now)


def names(files) -> list[str]:
    return [f.name for f in files]


def int_v_parquet(*ids: int) -> bytes:
    """Rows like ``parquet()`` but with ``v`` an int64 instead of a string: a type change."""
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())}), sink)
    return sink.getvalue()


def monitoring(root, tables: list[dict], *, replicator: dict | None = None) -> LocalStorage:
    files = LocalStorage(root / "Files")
    beat = replicator or {"status": "Running", "lastHeartbeatTime": "2025-05-20T00:02:24Z"}
    files.write_bytes("Monitoring/replicator.json", json.dumps(beat).encode(), overwrite=True)
    files.write_bytes("Monitoring/tables.json", json.dumps({"tables": tables}).encode(), overwrite=True)
    return files


def listed(name: str, *, schema: str = "dbo", status: str = "Replicating", sync: float | None = None, **more):
    metrics = {"processedRowCount": 5}
    if sync is not None:  # the service's .NET form: seven fractional digits and a Z
        metrics["lastSyncTimeUtc"] = datetime.fromtimestamp(sync, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
    return {
        "sourceSchemaName": schema,
        "sourceTableName": name,
        "status": status,
        "errorCode": more.get("errorCode", ""),
        "errorMessage": more.get("errorMessage", ""),
        "metrics": metrics,
    }


def test_healthy_pending_blocked_and_failed_tables_of_a_local_database(db, root, mirror):
    ok = publish(db, "sales.ok", parquet(1, 2, 3))
    waits = publish(db, "sales.pending", parquet(1))
    gap = publish(db, "gap", parquet(1))
    bad = publish(db, "bad", parquet(1))
    mirror.run_once()
    put(db, gap, 3, parquet(3))  # file 2 never published
    put(db, bad, 2, b"")  # an empty file: the mirror fails on it
    assert mirror.run_once()["bad"].is_failed
    publish(db, "sales.pending", parquet(2), parquet(3))  # after the last pass
    t0 = time.time() - 1000
    backdate(root, waits, 2, t0)
    backdate(root, waits, 3, t0 + 10)
    now = datetime.fromtimestamp(t0 + 100, UTC)

    found = report(db, now=now)

    assert [t.table for t in found.tables] == ["bad", "gap", "sales.ok", "sales.pending"]
    healthy = found["sales.ok"]
    assert (healthy.health, healthy.status, healthy.pending) == ("ok", "Replicating", ())
    assert healthy.mirrored_rows == 3 == len(db.read_table("sales.ok", as_pandas=True))
    assert healthy.processed_files == 1 and healthy.lag_seconds == 0 and healthy.advice == ()
    assert healthy.last_sync is not None and healthy.folder == ok.folder

    pending = found["sales.pending"]
    assert pending.health == "pending" and pending.status == "Replicating"
    assert names(pending.pending) == [seq(2), seq(3)] and pending.processed_files == 1
    assert pending.lag_seconds == pytest.approx(100, abs=0.01)  # the oldest pending file's wait
    assert pending.mirrored_rows == 1 and pending.last_sequence == 3

    blocked = found["gap"]
    assert blocked.health == "blocked" and blocked.blocked_by == GAP_MESSAGE
    assert blocked.advice[0] == GAP_MESSAGE and names(blocked.pending) == [seq(3)]

    failed = found["bad"]
    assert (failed.health, failed.status, failed.failed_file) == ("failed", "Failed", seq(2))
    assert failed.advice[0].startswith(f"the mirror failed: file {seq(2)} is empty (0 bytes)")
    assert "SequenceNumber: 2" in failed.error and names(failed.pending) == [seq(2)]

    assert found.health == "failed"
    assert [t.table for t in found.needs_attention] == ["bad", "gap"]
    assert found["SALES.OK"] is healthy  # the service's names are case-insensitive
    # run_once has ended: the replicator is not running
    assert found.replicator.status == "Stopped" and found.notes == () and found.foreign == ()
    # db.status() is the same report, taken now
    assert [(t.table, t.health) for t in db.status().tables] == [(t.table, t.health) for t in found.tables]


def test_a_mirror_pass_brings_pending_to_zero_even_with_one_file(db, mirror):
    home = publish(db, "orders", parquet(1, 2))
    before = db.status()["orders"]
    assert (before.status, before.health, names(before.pending)) == ("NotListed", "pending", [seq(1)])
    assert before.notes == ("The mirror does not list this table yet.",) and before.last_sync is None

    mirror.run_once()
    after = db.status()["orders"]
    # a listing alone cannot prove the newest file processed (the service keeps it in place) ...
    assert names(scan(db.storage, "orders").pending) == [seq(1)]
    # ... the local mirror's progress does
    assert (after.status, after.health, after.pending) == ("Replicating", "ok", ())
    assert after.processed_files == 1 and after.mirrored_rows == 2 and after.processed_rows == 2

    publish(db, "orders", parquet(3), parquet(4))
    assert names(db.status()["orders"].pending) == [seq(2), seq(3)]
    mirror.run_once()
    done = db.status()["orders"]
    assert (done.health, done.pending, done.processed_files, done.mirrored_rows) == ("ok", (), 3, 4)
    assert home.folder == done.folder


def test_without_the_mirrors_progress_files_before_the_last_sync_count_processed(db, root):
    synced = time.time() - 500
    first = publish(db, "t", parquet(1), parquet(2), parquet(3))
    backdate(root, first, 1, synced - 60)
    backdate(root, first, 2, synced - 30)
    backdate(root, first, 3, synced + 30)  # written after the mirror's last sync
    holed = publish(db, "holed", parquet(1))
    put(db, holed, 3, parquet(3))
    put(db, holed, 4, parquet(4))
    for n in (1, 3, 4):
        backdate(root, holed, n, synced - 60)  # all before the sync, but 3 and 4 wait for 2
    late = TableFolder.of(db.storage, "late")
    db.storage.write_bytes(late.metadata_path, b'{"keyColumns": ["id"]}')
    put(db, late, 2, parquet(2))  # file 1 never arrived: nothing after it is proven
    backdate(root, late, 2, synced - 60)
    files = monitoring(root, [listed(n, sync=synced) for n in ("t", "holed", "late")])
    sources = Sources(landing_zone=db.storage, files=files, applied=None)

    found = build_report("fabric", sources, now=datetime.fromtimestamp(synced + 100, UTC))

    t = found["t"]
    assert (t.health, names(t.pending), t.processed_files) == ("pending", [seq(3)], 2)
    assert t.lag_seconds == pytest.approx(70, abs=0.01) and t.processed_rows == 5
    assert t.last_sync == datetime.fromtimestamp(synced, UTC)
    holed_status = found["holed"]
    assert names(holed_status.pending) == [seq(3), seq(4)] and holed_status.processed_files == 1
    assert holed_status.health == "blocked" and holed_status.blocked_by == GAP_MESSAGE.replace(
        "file 3 waits", "files 3-4 wait"
    )
    late_status = found["late"]
    assert names(late_status.pending) == [seq(2)] and late_status.processed_files == 0
    assert late_status.health == "blocked" and seq(1) in late_status.blocked_by
    assert found.replicator.source == "Files/Monitoring/replicator.json"


def test_a_failed_table_pends_from_the_file_its_error_names(db, root):
    home = publish(db, "t", parquet(1), parquet(2), parquet(3))
    error = "Exception reading the data file. ArtifactId: x, SequenceNumber: 2"
    files = monitoring(
        root,
        [
            listed(
                "t", status="Failed", sync=time.time(), errorCode="InputValidationError", errorMessage=error
            )
        ],
    )
    found = build_report("fabric", Sources(landing_zone=db.storage, files=files))["t"]
    assert (found.health, found.failed_file, found.error_code) == ("failed", seq(2), "InputValidationError")
    assert names(found.pending) == [seq(2), seq(3)] and found.processed_files == 1
    assert found.advice[0] == f"the mirror failed on file {seq(2)}: {error}"
    assert home.folder == found.folder


@pytest.mark.spark
def test_a_column_type_change_fails_the_table_and_only_a_reseed_fixes_it(spark, db, mirror):
    df = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, v string")
    result = db.push(df, table="typed", keys=["id"])
    assert mirror.run_once()["typed"].status == "Replicating"
    nxt = max(result.sequence_numbers) + 1
    put(db, TableFolder.of(db.storage, "typed"), nxt, int_v_parquet(4))
    run = mirror.run_once()["typed"]
    assert run.status == "Failed" and run.error_code == "SchemaChangeNotSupported"

    found = db.status("typed")
    assert [t.table for t in found.tables] == ["typed"]
    typed = found["typed"]
    assert (typed.health, typed.error_code, typed.failed_file) == (
        "failed",
        "SchemaChangeNotSupported",
        seq(nxt),
    )
    assert typed.advice[0].startswith(f"the mirror failed on file {seq(nxt)}: ")
    assert "only a reseed fixes it" in typed.advice[1] and "db.drop('typed', wait=True)" in typed.advice[1]
    assert typed.mirrored_rows == 3 and names(typed.pending) == [seq(nxt)]
    assert found.needs_attention == (typed,)


def test_an_unknown_table_names_the_tables_and_changes_nothing(db, root, mirror, lz_hash):
    publish(db, "sales.orders", parquet(1))
    publish(db, "customers", parquet(1))
    mirror.run_once()
    before = lz_hash(root)
    with pytest.raises(LandingZoneError) as unknown:
        db.status("no.such")
    text = str(unknown.value)
    assert "'no.such'" in text and "Tables: customers, sales.orders." in text
    with pytest.raises(LandingZoneError, match=r"'sales\.order'.*Did you mean 'sales\.orders'\?"):
        db.status("sales.order")
    assert lz_hash(root) == before
    one = db.status("Sales.Orders")
    assert [t.table for t in one.tables] == ["sales.orders"] and one.foreign == ()


def test_foreign_items_are_listed_and_do_not_fail(db, root, mirror):
    publish(db, "orders", parquet(1))
    db.storage.write_bytes("readme.txt", b"not a table")
    (root / "Files" / "LandingZone" / "empty").mkdir()
    mirror.run_once()
    found = db.status()
    assert [t.table for t in found.tables] == ["orders"]
    assert len(found.foreign) == 2
    assert found.foreign[0].startswith("readme.txt: a file at the landing-zone root")
    assert found.foreign[1].startswith("empty: a folder with no _metadata.json")
    assert found.health == "ok" and found.needs_attention == ()
    assert "Not tables:" in str(found) and "readme.txt" in str(found)


def test_unreadable_monitoring_files_become_a_note(db, root, mirror):
    publish(db, "orders", parquet(1))
    mirror.run_once()
    (root / "Files" / "Monitoring" / "tables.json").write_bytes(b"\xff\xfe\x00garbage{")
    found = db.status()
    assert [t.table for t in found.tables] == ["orders"]
    assert found["orders"].status == "NotListed" and found["orders"].pending == ()  # the mirror's progress
    assert len(found.notes) == 1 and found.notes[0].startswith("Files/Monitoring could not be read")
    assert "tables.json" in found.notes[0] and found.replicator.status == "Unknown"
    assert found.notes[0] in str(found)


def test_a_monitoring_file_the_os_cannot_read_becomes_a_note(db, root, mirror):
    publish(db, "orders", parquet(1))
    mirror.run_once()
    tables = root / "Files" / "Monitoring" / "tables.json"
    tables.unlink()
    tables.mkdir()  # read_bytes raises an OSError that is not FileNotFoundError
    found = db.status()
    assert [t.table for t in found.tables] == ["orders"] and found["orders"].pending == ()
    assert len(found.notes) == 1 and found.notes[0].startswith("Files/Monitoring could not be read")


def test_an_error_text_with_markup_is_escaped_in_html(db, root):
    publish(db, "t", parquet(1))
    hostile = "<script>alert('x')</script> SequenceNumber: 1"
    monitoring(root, [listed("t", status="Failed", errorCode="InputValidationError", errorMessage=hostile)])
    found = db.status()
    assert found["t"].health == "failed"
    page = found._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert hostile in str(found)


def rest_sources(db, *, database, tables) -> Sources:
    return replace(database_sources(db.target, db.storage), rest_database=database, rest_tables=tables)


def test_the_rest_status_wins_over_the_monitoring_files(db, mirror):
    publish(db, "t", parquet(1), parquet(2))
    publish(db, "sales.orders", parquet(1))
    mirror.run_once()
    assert db.status()["t"].status == "Replicating"
    error = FabricErrorInfo("InputValidationError", "Exception reading the data file. SequenceNumber: 2")
    rest = [
        TableMirroringStatus(None, "t", "Failed", processed_rows=42, error=error),
        TableMirroringStatus("sales", "orders", "Reseeding", processed_rows=7),
    ]
    sources = rest_sources(db, database=lambda: MirroringStatus("Running"), tables=lambda: rest)
    found = build_report("fabric", sources)
    t = found["t"]
    assert (t.status, t.health, t.error_code, t.processed_rows) == (
        "Failed",
        "failed",
        "InputValidationError",
        42,
    )
    assert t.error == error.message and t.failed_file == seq(2)
    assert found["sales.orders"].status == "Reseeding" and found["sales.orders"].processed_rows == 7
    assert found.replicator.source == "getMirroringStatus" and found.notes == ()


def test_a_rest_failure_is_a_note_without_the_token_and_falls_back_to_the_files(db, mirror):
    publish(db, "t", parquet(1))
    mirror.run_once()
    token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL2FwaSJ9.c2lnbmF0dXJl"

    def refused() -> MirroringStatus:
        raise RuntimeError(
            f"FabricHTTPException: 401 Unauthorized\nheaders: {{'Authorization': 'Bearer {token}'}}"
        )

    found = build_report("fabric", rest_sources(db, database=refused, tables=list))
    assert found["t"].status == "Replicating" and found["t"].health == "ok"
    assert found.replicator.source == "Files/Monitoring/replicator.json"
    assert len(found.notes) == 1 and found.notes[0].startswith("The Fabric REST status could not be read")
    assert "401 Unauthorized" in found.notes[0]
    for shown in (found.notes[0], str(found), found._repr_html_(), json.dumps(found.to_dict())):
        assert token not in shown and token[:20] not in shown


def test_database_sources_in_a_fabric_runtime_asks_the_rest_api(db, root, monkeypatch):
    pytest.importorskip("sempy")
    from openmirror_nb._core.fabric import status as fabric_status
    from openmirror_nb._core.fabric.rest import fabric_rest_client
    from openmirror_nb._core.target import OneLakeTarget
    from tests.dfs_server import StaticTokenCredential
    from tests.fabric.fabric_api import ITEM_ID, TOKEN, WORKSPACE_ID, FabricApi

    publish(db, "sales.orders", parquet(1), parquet(2))
    broken = publish(db, "broken", *(parquet(n) for n in range(1, 9)))
    api = FabricApi()
    try:
        monkeypatch.setenv("FABRIC_RUNTIME_VERSION", "1.3")
        monkeypatch.setattr(
            fabric_status,
            "fabric_rest_client",
            lambda credential=None: fabric_rest_client(credential=credential, base_url=api.url),
        )
        target = OneLakeTarget(WORKSPACE_ID, ITEM_ID)
        sources = database_sources(target, db.storage, credential=StaticTokenCredential(TOKEN))
        assert sources.rest_database is not None and sources.mirrored_rows is None
        # the landing zone and Files are local stand-ins; the REST status comes over HTTP
        found = build_report(str(target), replace(sources, files=LocalStorage(root / "Files")))
        paths = {p for _, p, _ in api.requests}
    finally:
        api.close()
    base = f"/v1/workspaces/{WORKSPACE_ID}/mirroredDatabases/{ITEM_ID}"
    assert {f"{base}/getMirroringStatus", f"{base}/getTablesMirroringStatus"} <= paths
    assert found.replicator.status == "Running" and found.replicator.source == "getMirroringStatus"
    orders = found["sales.orders"]
    assert (orders.status, orders.processed_rows, orders.health) == ("Replicating", 6, "pending")
    failed = found["broken"]
    assert (failed.health, failed.error_code, failed.failed_file) == (
        "failed",
        "InputValidationError",
        seq(7),
    )
    assert names(failed.pending) == [seq(7), seq(8)] and failed.folder == broken.folder
    gone = found["empty"]  # listed by the service, no folder: dropped, not caught up yet
    assert gone.folder == "" and gone.status == "Snapshotting" and "folder is gone" in gone.notes[0]
    assert found.notes == ()


def test_to_pandas_and_to_dict_of_a_real_report(db, mirror):
    publish(db, "a", parquet(1, 2))
    publish(db, "b", parquet(1), b"")
    mirror.run_once()
    found = db.status()
    frame = found.to_pandas()
    assert tuple(frame.columns) == COLUMNS and list(frame["table"]) == ["a", "b"]
    assert list(frame["health"]) == ["ok", "failed"] and list(frame["pending_files"]) == [0, 1]
    assert frame["mirrored_rows"].tolist() == [2, 1] and frame["failed_file"].tolist() == [None, seq(2)]
    doc = json.loads(json.dumps(found.to_dict()))
    assert [t["table"] for t in doc["tables"]] == ["a", "b"] and doc["health"] == "failed"
    assert doc["tables"][1]["pending"] == [seq(2)] and doc["tables"][1]["advice"] == list(found["b"].advice)
    assert datetime.fromisoformat(doc["tables"][0]["last_sync"]) == found["a"].last_sync


def test_source_without_one_table_to_reconcile_is_refused(db):
    import pandas as pd

    publish(db, "t", parquet(1))
    with pytest.raises(ConfigError, match="pass table= and reconcile=True"):
        db.status(source=pd.DataFrame({"id": [1]}))
    with pytest.raises(ConfigError, match="pass table= and reconcile=True"):
        db.status("t", source=pd.DataFrame({"id": [1]}))


@pytest.mark.spark
def test_reconcile_counts_the_mirrored_table_the_key_state_and_the_source(spark, db, mirror):
    rows = [(i, f"row {i}") for i in range(1, 11)]
    df = spark.createDataFrame(rows, "id long, v string")
    db.push(df, table="sales.orders", keys=["id"])
    mirror.run_once()
    same = db.reconcile("sales.orders", df)
    assert (same.verdict, same.mirrored_rows, same.state_rows, same.source_rows) == ("match", 10, 10, 10)

    grown = db.reconcile("sales.orders", spark.createDataFrame([*rows, (11, "new")], "id long, v string"))
    assert grown.verdict == "mismatch" and grown.source_rows == 11
    assert "the source 11" in grown.message and "the source has changed since the last push" in grown.message

    fewer = spark.createDataFrame(rows[:7], "id long, v string")
    db.push(fewer, table="sales.orders")  # the mirror does not run
    behind = db.reconcile("sales.orders", fewer)
    assert (behind.verdict, behind.mirrored_rows, behind.state_rows, behind.source_rows) == (
        "mismatch",
        10,
        7,
        7,
    )
    assert "the mirrored table 10" in behind.message and "still pending" in behind.message

    table = db.status("sales.orders", reconcile=True)["sales.orders"]
    assert table.reconciliation is not None and table.reconciliation.verdict == "mismatch"
    assert (table.mirrored_rows, table.state_rows) == (10, 7)
    assert "rows: the mirrored table 10" in str(db.status("sales.orders", reconcile=True))


def test_an_empty_folder_is_no_table_to_ask_for(db, root, mirror):
    publish(db, "orders", parquet(1))
    (root / "Files" / "LandingZone" / "empty").mkdir()
    mirror.run_once()  # the local mirror lists the empty folder too
    for ask in (db.status, db.reconcile):
        with pytest.raises(LandingZoneError) as caught:
            ask("empty")
        assert "'empty'" in str(caught.value) and "Tables: orders." in str(caught.value)
    assert [t.table for t in db.status().tables] == ["orders"]


@pytest.mark.parametrize(
    ("counts", "verdict", "says"),
    [
        ((5, 5, 5), "match", "the mirrored table and the key state and the source agree: 5 rows."),
        ((5, 5, None), "match", "the mirrored table and the key state agree: 5 rows."),
        ((5, None, None), "incomplete", "only counted the mirrored table 5 (why)."),
        ((5, 5, 6), "mismatch", "the source has changed since the last push"),
        ((5, 4, 5), "mismatch", "the key state differs from the mirror and the source"),
        ((4, 5, 5), "mismatch", "the mirrored table differs from what was pushed"),
        ((1, 2, 3), "mismatch", "they all differ"),
        ((None, 5, 6), "mismatch", "the source has changed since the last push"),
        ((4, 5, None), "mismatch", "the mirrored table differs from what was pushed"),
    ],
)
def test_compare_names_the_count_that_differs(counts, verdict, says):
    mirrored, state, source = counts
    found = compare("t", mirrored=mirrored, state=state, source=source, notes=("why",))
    assert found.verdict == verdict and says in found.message
    assert (found.mirrored_rows, found.state_rows, found.source_rows) == counts


def test_compare_blames_pending_files_for_a_mirrored_table_behind():
    found = compare("t", mirrored=10, state=7, source=7, pending_files=2)
    assert found.message == (
        "the mirrored table 10, the key state 7, the source 7: "
        "2 file(s) are still pending: the mirror has not applied them yet."
    )
    assert "pending" not in compare("t", mirrored=10, state=10, source=7, pending_files=2).message


def test_onelake_reconcile_says_why_the_mirrored_table_cannot_be_counted():
    """OneLake: Tables/<schema>/<table> is read with the connection's credential; a credential
    that yields no token is named in the reconciliation, never raised, and never leaks a secret."""
    from openmirror_nb._core.status.reconcile import reconciled
    from openmirror_nb._core.status.records import ReplicatorStatus, TableStatus
    from openmirror_nb._core.status.report import StatusReport
    from openmirror_nb._core.status.sources import onelake_row_counter, onelake_table_uri
    from openmirror_nb._core.target import OneLakeTarget

    target = OneLakeTarget("ws", "sales_db.MirroredDatabase")
    assert (
        onelake_table_uri(target, om._core.model.TableRef.parse("sales.orders"))
        == "abfss://ws@onelake.dfs.fabric.microsoft.com/sales_db.MirroredDatabase/Tables/sales/orders"
    )

    class NoToken:
        def get_token(self, *scopes):
            raise RuntimeError("AADSTS700016 for Bearer eyJhbGciOiJIUzI1NiJ9.secret.sig")

    table = TableStatus("sales.orders", "sales.schema/orders", "ok", "Replicating")
    report = StatusReport(str(target), datetime.now(UTC), ReplicatorStatus("Running"), (table,))
    done = reconciled(
        report, mirrored=onelake_row_counter(target, NoToken()), state=lambda t: 10, source_rows=10
    )
    recon = done.tables[0].reconciliation
    assert recon.verdict == "match" and recon.mirrored_rows is None
    assert any("no storage token" in n and "pass credential= to connect()" in n for n in recon.notes)
    assert "eyJ" not in repr(recon) and "eyJ" not in json.dumps(done.to_dict())


def test_a_running_replicator_whose_heartbeat_stopped_long_ago_is_not_running(db, root):
    from openmirror_nb._core.status.mirror_view import STALE_AFTER

    publish(db, "t", parquet(1))
    beat = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    files = monitoring(
        root,
        [listed("t")],
        replicator={"status": "Running", "lastHeartbeatTime": "2026-11-23T09:00:00.0000000Z"},
    )
    sources = Sources(landing_zone=db.storage, files=files, applied=None)

    fresh = build_report("local", sources, now=beat + timedelta(seconds=30))
    assert fresh.replicator.status == "Running"
    crashed = build_report("local", sources, now=beat + timedelta(seconds=STALE_AFTER + 23 * 60))
    assert crashed.replicator.status == "Stale"
    assert crashed.replicator.summary.startswith(
        "replicator not running (stale: last said Running), heartbeat "
    )
    assert "Running," not in str(crashed).splitlines()[0]
