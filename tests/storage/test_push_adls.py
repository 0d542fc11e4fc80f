"""The whole push path on OneLake's protocol: the real Azure SDK against the loopback DFS server.

Spark cannot write to the store here (outside Fabric), so it stages locally and the parts are
uploaded, then published with conditional renames under a lease.
"""

from __future__ import annotations

import io
import json
import re

import pyarrow.parquet as pq
import pytest

from openmirror_nb._core.api import MirroredDatabase
from openmirror_nb._core.errors import CredentialError, InvalidNameError, KeyColumnsError
from openmirror_nb._core.status import Sources, build_report
from openmirror_nb._core.target import OneLakeTarget
from tests.dfs_server import TokenSequence
from tests.storage.test_adls import make_storage, sent

pytestmark = pytest.mark.spark

FOLDER = "mirror.MirroredDatabase/Files/LandingZone/sales.schema/orders"


def _table(dfs, fs, name):
    return pq.read_table(io.BytesIO(dfs.file(fs, f"{FOLDER}/{name}")))


def test_push_initial_changes_and_diff_over_dfs(spark, dfs, fs):
    storage = make_storage(dfs, fs)
    assert storage.SPARK_WRITABLE is False
    db = MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=storage, lock_timeout=30)
    df = spark.range(0, 300, numPartitions=3).selectExpr("id", "concat('v', id) as v")
    first = db.push(df, table="sales.orders", keys=["id"], rows_per_file=100)
    assert first.sequence_numbers == (1, 2, 3)
    assert json.loads(dfs.file(fs, f"{FOLDER}/_metadata.json"))["keyColumns"] == ["id"]
    assert sum(_table(dfs, fs, f"{i:020d}.parquet").num_rows for i in (1, 2, 3)) == 300

    changes = spark.createDataFrame([(1, "x", 4), (2, None, 2)], "id long, v string, op int")
    second = db.push(changes, table="sales.orders", mode="changes", op_column="op")
    assert second.sequence_numbers == (4,)

    # a later snapshot: row 5 changed, row 7 gone, row 1000 new; the diff is computed against the
    # key state that was downloaded from the store
    snap = (
        spark.range(0, 300)
        .where("id not in (2, 7)")
        .selectExpr(
            "id", "case when id = 5 then 'changed' when id = 1 then 'x' else concat('v', id) end as v"
        )
        .union(spark.createDataFrame([(1000, "new")], "id long, v string"))
    )
    third = db.push(snap, table="sales.orders", keys=["id"])
    assert third.sequence_numbers == (5,)
    rows = {r["id"]: r for r in _table(dfs, fs, f"{5:020d}.parquet").to_pylist()}
    assert {k: r["__rowMarker__"] for k, r in rows.items()} == {5: 4, 7: 2, 1000: 0}
    # the base key state went up in its bucket layout (named locally, before the upload)
    state = json.loads(dfs.file(fs, f"{FOLDER}/_openmirror/state.json"))
    assert state["buckets"] == 4 and len(state["deltas"]) == 2
    names = [e.name for e in storage.list_dir(state["base"]) if e.name.endswith(".parquet")]
    assert names and all(re.search(r"_0000[0-3]\.snappy\.parquet$", n) for n in names), names

    published = [r for r in sent(dfs, fs) if r.method == "PUT" and r.headers.get("x-ms-rename-source")]
    finals = [r for r in published if r.path.rsplit("/", 1)[-1][:20].isdigit()]
    assert len(finals) == 5 and all(r.headers.get("if-none-match") == "*" for r in finals)


def test_rejected_push_leaves_the_store_untouched(spark, dfs, fs):
    storage = make_storage(dfs, fs)
    db = MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=storage, lock_timeout=30)
    before = sorted(p for p, _ in storage.walk_files(""))
    dupes = spark.createDataFrame([(1, "a"), (1, "b")], "id long, v string")
    with pytest.raises(KeyColumnsError):
        db.push(dupes, table="t", keys=["id"])
    assert sorted(p for p, _ in storage.walk_files("")) == before


def _publishing(fs):
    """The first rename of a staged part into its 20-digit name: the journal is written by then."""

    def matches(r) -> bool:
        final = r.path.rsplit("/", 1)[-1][:20].isdigit()
        return r.path.startswith(f"{fs}/{FOLDER}/") and "x-ms-rename-source" in r.headers and final

    return matches


def test_access_lost_mid_publish_leaves_a_journal_the_next_push_finishes(spark, dfs_auth, fs):
    storage = make_storage(dfs_auth, fs)
    db = MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=storage, lock_timeout=30)
    db.push(spark.range(0, 4).selectExpr("id", "concat('v', id) as v"), table="sales.orders", keys=["id"])
    changes = spark.createDataFrame([(10, "new", 0), (1, None, 2)], "id long, v string, op int")
    dfs_auth.refuse(403, when=_publishing(fs))  # e.g. the identity's workspace role was removed
    with pytest.raises(CredentialError, match="HTTP 403 AuthorizationPermissionMismatch") as caught:
        db.push(changes, table="sales.orders", mode="changes", op_column="op")
    assert "\n" not in str(caught.value)
    refused = [r for r in sent(dfs_auth, fs) if r.status == 403]
    assert sum(_publishing(fs)(r) for r in refused) == 1  # the publish was tried once, not retried
    assert dfs_auth.file(fs, f"{FOLDER}/_openmirror/journal.json") is not None
    assert dfs_auth.file(fs, f"{FOLDER}/{2:020d}.parquet") is None

    dfs_auth.refuse(None)  # access restored
    dfs_auth.advance(16)  # the lease the refused push could not release lapses (15 s)
    later = spark.createDataFrame([(11, "later", 0)], "id long, v string, op int")
    result = db.push(later, table="sales.orders", mode="changes", op_column="op")
    assert result.sequence_numbers == (3,)  # the journal's push became 2, before this one
    assert dfs_auth.file(fs, f"{FOLDER}/_openmirror/journal.json") is None
    rows = {r["id"]: r["__rowMarker__"] for r in _table(dfs_auth, fs, f"{2:020d}.parquet").to_pylist()}
    assert rows == {10: 0, 1: 2}
    assert [r["id"] for r in _table(dfs_auth, fs, f"{3:020d}.parquet").to_pylist()] == [11]


def test_a_token_revoked_mid_push_is_refreshed_once(spark, dfs_auth, fs):
    credential = TokenSequence("t1", "t2")
    dfs_auth.tokens |= {"t1", "t2"}
    storage = make_storage(dfs_auth, fs, credential=credential)
    db = MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=storage, lock_timeout=30)
    dfs_auth.at(_publishing(fs), lambda: dfs_auth.tokens.discard("t1"))  # it expired meanwhile
    df = spark.range(0, 300, numPartitions=3).selectExpr("id", "concat('v', id) as v")
    result = db.push(df, table="sales.orders", keys=["id"], rows_per_file=100)
    assert result.sequence_numbers == (1, 2, 3)
    # Usually one request meets the revoked token; under load a lease renewal on its own thread
    # may meet it too. Either way each refused request costs exactly one new token: no loop.
    refusals = sum(r.status == 401 for r in sent(dfs_auth, fs))
    assert 1 <= refusals <= 2 and credential.calls == 1 + refusals
    assert sum(_table(dfs_auth, fs, f"{i:020d}.parquet").num_rows for i in (1, 2, 3)) == 300


def test_a_non_ascii_table_is_percent_encoded_once_on_the_wire(spark, dfs, fs):
    """``Δ.表`` is pushed, listed, described, reported and dropped over the DFS protocol: every request path
    and rename source carries its UTF-8 percent-encoded exactly once (the server decodes once and
    stores the real name; a second encoding would store ``%CE%94`` literally)."""
    urls: list[str] = []
    storage = make_storage(dfs, fs, raw_request_hook=lambda request: urls.append(_wire(request)))
    db = MirroredDatabase(target=OneLakeTarget("ws", "mirror"), storage=storage, lock_timeout=30)
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    assert db.push(df, table="Δ.表", keys=["id"]).sequence_numbers == (1,)
    root = "mirror.MirroredDatabase/Files/LandingZone"
    stored = {p for p in dfs.store.fs[fs] if p.startswith(root)}
    assert f"{root}/Δ.schema/表/00000000000000000001.parquet" in stored
    assert f"{root}/Δ.schema/表/_metadata.json" in stored
    assert not [p for p in stored if "%" in p]
    table_urls = [u for u in urls if "%CE%94.schema" in u]
    assert table_urls and not [u for u in urls if "%25" in u or "Δ" in u]
    assert any("_openmirror/locks/%CE%B4.%E8%A1%A8.lock" in u for u in urls)  # δ.表: case-folded
    assert db.tables() == ["Δ.表"] and db.describe("Δ.表").keys == ("id",)
    files = make_storage(dfs, fs, base_path="mirror.MirroredDatabase/Files")
    report = build_report("onelake", Sources(landing_zone=storage, files=files))
    assert [(t.table, t.folder, len(t.pending)) for t in report.tables] == [("Δ.表", "Δ.schema/表", 1)]
    with pytest.raises(InvalidNameError, match=r"is table 'Δ\.表' of the landing zone spelled another way"):
        db.push(df, table="δ.表", keys=["id"])
    assert db.drop("Δ.表").existed
    assert not [p for p in dfs.store.fs[fs] if "Δ" in p and "_openmirror/locks" not in p]


def _wire(request) -> str:
    """The request's URL and rename source as sent, percent-encoding included."""
    http = request.http_request
    return f"{http.url} {http.headers.get('x-ms-rename-source', '')}"


def test_a_small_feeds_key_state_goes_up_from_where_spark_wrote_it(spark, dfs, fs, monkeypatch):
    """A small feed's key state is a copy of its files (pipeline.keystate.feed_state), made in the local
    folder Spark works in and uploaded with them: the same bytes as the published file, and the
    state of the rows published. A sys_op feed's state is written beside its files instead; one
    that reads otherwise the second time (a value drawn anew at each read) has it thrown away
    there, and the state uploaded is the published rows' too."""
    import uuid

    from pyspark.sql import functions as F

    from openmirror_nb._core.pipeline.feeds import changes
    from openmirror_nb._core.pipeline.keystate import feed_state

    monkeypatch.setattr(changes, "SMALL_FEED_BYTES", 8 * 2**20)
    kept = []
    result = feed_state.StateAhead.result
    monkeypatch.setattr(feed_state.StateAhead, "result", lambda a, f: kept.append(result(a, f)) or kept[-1])
    db = MirroredDatabase(
        target=OneLakeTarget("ws", "mirror"), storage=make_storage(dfs, fs), lock_timeout=30
    )
    db.push(spark.range(5).selectExpr("id", "'a' AS v"), table="sales.orders", keys=["id"])
    draw = F.udf(lambda: uuid.uuid4().hex, "string").asNondeterministic()
    feed = spark.range(0, 5, 1, 2).select("id", draw().alias("v"), F.lit(4).alias("op"))
    assert db.push(feed, table="sales.orders", mode="changes", op_column="op").sequence_numbers == (2,)
    assert kept == []  # no second job
    state = json.loads(dfs.file(fs, f"{FOLDER}/_openmirror/state.json"))
    [(folder, _)] = state["feed_deltas"]
    root = FOLDER.removesuffix("sales.schema/orders")
    with dfs.store.lock:
        [copy] = [p for p in dfs.store.fs[fs] if p.startswith(f"{root}{folder}/part-")]
    assert dfs.file(fs, copy) == dfs.file(fs, f"{FOLDER}/{2:020d}.parquet")
    published = _table(dfs, fs, f"{2:020d}.parquet").to_pylist()
    snap = spark.createDataFrame([(r["id"], r["v"]) for r in published], "id long, v string")
    assert db.push(snap, table="sales.orders").rows == {}

    prostore = spark.range(0, 5, 1, 2).select("id", draw().alias("v"), F.lit(0).alias("sys_op"))
    assert db.push(prostore, table="sales.orders", mode="changes", convention="sys_op").sequence_numbers == (
        3,
    )
    assert kept == [None]
    published = _table(dfs, fs, f"{3:020d}.parquet").to_pylist()
    snap = spark.createDataFrame([(r["id"], r["v"]) for r in published], "id long, v string")
    assert db.push(snap, table="sales.orders").rows == {}
