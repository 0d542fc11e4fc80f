"""Behaviour 1: LocalMirror.run_once / run / start / stop, and the ``mirror`` command."""

from __future__ import annotations

import threading
import time

import pytest

from openmirror_nb._core.cli import mirror_command
from openmirror_nb._core.errors import ConfigError, MirrorError
from openmirror_nb._core.mirror import LocalMirror, MirrorRun


def _wait_for(condition, what):
    # A deadline guards against a hang only; nothing is asserted about how long it took.
    deadline = time.monotonic() + 60
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def test_run_once_returns_what_it_applied_per_table(lz):
    lz.metadata("sales.orders", keyColumns=["id"])
    lz.parquet("sales.orders", 1, [{"id": 1}, {"id": 2}])
    lz.parquet("sales.orders", 2, lz.with_marker([{"id": 1}, {"id": 3}, {"id": 2}], [4, 0, 2]))
    lz.metadata("idle", keyColumns=["id"])
    run = lz.mirror.run_once()
    assert isinstance(run, MirrorRun)
    orders = run["sales.orders"]
    assert orders.files_applied == ("00000000000000000001.parquet", "00000000000000000002.parquet")
    assert orders.sequence_numbers == (1, 2)
    assert (orders.rows_inserted, orders.rows_updated, orders.rows_deleted) == (3, 1, 1)
    assert orders.status == "Replicating" and orders.event == "added"
    assert run["idle"].status == "Snapshotting" and run["idle"].files_applied == ()
    assert "sales.orders" in run and "nope" not in run
    assert "sales.orders: Replicating" in repr(run) and "sales.orders" in run._repr_html_()
    assert run.files_applied == 2 and run.failed == ()
    with pytest.raises(KeyError, match=r"No table 'dbo\.nope'"):
        run["nope"]
    assert lz.mirror.last_run is run
    assert lz.mirror.run_once()["sales.orders"].files_applied == ()


def test_run_loops_until_max_iterations_then_says_stopped(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1}])
    lz.mirror.run(interval=0, max_iterations=2)
    assert lz.mirror.last_run is not None and lz.mirror.last_run["orders"].files_applied == ()
    assert lz.rows("orders") == [{"id": 1}]
    assert lz.monitoring("replicator.json")["status"] == "Stopped"


def test_run_stops_when_its_event_is_set(lz):
    stop = threading.Event()
    stop.set()
    lz.mirror.run(interval=0, stop=stop)
    assert lz.mirror.last_run is None


def test_start_replicates_on_a_thread_until_stop(lz):
    lz.metadata("orders", keyColumns=["id"])
    thread = lz.mirror.start(interval=0.05)
    assert thread.daemon and lz.mirror.is_running
    with pytest.raises(MirrorError, match="already running"):
        lz.mirror.start()
    lz.parquet("orders", 1, [{"id": 1}])

    def replicated():
        try:
            return lz.table_status("orders")["status"] == "Replicating"
        except (FileNotFoundError, AssertionError):  # no pass has finished yet
            return False

    _wait_for(replicated, "file 1")
    lz.mirror.stop()
    assert not thread.is_alive() and not lz.mirror.is_running
    assert lz.monitoring("replicator.json")["status"] == "Stopped"
    assert lz.rows("orders") == [{"id": 1}]


def test_a_pass_cut_short_by_the_interpreter_exiting_is_dropped_not_failed(lz):
    """A kernel restart with the mirror on: the background pass meets the interpreter's exit
    (here, deterministically, after the thread pools are shut down: pyarrow's pandas conversion
    then fails). Nothing is printed, and the table is not marked failed: the pass is dropped."""
    import subprocess
    import sys
    import textwrap

    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1}])
    lz.mirror.run_once()
    lz.parquet("orders", 2, [{"id": 2}])
    code = textwrap.dedent(
        f"""
        import concurrent.futures, threading, time
        import openmirror_nb as om
        from openmirror_nb._core.mirror import folder_pass

        started = threading.Event()

        def sync_at_exit(*args, **kwargs):
            started.set()
            while threading.main_thread().is_alive():  # until the interpreter has begun to exit
                time.sleep(0.01)
            concurrent.futures.ThreadPoolExecutor(1).submit(print)  # raises: pools are shut down

        folder_pass._sync_known = sync_at_exit
        mirror = om.LocalMirror({str(lz.root)!r})
        thread = mirror.start(interval=60)
        assert started.wait(60)
        # not a daemon: the exiting interpreter waits for it, so the mirror's thread meets the exit
        threading.Thread(target=thread.join, args=(60,)).start()
        print("exiting")
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "exiting"
    assert "Traceback" not in run.stderr and "failed" not in run.stderr, run.stderr
    assert lz.table_status("orders")["status"] != "Failed"
    assert lz.monitoring("replicator.json")["status"] == "Stopped"
    lz.mirror.run_once()  # the dropped pass is simply the next one's work
    assert lz.rows("orders") == [{"id": 1}, {"id": 2}]
    assert lz.table_status("orders")["status"] == "Replicating"


def test_a_pass_that_fails_as_a_whole_does_not_end_the_loop(tmp_path):
    mirror = LocalMirror(tmp_path / "nothing-here")
    mirror.run(interval=0, max_iterations=2)
    assert isinstance(mirror.last_error, MirrorError)
    assert not (tmp_path / "nothing-here").exists()


def test_paths_resolve_like_connect(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert LocalMirror().root == tmp_path / "openmirror-db"
    assert LocalMirror(tmp_path / "db" / "Files" / "LandingZone").root == tmp_path / "db"
    assert (
        LocalMirror(f"file://{tmp_path}/db").table_path("sales.orders")
        == tmp_path / "db" / "Tables" / "sales" / "orders"
    )
    assert LocalMirror("db").table_path("orders") == tmp_path / "db" / "Tables" / "dbo" / "orders"


def test_onelake_targets_and_bad_arguments_are_refused(tmp_path):
    with pytest.raises(MirrorError, match="mirrored by Fabric itself"):
        LocalMirror("https://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone")
    with pytest.raises(MirrorError, match="No landing zone at"):
        LocalMirror(tmp_path).run_once()
    with pytest.raises(ConfigError, match="interval"):
        LocalMirror(tmp_path).run(interval=-1)


def test_mirror_command_once_and_loop(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.parquet("orders", 1, [{"id": 1}])
    lines = []
    assert mirror_command(lz.root, once=True, echo=lines.append) == 0
    assert "dbo.orders: Replicating" in lines[0]
    lz.parquet("orders", 2, [{"id": 2}])
    lines.clear()
    assert mirror_command(lz.root, interval=0.01, max_iterations=2, echo=lines.append) == 0
    assert lines[0].startswith("Mirroring ") and "1 file(s) applied (2)" in lines[1]
    lz.publish("orders", "00000000000000000003.parquet", b"")
    assert mirror_command(lz.root, once=True, echo=lines.append) == 1


def test_importing_the_mirror_loads_no_spark():
    import subprocess
    import sys

    code = "import sys, openmirror_nb._core.mirror; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_table_run_renders_for_notebooks(lz):
    lz.metadata("orders", keyColumns=["id"])
    lz.publish("orders", "00000000000000000001.parquet", b"")
    run = lz.mirror.run_once()["orders"]
    assert repr(run).startswith("TableRun(dbo.orders: Failed; added; InputValidationError: We encountered")
    assert run._repr_html_().startswith("<div><b>dbo.orders</b>: Failed")
