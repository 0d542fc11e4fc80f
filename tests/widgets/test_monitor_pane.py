"""``MonitorPane`` headless: built on a real local database (files published by the real protocol,
replicated by the real local mirror), driven by setting widget values and clicking, as a user would.
Waits use events set by the pane's ``on_refresh``, with a timeout only as a guard."""

from __future__ import annotations

import html
import subprocess
import sys
import textwrap
import threading
import types
from datetime import UTC, datetime

import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError, LandingZoneError
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.mirror import LocalMirror
from openmirror_nb._core.status import ReplicatorStatus, StatusReport
from openmirror_nb._core.target import OneLakeTarget
from tests.test_table_scan import META, parquet, push, seq

GUARD = 60  # seconds a wait may take before the test gives up


def table(db, name: str, *parts: bytes, push_id: str = "p1") -> TableFolder:
    home = TableFolder.of(db.storage, name)
    if not home.has_metadata():
        db.storage.write_bytes(home.metadata_path, META.encode())
    push(home, list(parts), push_id=push_id)
    return home


@pytest.fixture
def db(tmp_path):
    """ok, pending, blocked (gap) and failed (zero-byte file) tables."""
    db = om.connect(tmp_path / "db")
    for name in ("sales.ok", "sales.pending", "sales.gap", "sales.bad"):
        table(db, name, parquet(1, 2, 3))
    db.storage.write_bytes(f"{TableFolder.of(db.storage, 'sales.gap').folder}/{seq(3)}", parquet(9))
    db.storage.write_bytes(f"{TableFolder.of(db.storage, 'sales.bad').folder}/{seq(2)}", b"")
    LocalMirror(tmp_path / "db").run_once()
    table(db, "sales.pending", parquet(4), push_id="p2")
    return db


@pytest.fixture
def pane(db):
    pane = om.widgets.MonitorPane(db)
    yield pane
    pane.close()


def threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("openmirror-")}


def refreshed(pane) -> threading.Event:
    event = threading.Event()
    pane.on_refresh(lambda report: event.set())
    return event


def test_the_grid_shows_every_table_with_its_badge(pane):
    grid = pane.grid.value
    for name, health in [
        ("sales.ok", "ok"),
        ("sales.pending", "pending"),
        ("sales.gap", "blocked"),
        ("sales.bad", "failed"),
    ]:
        row = grid.split(f"data-table='{name}'>", 1)[1].split("</tr>", 1)[0]
        assert f"om-badge-{health}" in row, (name, row)
    assert grid.count("class='om-row'") == 4
    assert "00000000000000000002.parquet is missing" in grid  # the blocked table's fix, in words
    assert "om-spark" in grid  # a sparkline per table
    assert "2 failed" not in pane.header.value and "1 failed" in pane.header.value


def test_the_detail_opens_on_the_worst_table_and_follows_the_picker(pane):
    assert pane.selected_table == "sales.bad"
    assert "00000000000000000002.parquet is empty (0 bytes)" in pane.detail.value
    pane.table_picker.value = "sales.pending"
    assert "data-table='sales.pending'" in pane.detail.value
    assert seq(2) in pane.detail.value  # its pending file is listed


def test_refresh_shows_a_new_file_and_the_sparkline_grows(db, pane):
    before = pane.refreshes
    table(db, "sales.ok", parquet(7), push_id="p2")
    pane.refresh_button.click()
    assert pane.refreshes == before + 1
    assert len(pane.report["sales.ok"].pending) == 1
    assert "om-badge-pending" in pane.grid.value.split("data-table='sales.ok'>", 1)[1].split("</tr>", 1)[0]
    assert list(pane._history["sales.ok"]) == [0, 1]
    assert "Refreshed" in pane.status_line.value


def test_auto_refresh_picks_up_changes_and_stops_when_switched_off(db, pane):
    pane.interval_box.value = 1
    event = refreshed(pane)
    pane.auto_toggle.value = True
    assert pane.auto_refreshing and "openmirror-monitor" in threads()
    table(db, "sales.ok", parquet(8), push_id="p2")
    # no click: the pane's own thread reads the new file, on one of its next refreshes
    for _ in range(GUARD):
        assert event.wait(GUARD)
        event.clear()
        if pane.report["sales.ok"].pending:
            break
    assert len(pane.report["sales.ok"].pending) == 1
    pane.auto_toggle.value = False
    assert not pane.auto_refreshing and "openmirror-monitor" not in threads()


def test_the_mirror_switch_replicates_and_the_pane_updates_on_its_pass(pane):
    event = refreshed(pane)
    pane.mirror_toggle.value = True
    assert event.wait(GUARD)  # refreshed by the mirror's on_pass, not by polling
    assert pane.mirror.is_running
    assert pane.report["sales.pending"].pending == ()
    assert pane.report["sales.pending"].health == "ok"
    assert pane.report["sales.bad"].health == "failed"  # only a publisher fixes those
    pane.mirror_toggle.value = False
    assert not pane.mirror.is_running


def test_close_leaves_no_thread_behind(db):
    pane = om.widgets.MonitorPane(db, interval=1, auto_refresh=True)
    pane.mirror_toggle.value = True
    assert {"openmirror-monitor"} <= threads()
    pane.close()
    assert threads() == set()
    assert not pane.mirror.is_running


def test_a_refresh_that_fails_says_so_and_keeps_the_last_report(db):
    calls = []

    def status():
        calls.append(1)
        if len(calls) > 1:
            raise LandingZoneError("the landing zone cannot be listed (test)")
        return db.status()

    pane = om.widgets.MonitorPane(db, status=status)
    shown = pane.grid.value
    pane.refresh_button.click()
    assert "Refresh failed: the landing zone cannot be listed (test)" in pane.status_line.value
    assert "#c62828" in pane.status_line.value
    assert pane.grid.value == shown and pane.report is not None
    pane.close()


def test_onelake_has_no_mirror_switch():
    report = StatusReport("https://onelake/ws/db", datetime.now(UTC), ReplicatorStatus("Running"), ())
    fake = types.SimpleNamespace(target=OneLakeTarget("ws", "db"), status=lambda: report, local_mirror=None)
    pane = om.widgets.MonitorPane(fake)
    assert pane.mirror is None and pane.mirror_toggle.disabled
    assert "No tables yet" in pane.detail.value
    pane.close()


def test_bad_interval_is_refused(db):
    with pytest.raises(ConfigError, match="interval must be at least 1 second, not 0"):
        om.widgets.MonitorPane(db, interval=0)


def test_auto_refresh_prints_nothing(db, capfd):
    pane = om.widgets.MonitorPane(db, interval=1)
    event = refreshed(pane)
    pane.auto_toggle.value = True
    assert event.wait(GUARD)
    pane.close()
    out, _ = capfd.readouterr()
    assert out == ""


def test_an_interpreter_exit_with_a_running_pane_is_clean(db, tmp_path):
    """A kernel restart ends the process: the pane's threads must not break the exit."""
    code = textwrap.dedent(
        f"""
        import threading, openmirror_nb as om
        db = om.connect({str(tmp_path / "db")!r})
        pane = om.widgets.MonitorPane(db, interval=1, auto_refresh=True)
        pane.mirror_toggle.value = True
        done = threading.Event()
        pane.on_refresh(lambda r: done.set())
        assert done.wait(60)
        print("running", sorted(t.name for t in threading.enumerate() if t.name.startswith("openmirror-")))
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "openmirror-monitor" in run.stdout
    assert "Traceback" not in run.stderr and "Exception" not in run.stderr


def test_a_mirror_started_elsewhere_shows_running_and_outlives_the_pane(db):
    mirror = LocalMirror(db.target.root)
    mirror.start(interval=1)
    try:
        pane = om.widgets.MonitorPane(db, mirror=mirror)
        assert pane.mirror_toggle.value is True  # the switch shows what runs
        pane.close()
        assert mirror.is_running  # %openmirror mirror --start started it: only --stop ends it
    finally:
        mirror.stop(timeout=30)


@pytest.mark.parametrize("refusal", ["no identity", "HTTP 403"])
def test_onelake_refusing_access_shows_the_one_line_error(refusal, monkeypatch, tmp_path):
    """A OneLake database whose credential finds no identity, or whose identity has no access,
    built as ``connect()`` builds it (the SDK's default retry policy included) against the
    loopback DFS server: the status line says what the error says, after one try."""
    from openmirror_nb._core.api import MirroredDatabase
    from openmirror_nb._core.errors import CredentialError
    from openmirror_nb._core.storage.registry import open_storage
    from tests.dfs_server import NoIdentityCredential, StaticTokenCredential, start_server

    server, cert = start_server(tmp_path)
    try:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))  # what from_target's client trusts
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        server.create_filesystem("ws")
        target = OneLakeTarget(
            "ws", "sales.MirroredDatabase", host=server.account_url.removeprefix("https://")
        )
        credential = NoIdentityCredential() if refusal == "no identity" else StaticTokenCredential()
        server.refuse(403 if refusal == "HTTP 403" else None)
        storage = open_storage(target, credential=credential)
        db = MirroredDatabase(target=target, storage=storage, credential=storage.credential)
        with pytest.raises(CredentialError) as caught:
            db.status()
        pane = om.widgets.MonitorPane(db)
        line = pane.status_line.value
        pane.close()
    finally:
        server.close()
    message = str(caught.value)
    assert "\n" not in message and "`az login`" in message and refusal.split()[-1] in message
    assert html.escape(f"Refresh failed: {message}") in line and "#c62828" in line
    assert pane.report is None
    # one try: a credential without identity was asked once (its failure is remembered) and no
    # request went out; a refusing server saw each refresh read replicator.json and list the
    # landing zone, once each
    if refusal == "no identity":
        assert credential.calls == 1 and server.requests == []
    else:
        reads = [(r.path.rpartition("/")[2], r.status) for r in server.requests]
        assert reads == [("replicator.json", 403), ("ws", 403)] * 2


def test_every_handle_on_a_folder_shares_one_local_mirror(tmp_path):
    """The magic, the pane and every handle on one database folder drive one mirror: two over a
    folder would race each other."""
    first, second = om.connect(tmp_path / "db"), om.connect(str(tmp_path / "db" / "." / ""))
    assert first.local_mirror is not None and first.local_mirror is second.local_mirror
    assert om.connect(tmp_path / "other").local_mirror is not first.local_mirror
    pane = om.widgets.MonitorPane(first)
    try:
        assert pane.mirror is second.local_mirror
    finally:
        pane.close()
    onelake = om.connect("https://onelake.dfs.fabric.microsoft.com/ws/db.MirroredDatabase/Files/LandingZone")
    assert onelake.local_mirror is None


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """A hundred tables: most ok, ten pending, two failed (zero-byte files), one blocked (gap)."""
    root = tmp_path_factory.mktemp("fleet") / "db"
    db = om.connect(root)
    names = [f"erp.t{i:03d}" for i in range(100)]
    for name in names:
        table(db, name, parquet(1, 2))
    for name in ("erp.t013", "erp.t077"):
        db.storage.write_bytes(f"{TableFolder.of(db.storage, name).folder}/{seq(2)}", b"")
    db.storage.write_bytes(f"{TableFolder.of(db.storage, 'erp.t050').folder}/{seq(3)}", parquet(9))
    LocalMirror(root).run_once()
    for name in names[90:]:
        table(db, name, parquet(3), push_id="p2")
    pane = om.widgets.MonitorPane(db)
    yield pane
    pane.close()


def grid_rows(pane) -> list[str]:
    return [part.split("'", 1)[0] for part in pane.grid.value.split("<tr class='om-row' data-table='")[1:]]


def test_a_hundred_tables_show_worst_first_under_a_header_that_stays_in_a_bounded_box(fleet):
    rows = grid_rows(fleet)
    assert len(rows) == 100
    assert rows[:3] == ["erp.t013", "erp.t077", "erp.t050"]  # failed, failed, blocked: on top
    assert rows[3:13] == [f"erp.t{i:03d}" for i in range(90, 100)]  # then the pending ones
    assert rows[13:] == sorted(set(rows[13:]))  # then the ok ones, by name
    assert fleet.table_picker.options[:3] == ("erp.t013", "erp.t077", "erp.t050")
    assert fleet.selected_table == "erp.t013"
    assert fleet.grid.layout.max_height and fleet.grid.layout.overflow == "auto"  # it scrolls
    header = fleet.grid.value.split("<tr class='om-row'", 1)[0]
    assert header.count("position:sticky") == header.count("<th") == 12  # fresh, the sparklines
    assert "100 tables, worst first" in fleet.view.count_line.value


def test_the_filters_narrow_the_grid_and_say_how_many_show(fleet):
    try:
        fleet.filter_box.value = "T07"  # any case
        assert grid_rows(fleet) == ["erp.t077", *(f"erp.t{i:03d}" for i in range(70, 80) if i != 77)]
        assert "showing 10 of 100 tables matching &#x27;T07&#x27;" in fleet.view.count_line.value
        fleet.attention_toggle.value = True
        assert grid_rows(fleet) == ["erp.t077"]
        assert "needing attention only" in fleet.view.count_line.value
        fleet.filter_box.value = ""
        assert grid_rows(fleet) == ["erp.t013", "erp.t077", "erp.t050"]
        fleet.refresh()  # a refresh keeps the filters
        assert grid_rows(fleet) == ["erp.t013", "erp.t077", "erp.t050"]
        fleet.filter_box.value = "nothing like it"
        assert grid_rows(fleet) == [] and "No table matches the filter." in fleet.grid.value
        assert len(fleet.table_picker.options) == 100  # the detail can still show any table
    finally:
        fleet.filter_box.value, fleet.attention_toggle.value = "", False
    assert len(grid_rows(fleet)) == 100
