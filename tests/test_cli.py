from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmirror_nb._core.cli import main
from tests.test_cli_freshness import check_freshness_printed


@pytest.mark.spark
def test_cli_push_initial_and_changes(spark, tmp_path, capsys):
    src = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), src)
    db = tmp_path / "db"
    assert main(["push", str(src), "--table", "sales.orders", "--keys", "id", "--db", str(db)]) == 0
    assert "sales.orders: file 1; initial 3" in capsys.readouterr().out
    changes = tmp_path / "changes.parquet"
    pq.write_table(pa.table({"id": [2, 4], "v": [None, "d"], "op": [2, 0]}), changes)
    argv = [
        "push",
        str(changes),
        "--table",
        "sales.orders",
        "--db",
        str(db),
        "--mode",
        "changes",
        "--op-column",
        "op",
    ]
    assert main(argv) == 0
    assert "file 2; insert 1, delete 1" in capsys.readouterr().out
    meta = json.loads((db / "Files/LandingZone/sales.schema/orders/_metadata.json").read_text())
    assert meta["keyColumns"] == ["id"]
    check_freshness_printed(db, capsys)  # tests/test_cli_freshness.py: on this push, no other


@pytest.mark.spark
def test_cli_reports_errors_in_one_line(spark, tmp_path, capsys):
    src = tmp_path / "dupes.parquet"
    pq.write_table(pa.table({"id": [1, 1], "v": ["a", "b"]}), src)
    assert main(["push", str(src), "--table", "t", "--keys", "id", "--db", str(tmp_path / "db")]) == 2
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
    assert "Row counts:    match: the mirrored table and the key state agree: 2,030 rows." in out
    assert "ok       demo.orders  Replicating" in out  # the status report closes the demo
    # a second run pushes a new snapshot of the same table: only the difference is published
    assert main(["demo", str(tmp_path / "db"), "--rows", "2000"]) == 0
    again = capsys.readouterr().out
    assert "Snapshot diff: PushResult(demo.orders: file 3;" in again and "file 4;" in again
    assert "Read back demo.orders:" in again


def _database(root, *, broken: bool = False):
    """A local mirrored database, mirrored once: ``sales.orders`` healthy, and with ``broken`` a
    table waiting on a gap and one the mirror failed on an empty file."""
    import openmirror_nb as om
    from openmirror_nb._core.landing_zone import TableFolder
    from tests.test_table_scan import parquet, push, seq

    db = om.connect(root)
    push(TableFolder.of(db.storage, "sales.orders"), [parquet(1, 2)], push_id="p1")
    if broken:
        gap = TableFolder.of(db.storage, "gap")
        push(gap, [parquet(1)], push_id="p2")
        db.storage.write_bytes(f"{gap.folder}/{seq(3)}", parquet(3))
        push(TableFolder.of(db.storage, "bad"), [parquet(1), b""], push_id="p3")
    om.LocalMirror(root).run_once()
    return root


def test_cli_status_of_a_healthy_database_exits_0(tmp_path, capsys, monkeypatch):
    root = _database(tmp_path / "openmirror-db")
    assert main(["status", "--db", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Mirrored database {root} (replicator Stopped")  # run_once has ended
    assert "  ok       sales.orders  Replicating  age unknown  1 processed, 2 rows" in out  # no source time
    monkeypatch.chdir(tmp_path)  # no PATH: ./openmirror-db
    assert main(["status"]) == 0 and "sales.orders" in capsys.readouterr().out


def test_cli_status_exits_1_and_names_a_failed_or_blocked_table_and_why(tmp_path, capsys):
    root = _database(tmp_path / "db", broken=True)
    assert main(["status", "--db", str(root)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    bad = next(line for line in lines if line.startswith("  failed   bad "))
    assert "file 00000000000000000002.parquet is empty (0 bytes)" in bad
    gap = next(line for line in lines if line.startswith("  blocked  gap "))
    assert gap.endswith(
        "file 00000000000000000002.parquet is missing: file 3 waits for it; publish 2 or reseed the table."
    )
    # one healthy table asked for alone: nothing to alert on
    assert main(["status", "sales.orders", "--db", str(root)]) == 0
    assert "gap" not in capsys.readouterr().out


def test_cli_status_json(tmp_path, capsys):
    root = _database(tmp_path / "db", broken=True)
    assert main(["status", "--db", str(root), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["health"] == "failed" and doc["target"] == str(root)
    assert [(t["table"], t["health"]) for t in doc["tables"]] == [
        ("bad", "failed"),
        ("gap", "blocked"),
        ("sales.orders", "ok"),
    ]
    assert doc["tables"][0]["failed_file"] == "00000000000000000002.parquet"
    assert doc["tables"][1]["pending"] == ["00000000000000000003.parquet"]


def test_cli_status_of_an_unknown_table_exits_2_with_the_error_on_stderr(tmp_path, capsys):
    root = _database(tmp_path / "db")
    assert main(["status", "no.such", "--db", str(root)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("openmirror: LandingZoneError: Table 'no.such' is not in the landing zone")
    assert "sales.orders" in captured.err and captured.err.count("\n") == 1


def test_cli_status_of_a_missing_database_exits_2_and_creates_nothing(tmp_path, capsys):
    assert main(["status", "--db", str(tmp_path / "typo")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"openmirror: ConfigError: No mirrored database at {tmp_path / 'typo'}")
    assert not (tmp_path / "typo").exists()


def test_cli_old_forms_still_work_and_say_what_to_write_instead(tmp_path, capsys):
    """The forms the README documented before ``--db`` (database first) are aliases that warn."""
    root = _database(tmp_path / "db", broken=True)
    assert main(["status", str(root)]) == 1  # the gap and the failed table still count
    captured = capsys.readouterr()
    assert "sales.orders" in captured.out
    assert (
        captured.err
        == f"openmirror: the database before the verb's arguments is the old form; write: openmirror status ... --db {root}\n"
    )
    assert main(["status", str(root), "--table", "sales.orders"]) == 0
    captured = capsys.readouterr()
    assert "gap" not in captured.out and f"openmirror status sales.orders ... --db {root}" in captured.err
    assert main(["drop", str(root), "--table", "gap"]) == 0
    captured = capsys.readouterr()
    assert f"write: openmirror drop gap ... --db {root}" in captured.err
    assert not (root / "Files/LandingZone/gap").exists()
    assert main(["mirror", str(root), "--once"]) == 1  # sales.failed is still failed
    assert f"write: openmirror mirror ... --db {root}" in capsys.readouterr().err


def test_cli_and_magic_share_one_grammar():
    """Where both skins have a verb, its arguments and choices are the same (the CLI adds --db)."""
    from openmirror_nb._core.grammar import VERBS, add_verbs
    from openmirror_nb._core.magics.parser import build_parser

    def options(parser):
        sub = next(a for a in parser._actions if a.dest == "verb")
        return {
            name: {(a.dest, tuple(a.choices or ())) for a in verb._actions if a.help != "==SUPPRESS=="}
            for name, verb in sub.choices.items()
        }

    import argparse

    cli, magic = options(add_verbs(argparse.ArgumentParser(), "cli")), options(build_parser())
    shared = set(cli) & set(magic)
    assert shared == {"push", "status", "describe", "drop", "tables", "mirror", "run", "kafka"}
    assert {v.name for v in VERBS} == set(cli) | set(magic)
    for name in shared:
        only_cli = {dest for dest, _ in cli[name] - magic[name]}
        only_magic = {dest for dest, _ in magic[name] - cli[name]}
        assert only_cli <= {"db", "json"}, (name, only_cli)
        assert only_magic <= {"quiet", "start", "stop"}, (name, only_magic)
    assert ("convention", ("rowmarker", "sys_op", "cdf", "debezium")) in magic["push"] & cli["push"]


def test_cli_on_onelake_without_a_credential_exits_2_with_one_line(capsys, no_credentials, monkeypatch):
    """No ``az login``, no service principal, outside Fabric: one run of the credential chain, no
    connection attempted, and the CredentialError's one line on stderr with the error exit code."""
    import socket

    from azure.identity import DefaultAzureCredential

    runs, connects = [], []
    real = DefaultAzureCredential.get_token
    monkeypatch.setattr(
        DefaultAzureCredential, "get_token", lambda self, *a, **k: runs.append(1) or real(self, *a, **k)
    )

    def refuse(sock, address):
        connects.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    url = "https://onelake.dfs.fabric.microsoft.com/ws/sales.MirroredDatabase/Files/LandingZone"
    assert main(["status", "--db", url]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(
        "openmirror: CredentialError: DefaultAzureCredential obtained no token for OneLake: run `az login`, "
        "set a service principal in AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET, "
        "or pass credential= to connect()."
    )
    assert len(runs) == 1 and connects == []


def test_cli_kafka_parses_its_repeated_table_flags_into_mirror_kafka_keywords(monkeypatch):
    """``--map``, ``--schema``, ``--keys`` and ``--option`` become the API's dicts; ``--op-column``
    a FeedOptions; no broker is needed to see the call."""
    import openmirror_nb as om
    from openmirror_nb._core.cli import _parser, start_kafka

    calls = []

    class Db:
        def mirror_kafka(self, source, **kwargs):
            calls.append((source, kwargs))

    flags = "--bootstrap h:9092 --topic orders --map orders=sales.orders --keys sales.orders=id,region"
    flags += " --option kafka.security.protocol=SSL --checkpoint ck --op-column op --max-offsets 10"
    args = _parser().parse_args(["kafka", *flags.split(), "--schema", "sales.orders=id long, op int"])
    start_kafka(Db(), args)
    ((source, kwargs),) = calls
    assert source == om.Kafka(
        bootstrap_servers="h:9092", topics=["orders"], options={"kafka.security.protocol": "SSL"}
    )
    assert kwargs["tables"] == {"orders": "sales.orders"}
    assert kwargs["schemas"] == {"sales.orders": "id long, op int"}
    assert kwargs["keys"] == {"sales.orders": ["id", "region"]}
    assert kwargs["feed"] == om.FeedOptions(op_column="op")
    assert (kwargs["checkpoint"], kwargs["trigger"], kwargs["max_offsets_per_trigger"]) == (
        "ck",
        "available_now",
        10,
    )
    hubs = _parser().parse_args(
        [
            "kafka",
            "--event-hubs",
            "ns",
            "--connection-string-env",
            "EH",
            "--topic",
            "a.b",
            "--schema",
            "a.b=id long",
        ]
    )
    start_kafka(Db(), hubs)
    assert calls[-1][0] == om.EventHubs(namespace="ns", topics=["a.b"], connection_string_env="EH")
    assert calls[-1][1]["feed"] is None and calls[-1][1]["keys"] is None
    with pytest.raises(om.ConfigError, match="--schema takes NAME=VALUE"):
        start_kafka(
            Db(), _parser().parse_args(["kafka", "--bootstrap", "h:1", "--topic", "t", "--schema", "x"])
        )


@pytest.mark.spark
def test_cli_kafka_mirrors_a_topic_from_a_real_broker(spark, kafka, tmp_path, capsys):
    """``openmirror kafka`` on the test broker: a 3-partition topic of JSON change rows, one
    available_now run, the local mirror's table equal to the rows the messages make."""
    import uuid

    import openmirror_nb as om

    topic = f"cli{uuid.uuid4().hex[:8]}.sales.orders"
    kafka.create_topic(topic, partitions=3)
    rows = [{"id": i, "name": f"n{i}", "op": 0} for i in range(1, 7)] + [
        {"id": 2, "name": "changed", "op": 4},
        {"id": 5, "op": 2},
    ]
    kafka.produce(topic, [(str(r["id"]), json.dumps(r), r["id"] % 3) for r in rows])
    db = tmp_path / "db"
    schema, where = (
        "sales.orders=id long, name string, op int",
        ["--checkpoint", str(tmp_path / "ck"), "--db", str(db)],
    )
    flags = [
        "--bootstrap",
        kafka.bootstrap,
        "--topic",
        topic,
        "--keys",
        "sales.orders=id",
        "--op-column",
        "op",
    ]
    code = main(["kafka", *flags, "--schema", schema, *where])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "sales.orders" in out
    om.LocalMirror(db).run_once()
    got = om.connect(db).read_table("sales.orders", as_pandas=True).sort_values("id")
    assert got[["id", "name"]].values.tolist() == [[1, "n1"], [2, "changed"], [3, "n3"], [4, "n4"], [6, "n6"]]
