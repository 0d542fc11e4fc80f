"""Freshness (issue 43) on landing zones built by the real publish protocol (no Spark) and
replicated by the real local mirror: the per-file summaries, the published and applied figures,
the age (growing while nothing moves, unknown rather than 0), the skew correction, the Fabric
upper bound, goals, and unknown REST status values passed through."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import UTC, datetime

import pandas as pd
import pytest

import openmirror_nb as om
from openmirror_nb._core.errors import ConfigError, LandingZoneError
from openmirror_nb._core.fabric.status import MirroringStatus, TableMirroringStatus
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.freshness_log import SourceTimes, read_log
from openmirror_nb._core.landing_zone.publish import publish, roll_forward
from openmirror_nb._core.landing_zone.stream_freshness import BatchMark
from openmirror_nb._core.status import Sources, build_report
from openmirror_nb._core.status.freshness import percentile, table_freshness
from openmirror_nb._core.status.sources import database_sources
from openmirror_nb._core.storage.local import LocalStorage
from tests.journals import staged_journal
from tests.test_table_scan import parquet, seq

SOURCE_TO_TOPIC, TOPIC_TO_PUBLISHED, PUBLISHED_TO_APPLIED = (
    "source → topic",
    "topic → published",
    "published → applied",
)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "db"


@pytest.fixture
def db(root):
    return om.connect(root)


def push(db, table: str, *parts: bytes, times: SourceTimes | None, push_id: str):
    """Publish ``parts`` with the real protocol, carrying ``times`` as a push would."""
    home = TableFolder.of(db.storage, table)
    journal = staged_journal(home, list(parts), push_id=push_id)
    journal = replace(journal, freshness=times.to_doc() if times else None)
    with home.lock(timeout=5):
        home.write_journal(journal)
        publish(home, journal)
    return home


def report(db, *, at: float | None = None, sources: Sources | None = None):
    now = datetime.fromtimestamp(at, UTC) if at is not None else None
    return build_report(str(db.target), sources or database_sources(db.target, db.storage), now=now)


def commit(oldest: float, newest: float, **more) -> SourceTimes:
    return SourceTimes("commit", oldest, newest, **more)


def test_published_and_applied_figures_and_an_age_that_grows_while_nothing_moves(db, root):
    t0 = time.time()
    times = commit(t0 - 10, t0 - 4, topic_oldest=t0 - 9, topic_newest=t0 - 3, skew=0.0, skew_error=0.001)
    home = push(db, "orders", parquet(1, 2), parquet(3), times=times, push_id="p1")
    log = read_log(db.storage, home.internal)
    assert [f.name for f in log.files] == [seq(1), seq(2)] and all(f.source == times for f in log.files)
    assert all(t0 <= f.published <= time.time() for f in log.files)

    before = report(db)["orders"]  # published, not applied: applied and age are unknown, not 0
    assert before.freshness is not None and before.freshness.age is None
    assert before.freshness.applied.files == 0 and before.freshness.applied.p95 is None
    assert before.freshness.published.p50 == pytest.approx(log.files[0].published - (t0 - 10), abs=0.5)

    om.LocalMirror(root).run_once()
    now = time.time()
    found = report(db, at=now)["orders"].freshness
    assert found is not None and found.applied_bound == "exact" and found.applied.files == 2
    assert found.age == pytest.approx(now - (t0 - 4), abs=0.01)
    assert found.applied.p95 is not None and found.published.p95 is not None
    assert found.applied.p95 >= found.published.p95 > 10
    stages = {s.name: s.figure for s in found.stages}
    assert list(stages) == [SOURCE_TO_TOPIC, TOPIC_TO_PUBLISHED, PUBLISHED_TO_APPLIED]
    assert stages[SOURCE_TO_TOPIC].latest == pytest.approx(1.0)
    # the stages of the newest file add up to its applied figure
    assert sum(s.latest for s in stages.values() if s.latest is not None) == pytest.approx(
        found.applied.latest
    )
    assert [p.sequence for p in found.history] == [1, 2]

    stopped = report(db, at=now + 600)["orders"].freshness  # nothing new for 10 minutes
    assert stopped is not None and stopped.age == pytest.approx(found.age + 600, abs=0.01)
    assert stopped.applied.p95 == found.applied.p95  # the figures stand; only the age grows
    row = report(db, at=now)["orders"].row()
    assert (
        row["age_seconds"] == pytest.approx(found.age, abs=0.01) and row["applied_p95"] == found.applied.p95
    )


def test_a_table_with_no_source_times_has_an_unknown_age_not_zero(db, root):
    push(db, "feed", parquet(1), times=None, push_id="p1")  # a change feed: no source times
    om.LocalMirror(root).run_once()
    found = report(db)
    status = found["feed"]
    assert status.freshness is not None and status.freshness.age is None
    assert status.freshness.published.files == 0 and status.freshness.text.startswith("age -")
    assert [s.name for s in status.freshness.stages] == [PUBLISHED_TO_APPLIED]
    frame = found.to_pandas()
    assert all(pd.isna(frame.loc[0, c]) for c in ("age_seconds", "applied_p95", "published_p50"))


def test_a_measured_skew_moves_source_times_onto_this_clock(db, root):
    t0 = time.time()
    # the source's clock runs 300 s ahead: its commit 10 s ago reads t0 + 290 there
    times = commit(t0 + 290, t0 + 292, skew=300.0, skew_error=0.002)
    push(db, "ahead", parquet(1), times=times, push_id="p1")
    om.LocalMirror(root).run_once()
    found = report(db)["ahead"].freshness
    assert found is not None and found.skew == 300.0 and found.skew_error == 0.002
    assert found.published.latest is not None and 10 <= found.published.latest < 15
    assert found.age is not None and 8 <= found.age < 13


def test_in_fabric_applied_is_the_first_status_read_that_shows_the_file_processed(db, root):
    t0 = time.time()
    home = push(db, "t", parquet(1), parquet(2), times=commit(t0 - 30, t0 - 20), push_id="p1")
    synced = time.time() + 5
    rest = [TableMirroringStatus(None, "t", "Replicating", last_sync=datetime.fromtimestamp(synced, UTC))]
    sources = replace(
        database_sources(db.target, db.storage),
        applied=None,
        rest_database=lambda: MirroringStatus("Running"),
        rest_tables=lambda: rest,
    )
    first = report(db, sources=sources)["t"].freshness
    assert first is not None and first.applied_bound == "upper" and first.applied.files == 2
    assert first.applied.latest == pytest.approx(synced - (t0 - 30), abs=0.01)
    # kept at the root, not in the table folder (a status read holds no lock)
    assert db.storage.exists(f"_openmirror/freshness/{home.lock_name}.json")
    assert not db.storage.exists(f"{home.internal}/freshness.applied.json")

    rest[0] = replace(rest[0], last_sync=datetime.fromtimestamp(synced + 3600, UTC))
    later = report(db, sources=sources)["t"].freshness
    assert later is not None and later.applied.latest == first.applied.latest  # the first read's bound stays


def test_a_push_with_nothing_new_and_a_stream_batch_prove_a_table_current(db, root):
    t0 = time.time()
    home = push(db, "t", parquet(1), times=commit(t0 - 100, t0 - 90), push_id="p1")
    om.LocalMirror(root).run_once()
    status = report(db, at=t0)["t"]
    assert status.freshness is not None and status.freshness.age == pytest.approx(90, abs=0.01)
    # a batch of heartbeats only: nothing for t, but every change before t0 - 2 is in file 1
    heartbeat = BatchMark("q1", 7, t0 - 1, commit(t0 - 2, t0 - 2), {"t": 1})
    ahead = BatchMark("q1", 8, t0, commit(t0 - 1, t0 - 1), {"t": 2})  # file 2 not applied: no proof
    found = table_freshness(
        status, home, applied=None, goal=None, batches=[(heartbeat, 1), (ahead, 2)], now=t0
    )
    assert found.age == pytest.approx(2, abs=0.01)


def test_a_roll_forward_run_again_records_each_file_once(db):
    home = TableFolder.of(db.storage, "t")
    journal = replace(
        staged_journal(home, [parquet(1), parquet(2)], push_id="p1"), freshness=commit(1.0, 2.0).to_doc()
    )
    with home.lock(timeout=5):
        home.write_journal(journal)
        roll_forward(home, journal, recovering=False)
        home.write_journal(journal)  # as if the process died before the journal was deleted
        roll_forward(home, journal, recovering=True)
    assert [f.sequence for f in read_log(db.storage, home.internal).files] == [1, 2]


def test_a_goal_missed_warns_naming_the_slow_stage_and_bad_goals_are_refused(db, root, lz_hash):
    t0 = time.time()
    push(db, "t", parquet(1), times=commit(t0 - 400, t0 - 400, topic_oldest=t0 - 2), push_id="p1")
    om.LocalMirror(root).run_once()
    assert report(db)["t"].health == "ok"

    before = lz_hash(root)
    for bad in (0, -5, "soon", True, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="positive number of seconds") as refused:
            db.set_freshness_goal("t", seconds=bad)
        assert repr(bad) in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(LandingZoneError, match=r"'tt'.*t"):
        db.set_freshness_goal("tt", seconds=60)
    assert lz_hash(root) == before

    db.set_freshness_goal("t", seconds=60)
    status = report(db)["t"]
    assert status.health == "warning" and status.freshness is not None and status.freshness.goal == 60
    missed = status.freshness.missed
    assert missed.startswith("freshness goal 60 s missed: age ") and "applied p95" in missed
    assert f"the slow stage is {SOURCE_TO_TOPIC}" in missed and missed in status.notes
    assert db.freshness("t").missed == missed and report(db).to_pandas().loc[0, "freshness_goal"] == 60

    db.set_freshness_goal("t", seconds=None)
    assert report(db)["t"].health == "ok" and db.freshness("t").goal is None


def test_status_values_the_rest_api_does_not_know_are_passed_through(db, root):
    push(db, "t", parquet(1), times=None, push_id="p1")
    rest = [TableMirroringStatus(None, "t", "Throttled", processed_rows=3)]
    sources = replace(
        database_sources(db.target, db.storage),
        rest_database=lambda: MirroringStatus("Degraded"),
        rest_tables=lambda: rest,
    )
    found = report(db, sources=sources)
    assert found.replicator.status == "Degraded" and found["t"].status == "Throttled"
    assert "Throttled" in str(found) and found.to_pandas().loc[0, "status"] == "Throttled"
    assert json.loads(json.dumps(found.to_dict(), default=str))["tables"][0]["status"] == "Throttled"


def test_percentile_interpolates_between_ranks():
    assert percentile([5.0], 95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile(list(map(float, range(1, 21))), 95) == pytest.approx(19.05)


def test_a_local_storage_log_that_cannot_be_read_is_unknown_not_an_error(db, root):
    home = push(db, "t", parquet(1), times=commit(1.0, 2.0), push_id="p1")
    LocalStorage(root / "Files" / "LandingZone").write_bytes(
        f"{home.internal}/freshness.json", b"{not json", overwrite=True
    )
    status = report(db)["t"]
    assert status.health != "failed" and status.freshness is None
