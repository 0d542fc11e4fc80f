"""``%openmirror`` through IPython's real ``InteractiveShell``: every verb against a real local
mirrored database under ``tmp_path``, its usage errors, the one-line display of a failed verb,
and the extension's load/unload. Tables are published by the real protocol without Spark where
the verb does not need it; six tests use Spark."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError, LandingZoneError, MirrorError
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.magics import OpenMirrorMagics
from openmirror_nb._core.mirror import LocalMirror, MirrorRun
from openmirror_nb._core.model import DropResult
from openmirror_nb._core.schema_change import Change, ReseedResult, SchemaPlan
from openmirror_nb._core.status.report import StatusReport
from openmirror_nb._core.table_info import TableInfo
from tests.test_table_scan import META, parquet, push, seq

ONELAKE = "https://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone"


def new_shell(*, singleton: bool) -> InteractiveShell:
    """An ``InteractiveShell`` without history; Python's own hooks and ``__main__`` restored, as
    IPython's ``globalipapp`` does, so the rest of the test run is untouched."""
    saved = sys.modules.get("__main__"), sys.displayhook, sys.excepthook
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config) if singleton else InteractiveShell(config=config)
    sys.modules["__main__"], sys.displayhook, sys.excepthook = saved
    return shell


@pytest.fixture(scope="module")
def ipython():
    shell = new_shell(singleton=True)  # IPython.get_ipython() finds it (the push progress does)
    yield shell
    InteractiveShell.clear_instance()


@pytest.fixture
def ip(ipython, tmp_path, monkeypatch):
    """The shell with the extension loaded, in ``tmp_path`` (so ``./openmirror-db`` lands there);
    afterwards unloaded (stopping its mirrors) and the test's variables gone."""
    monkeypatch.chdir(tmp_path)
    before = set(ipython.user_ns)
    ipython.run_line_magic("load_ext", "openmirror_nb")
    yield ipython
    ipython.run_line_magic("unload_ext", "openmirror_nb")
    for name in set(ipython.user_ns) - before:
        del ipython.user_ns[name]


def om_line(ip, line: str) -> object:
    return ip.run_line_magic("openmirror", line)


def state(ip):
    return ip.magics_manager.registry["OpenMirrorMagics"].state


def published(root: Path, table: str = "sales.orders", *ids: int) -> om.MirroredDatabase:
    """A local database at ``root`` holding ``table`` (keys ``id``), published by the real protocol."""
    db = om.connect(root)
    home = TableFolder.of(db.storage, table)
    if not home.has_metadata():
        db.storage.write_bytes(home.metadata_path, META.encode())
    push(home, [parquet(*(ids or (1, 2, 3)))], push_id=f"p{len(ids)}")
    return db


def shown(ip, cell: str):
    """Run ``cell`` as a notebook would; return the result and what was printed."""
    with capture_output() as out:
        result = ip.run_cell(cell)
    return result, out.stdout, out.stderr


# -- the extension -------------------------------------------------------------------------------


def test_nothing_registers_until_the_extension_loads(ipython):
    assert "openmirror" not in ipython.magics_manager.magics["line"]
    with pytest.raises(UsageError, match="openmirror"):
        ipython.run_line_magic("openmirror", "tables")


def test_loading_again_keeps_the_state_and_unloading_removes_the_magic(ip, tmp_path):
    db = om_line(ip, f"connect {tmp_path / 'db'}")
    magics = ip.magics_manager.registry["OpenMirrorMagics"]
    om.load_ipython_extension(ip)  # a second load (or %reload of a notebook cell) is a no-op
    assert ip.magics_manager.registry["OpenMirrorMagics"] is magics
    assert state(ip).db is db
    om_line(ip, "mirror --start --interval 0.2")
    mirror = state(ip).mirrors[db.target.root]
    assert mirror.is_running

    om.unload_ipython_extension(ip)
    assert not mirror.is_running
    assert "openmirror" not in ip.magics_manager.magics["line"]
    assert "openmirror" not in ip.magics_manager.magics["cell"]
    assert "OpenMirrorMagics" not in ip.magics_manager.registry
    om.load_ipython_extension(ip)  # the fixture unloads it again
    assert state(ip).db is None  # a fresh load starts without a database


def test_each_shell_has_its_own_database(ip, tmp_path):
    other = new_shell(singleton=False)
    om.load_ipython_extension(other)
    om_line(ip, f"connect {tmp_path / 'one'}")
    om_line(other, f"connect {tmp_path / 'two'}")
    assert state(ip).db.target.root == tmp_path / "one"
    assert state(other).db.target.root == tmp_path / "two"
    assert isinstance(other.magics_manager.registry["OpenMirrorMagics"], OpenMirrorMagics)
    om.unload_ipython_extension(other)


# -- verbs on a database -------------------------------------------------------------------------


def test_connect_sets_the_database_later_verbs_use(ip, tmp_path):
    published(tmp_path / "a", "sales.orders")
    published(tmp_path / "b", "hr.people")
    db = om_line(ip, f"connect '{tmp_path / 'a'}'")
    assert isinstance(db, om.MirroredDatabase)
    assert db.target.root == tmp_path / "a"
    assert om_line(ip, "tables") == ["sales.orders"]
    om_line(ip, f"connect {tmp_path / 'b'}")
    assert om_line(ip, "tables") == ["hr.people"]


def test_without_connect_the_default_database_is_used(ip, tmp_path):
    published(tmp_path / "openmirror-db", "orders")
    assert om_line(ip, "tables  # API: db.tables()") == ["orders"]  # a trailing comment is no argument
    assert state(ip).db.target.root == tmp_path / "openmirror-db"
    report = om_line(ip, "status")
    assert isinstance(report, StatusReport)
    assert report.target == str(tmp_path / "openmirror-db")


def test_status_describe_and_drop(ip, tmp_path):
    published(tmp_path / "db", "sales.orders", 1, 2)
    published(tmp_path / "db", "sales.returns", 7)
    om_line(ip, f"connect {tmp_path / 'db'}")

    report = om_line(ip, "status")
    assert [t.table for t in report.tables] == ["sales.orders", "sales.returns"]
    assert [t.table for t in om_line(ip, "status sales.orders").tables] == ["sales.orders"]
    assert report["sales.orders"].health == "pending"  # no mirror ran yet
    assert len(report["sales.orders"].pending) == 1

    info = om_line(ip, "describe sales.orders")
    assert isinstance(info, TableInfo)
    assert (info.table, info.keys, info.last_sequence) == ("sales.orders", ("id",), 1)

    folder = tmp_path / "db" / "Files" / "LandingZone" / "sales.schema" / "orders"
    assert folder.is_dir()
    dropped = om_line(ip, "drop sales.orders --timeout 30")
    assert isinstance(dropped, DropResult)
    assert dropped.existed and dropped.data_files == 1
    assert not folder.exists()
    assert om_line(ip, "tables") == ["sales.returns"]


def test_mirror_once_then_in_the_background(ip, tmp_path):
    db = published(tmp_path / "db", "sales.orders", 1, 2, 3)
    om_line(ip, f"connect {tmp_path / 'db'}")

    run = om_line(ip, "mirror --once")
    assert isinstance(run, MirrorRun)
    assert run["sales.orders"].files_applied == (seq(1),)
    assert sorted(db.read_table("sales.orders", as_pandas=True).id) == [1, 2, 3]
    assert isinstance(om_line(ip, "mirror"), MirrorRun)  # --once is the default

    mirror = om_line(ip, "mirror --start --interval 0.2")
    assert isinstance(mirror, LocalMirror) and mirror.is_running
    with pytest.raises(MirrorError, match=r"already running; %openmirror mirror --stop ends it"):
        om_line(ip, "mirror --start")
    dropped = om_line(ip, "drop sales.orders --wait --timeout 30")  # the running mirror drops it
    assert dropped.existed and dropped.waited is not None
    assert not db.target.tables.joinpath("sales", "orders").exists()
    assert om_line(ip, "mirror --stop") is mirror
    assert not mirror.is_running
    assert om_line(ip, "mirror --stop") is mirror  # stopping a stopped mirror is harmless


def test_mirror_is_for_local_databases(ip):
    om_line(ip, f"connect {ONELAKE}")
    with pytest.raises(UsageError, match="the service mirrors OneLake databases itself"):
        om_line(ip, "mirror --once")


def test_monitor_is_the_pane_of_the_current_database(ip, tmp_path):
    published(tmp_path / "db", "sales.orders")
    db = om_line(ip, f"connect {tmp_path / 'db'}")
    pane = om_line(ip, "monitor")
    try:
        assert isinstance(pane, om.widgets.MonitorPane)
        assert pane.mirror is not None and pane.mirror.root == db.target.root
        assert [t.table for t in pane.report.tables] == ["sales.orders"]
    finally:
        pane.close()


@pytest.mark.spark
def test_onboard_is_the_onboarding_panel_over_the_notebook_namespace(ip, spark, tmp_path):
    pd = pytest.importorskip("pandas")
    ip.user_ns["people"] = pd.DataFrame({"id": [1, 2]})
    db = om_line(ip, f"connect {tmp_path / 'db'}")
    panel = om_line(ip, "onboard")
    try:
        assert isinstance(panel, om.widgets.Onboarding)
        assert str(db.target) in panel.header.value
        assert ("people", "pandas") in [(s.name, s.kind) for s in panel.sources]
        assert {"_model_module", "children"} <= set(panel.get_state())  # a front end can show it
    finally:
        panel.close()


# -- usage and errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "%openmirror: the following arguments are required: VERB"),
        ("psh", "invalid choice: 'psh' (choose from 'connect', 'push', 'status', 'monitor', 'onboard',"),
        (
            "push",
            "%openmirror push: the following arguments are required: --table\nusage: %openmirror push DF",
        ),
        ("push orders --table t --mode upsert", "argument --mode: invalid choice: 'upsert'"),
        ("push --table t", "%openmirror push: the following arguments are required: DF"),
        ("drop", "%openmirror drop: the following arguments are required: T\nusage: %openmirror drop T"),
        ("drop t --timeout soon", "argument --timeout: 'soon' is not a number of seconds"),
        ("mirror --once --stop", "argument --stop: not allowed with argument --once"),
        ("mirror --interval 3", "%openmirror mirror: --interval goes with --start"),
        ("mirror --start --interval -1", "argument --interval: '-1' is not a number of seconds"),
        ("tables sales", "%openmirror: unrecognized arguments: sales"),
        ("connect 'my db", 'cannot split "connect \'my db": No closing quotation'),
    ],
)
def test_bad_usage_is_a_usage_error_naming_the_problem(ip, line, message):
    with pytest.raises(UsageError) as caught:
        om_line(ip, line)
    assert message in str(caught.value)


def test_help_prints_the_verbs_and_returns_nothing(ip):
    result, out, _ = shown(ip, "%openmirror -h")
    assert result.success and result.result is None
    assert "connect" in out and "mirror" in out
    _, out, _ = shown(ip, "%openmirror push -h")
    assert "usage: %openmirror push DF --table T" in out and "--quiet" in out


def test_an_unknown_dataframe_name_suggests_a_variable(ip):
    pd = pytest.importorskip("pandas")
    ip.user_ns.update(orders=pd.DataFrame({"id": [1]}), returns=pd.DataFrame({"id": [2]}), count=3)
    with pytest.raises(
        UsageError, match=r"no DataFrame, temp view or table is named 'ordrs'\. Did you mean 'orders'\?"
    ):
        om_line(ip, "push ordrs --table t --keys id")
    with pytest.raises(UsageError, match=r"'zzz'\. DataFrames here: 'orders', 'returns'\."):
        om_line(ip, "push zzz --table t --keys id")
    with pytest.raises(UsageError, match=r"'count' is not a DataFrame but int"):
        om_line(ip, "push count --table t --keys id")


class RecordingDatabase:
    """Stands in for ``MirroredDatabase.push``: what the magic asked for, exactly."""

    def __init__(self):
        self.calls = []

    def push(self, df, **kwargs):
        self.calls.append((df, kwargs))
        return "pushed"


def test_push_flags_become_the_api_call(ip):
    pd = pytest.importorskip("pandas")
    feed = pd.DataFrame({"id": [1], "op": [0]})
    ip.user_ns["feed"] = feed
    db = state(ip).db = RecordingDatabase()
    line = (
        "push feed --table sales.orders --keys id,region --mode changes --op-column op "
        "--convention sys_op --order-by lsn,pos --compact --quiet"
    )
    assert om_line(ip, line) == "pushed"
    om_line(ip, "push feed --table sales.orders")
    (first, asked), (_, plain) = db.calls
    assert first is feed  # a pandas DataFrame goes to db.push as it is
    assert asked == {
        "table": "sales.orders",
        "keys": ["id", "region"],
        "mode": "changes",
        "feed": om.FeedOptions(op_column="op", convention="sys_op", order_by=["lsn", "pos"], compact=True),
        "progress": False,
    }
    assert plain == {
        "table": "sales.orders",
        "keys": None,
        "mode": "snapshot",
        "feed": om.FeedOptions(),
        "progress": None,
    }


def test_only_push_takes_a_cell(ip):
    ip.user_ns["orders"] = object()
    with pytest.raises(UsageError, match="%%openmirror status: only push takes a cell body"):
        ip.run_cell_magic("openmirror", "status", "SELECT 1")
    with pytest.raises(UsageError, match="the cell is empty; write the Spark SQL"):
        ip.run_cell_magic("openmirror", "push --table t", "  \n")
    with pytest.raises(UsageError, match="push either DF or the cell's Spark SQL, not both; drop 'orders'"):
        ip.run_cell_magic("openmirror", "push orders --table t", "SELECT 1")


def test_a_failed_verb_shows_one_line_not_a_traceback(ip, tmp_path):
    published(tmp_path / "db", "sales.orders")
    om_line(ip, f"connect {tmp_path / 'db'}")
    result, out, err = shown(ip, "%openmirror describe sales.ordres")
    assert not result.success and isinstance(result.error_in_exec, LandingZoneError)
    assert out.strip() == f"LandingZoneError: {result.error_in_exec}"
    assert "Did you mean 'sales.orders'?" in out
    assert "Traceback" not in out + err

    result, _, err = shown(ip, "%openmirror drop")
    assert err.startswith("UsageError: %openmirror drop: the following arguments are required: T")
    assert "Traceback" not in err


def test_a_real_kernel_shows_a_failed_verb_as_one_line(tmp_path):
    """What a notebook shows: the kernel's error message carries one traceback line."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        code = f"%load_ext openmirror_nb\n%openmirror connect {tmp_path / 'db'}\n%openmirror describe nosuch"
        msg_id = client.execute(code)
        errors = []
        while True:
            msg = client.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "error":
                errors.append(msg["content"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert [e["traceback"] for e in errors] == [
        ["LandingZoneError: Table 'nosuch' does not exist in the landing zone."]
    ]


# -- pushes on Spark -----------------------------------------------------------------------------


@pytest.fixture
def view_v2(spark):
    """A temp view ``v2``, dropped afterwards: the session is shared with the rest of the run."""
    spark.createDataFrame([(1, "a"), (2, "B"), (4, "d")], "id long, v string").createOrReplaceTempView("v2")
    yield "v2"
    spark.catalog.dropTempView("v2")


@pytest.mark.spark
def test_push_a_variable_a_view_and_a_cell(ip, spark, view_v2, tmp_path):
    root = tmp_path / "db"
    om_line(ip, f"connect {root}")
    ip.user_ns["orders"] = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, v string")
    result, _, err = shown(ip, "%openmirror push orders --table sales.orders --keys id --quiet")
    first = result.result
    assert result.success and err == ""  # --quiet: no progress lines
    assert (first.table, first.sequence_numbers, first.rows) == ("sales.orders", (1,), {"initial": 3})
    folder = root / "Files" / "LandingZone" / "sales.schema" / "orders"
    assert json.loads((folder / "_metadata.json").read_text())["keyColumns"] == ["id"]
    assert (folder / seq(1)).is_file()

    result, _, err = shown(ip, "%openmirror push v2 --table sales.orders")  # a temp view by name
    assert result.result.rows == {"insert": 1, "upsert": 1, "delete": 1}
    assert "sales.orders" in err  # without --quiet the push reports its progress

    cell = "SELECT id, v FROM v2 WHERE id <> 4\nUNION ALL SELECT 5L AS id, 'e' AS v"
    third = ip.run_cell_magic("openmirror", "push --table sales.orders --quiet", cell)
    assert third.rows == {"insert": 1, "delete": 1}
    assert sorted(p.name for p in folder.glob("*.parquet")) == [seq(1), seq(2), seq(3)]

    assert om_line(ip, "mirror --once")["sales.orders"].status == "Replicating"
    assert om_line(ip, "status sales.orders --reconcile")["sales.orders"].reconciliation.verdict == "match"
    mirrored = state(ip).db.read_table("sales.orders", as_pandas=True).sort_values("id")
    assert list(zip(mirrored.id, mirrored.v, strict=True)) == [(1, "a"), (2, "B"), (5, "e")]


@pytest.mark.spark
def test_a_rejected_push_shows_one_line_and_publishes_nothing(ip, spark, tmp_path, lz_hash):
    om_line(ip, f"connect {tmp_path / 'db'}")
    ip.user_ns["bad"] = spark.createDataFrame([(None, "a"), (None, "b"), (1, "c")], "id long, v string")
    landing_zone = tmp_path / "db" / "Files" / "LandingZone"
    before = lz_hash(landing_zone)
    result, out, err = shown(ip, "%openmirror push bad --table sales.orders --keys id --quiet")
    assert type(result.error_in_exec).__name__ == "KeyColumnsError"
    assert out.strip() == f"KeyColumnsError: {result.error_in_exec}"
    assert "'id'" in out and "NULL" in out
    assert "Traceback" not in out + err
    assert lz_hash(landing_zone) == before


@pytest.mark.spark
def test_spark_rejecting_the_cell_sql_is_one_line(ip, spark, tmp_path):
    om_line(ip, f"connect {tmp_path / 'db'}")
    result, out, err = shown(ip, "%%openmirror push --table t --keys id\nSELEC 1 AS id")
    assert isinstance(result.error_in_exec, ConfigError)
    assert out.startswith("ConfigError: Spark rejected the cell's SQL: ")
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out + err


@pytest.mark.spark
def test_push_a_pandas_dataframe(ip, spark, tmp_path):
    pd = pytest.importorskip("pandas")
    om_line(ip, f"connect {tmp_path / 'db'}")
    ip.user_ns["people"] = pd.DataFrame({"id": [1, 2], "name": ["ann", "bob"]})
    pushed = om_line(ip, "push people --table hr.people --keys id --quiet")
    assert (pushed.table, pushed.rows) == ("hr.people", {"initial": 2})
    assert om_line(ip, "tables") == ["hr.people"]


# -- schema changes ------------------------------------------------------------------------------

PLAN = SchemaPlan(
    table="sales.orders",
    changes=(Change("type_changed", "qty", "integer", "long", "reseed", "the mirror cannot change a type"),),
    keys=("id",),
    schema="{}",
    rows=3,
    files=1,
)


class PlanningDatabase:
    """Stands in for ``plan_schema_change`` and ``apply_schema_change``: what the magic asked for."""

    target = "file:///tmp/fake-db"

    def __init__(self):
        self.calls = []

    def plan_schema_change(self, table, df, *, keys=None):
        self.calls.append(("plan", table, df, keys))
        return PLAN

    def apply_schema_change(self, plan, df, **kwargs):
        self.calls.append(("apply", plan, df, kwargs))
        return "applied"


def test_schema_is_the_wizard_or_with_confirm_the_api_calls(ip):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": [1], "qty": [2]})
    ip.user_ns["orders_v2"] = frame
    db = state(ip).db = PlanningDatabase()
    line = "schema sales.orders orders_v2 --keys id,region --confirm sales.orders --no-wait"
    assert om_line(ip, line) == "applied"
    wizard = om_line(ip, "schema sales.orders orders_v2")
    try:
        assert isinstance(wizard, om.widgets.SchemaWizard) and wizard.plan is PLAN
        assert wizard.run_button.disabled and wizard.result is None  # nothing runs without the name
    finally:
        wizard.close()
    applied = db.calls[1][3]
    assert callable(applied.pop("on_step"))  # prints one line per step done
    assert db.calls == [
        ("plan", "sales.orders", frame, ["id", "region"]),
        ("apply", PLAN, frame, {"confirm": "sales.orders", "wait": False}),
        ("plan", "sales.orders", frame, None),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "schema",
            "%openmirror schema: the following arguments are required: T, DF\nusage: %openmirror schema T DF",
        ),
        ("schema sales.orders", "%openmirror schema: the following arguments are required: DF"),
        ("schema sales.orders orders_v2 --confirm", "argument --confirm: expected one argument"),
        (
            "schema sales.orders ordrs_v2",
            "%openmirror schema: no DataFrame, temp view or table is named 'ordrs_v2'",
        ),
    ],
)
def test_schema_usage_errors(ip, line, message):
    pd = pytest.importorskip("pandas")
    ip.user_ns["orders_v2"] = pd.DataFrame({"id": [1]})
    with pytest.raises(UsageError) as caught:
        om_line(ip, line)
    assert message in str(caught.value)


@pytest.mark.spark
def test_schema_with_confirm_reseeds_and_verifies(ip, spark, tmp_path):
    om_line(ip, f"connect {tmp_path / 'db'}")
    ip.user_ns["orders"] = spark.range(30).selectExpr("id", "CAST(id AS INT) AS qty")
    om_line(ip, "push orders --table sales.orders --keys id --quiet")
    ip.user_ns["orders_v2"] = spark.range(20).selectExpr("id", "CAST(id AS BIGINT) * 2 AS qty")
    wizard = om_line(ip, "schema sales.orders orders_v2")
    try:
        assert wizard.plan.needs_reseed and wizard.run_button.disabled
    finally:
        wizard.close()
    with pytest.raises(
        ConfigError, match=r"confirm must be the table's name, 'sales.orders' \(got 'orders'\)"
    ):
        om_line(ip, "schema sales.orders orders_v2 --confirm orders")
    result = om_line(ip, "schema sales.orders orders_v2 --confirm sales.orders")
    assert isinstance(result, ReseedResult) and result.verified and result.mirrored_rows == 20
    mirrored = state(ip).db.read_table("sales.orders", as_pandas=True).sort_values("id")
    assert list(mirrored["qty"]) == [i * 2 for i in range(20)]


def test_kafka_starts_db_mirror_kafka_and_stream_list_and_stop_see_it(ip):
    """``%openmirror kafka`` calls ``db.mirror_kafka`` with the flags as the API's dicts and keeps
    the stream with ``stream --list`` and ``--stop``'s (a fake database: the broker run is the
    CLI's test)."""
    from types import SimpleNamespace

    calls, stopped = [], []
    started = SimpleNamespace(query=SimpleNamespace(id="q1"), stop=lambda: stopped.append("q1"))

    class Db:
        def mirror_kafka(self, source, **kwargs):
            calls.append((source, kwargs))
            return started

    state(ip).db = Db()
    line = (
        "kafka --bootstrap h:9092 --topic erp.sales.orders --schema 'sales.orders=id long, op int' "
        "--keys sales.orders=id --checkpoint ck --op-column op --trigger once"
    )
    assert om_line(ip, line) is started
    ((source, kwargs),) = calls
    assert source == om.Kafka(bootstrap_servers="h:9092", topics=["erp.sales.orders"])
    assert kwargs["schemas"] == {"sales.orders": "id long, op int"}
    assert kwargs["keys"] == {"sales.orders": ["id"]}
    assert kwargs["feed"] == om.FeedOptions(op_column="op")
    assert (kwargs["tables"], kwargs["checkpoint"], kwargs["trigger"]) == (None, "ck", "once")
    assert om_line(ip, "stream --list") == [started]
    om_line(ip, "stream --stop q1")
    assert stopped == ["q1"]
    with pytest.raises(ConfigError, match="--bootstrap HOST:PORT or --event-hubs NS"):
        om_line(ip, "kafka --topic t --schema t.x=id")
    with pytest.raises(UsageError, match="not allowed with argument"):
        om_line(ip, "kafka --bootstrap h:1 --event-hubs ns --topic t")
