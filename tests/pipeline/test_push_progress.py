"""The push's progress seam and its cancel: the events a real push sends, in order, and what an
interrupt does before and after the push is decided (the landing zone untouched, or the push
finished)."""

from __future__ import annotations

import io
import os
import signal
import threading

import pytest

from openmirror_nb._core.errors import KeyColumnsError, PushCancelledError
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.progress import (
    Cancelled,
    Committing,
    Finished,
    Publishing,
    PushFailed,
    Staging,
    TextProgress,
    Validating,
    WaitingForLock,
    WidgetProgress,
)

pytestmark = pytest.mark.spark


def orders(spark, n=3000, parts=3):
    return spark.range(0, n, numPartitions=parts).selectExpr("id AS order_id", "id * 2 AS qty")


def kinds(events):
    return [type(e).__name__ for e in events]


def test_a_push_reports_each_phase_in_order_with_sparks_counts(spark, db):
    events = []
    result = db.push(
        orders(spark), table="sales.orders", keys=["order_id"], rows_per_file=1000, progress=events.append
    )
    order = kinds(events)
    assert order[0] == "Validating" and order[-2:] == ["Committing", "Finished"]
    # phases never go back: validating, staging..., publishing..., committing, finished
    phases = [k for i, k in enumerate(order) if i == 0 or k != order[i - 1]]
    assert phases == ["Validating", "Staging", "Publishing", "Committing", "Finished"]
    staging = [e for e in events if isinstance(e, Staging)]
    steps = list(dict.fromkeys(e.step for e in staging if e.step))
    assert steps[:3] == ["writing the data files", "writing the key state", "checking the keys"], steps
    counted = [e for e in staging if e.stages]
    assert counted, "Spark's stage and task counts reach the callback"
    assert all(0 <= e.stages_done <= e.stages and 0 <= e.tasks_done <= e.tasks for e in counted)
    published = [e for e in events if isinstance(e, Publishing)]
    assert [(e.file, e.files) for e in published] == [(1, 3), (2, 3), (3, 3)]
    assert [e.name for e in published] == list(result.files)
    assert events[-1].result == result
    assert all(e.table == "sales.orders" for e in events)
    # the Spark-count thread stamps its events too: only the phases' own order is guaranteed
    assert events[-1].elapsed == max(e.elapsed for e in events)


def test_the_users_job_group_is_left_as_it_was(spark, db):
    sc = spark.sparkContext
    sc.setLocalProperty("spark.jobGroup.id", "mine")
    try:
        db.push(orders(spark, 10, 1), table="t", keys=["order_id"], progress=lambda e: None)
        assert sc.getLocalProperty("spark.jobGroup.id") == "mine"
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)


def test_a_rejected_push_ends_with_failed_and_publishes_nothing(spark, db):
    events = []
    bad = spark.createDataFrame([(1, "a"), (1, "b")], "order_id long, v string")
    with pytest.raises(KeyColumnsError):
        db.push(bad, table="t", keys=["order_id"], progress=events.append)
    assert isinstance(events[-1], PushFailed) and "duplicate" in events[-1].error.lower()
    assert not any(isinstance(e, Publishing | Finished) for e in events)


def test_waiting_for_another_writer_is_reported_with_its_holder(spark, db):
    home = TableFolder.of(db.storage, "t")
    taken, release, events = threading.Event(), threading.Event(), []

    def writer():
        with home.lock(timeout=5):
            taken.set()
            release.wait(30)

    other = threading.Thread(target=writer)
    other.start()
    taken.wait(10)

    def progress(event):
        events.append(event)
        if isinstance(event, WaitingForLock):
            release.set()  # the other writer finishes once we are seen waiting

    try:
        db.push(orders(spark, 10, 1), table="t", keys=["order_id"], progress=progress)
    finally:
        release.set()
        other.join(10)
    waits = [e for e in events if isinstance(e, WaitingForLock)]
    assert len(waits) == 1 and waits[0].holder and str(os.getpid()) in waits[0].holder
    assert isinstance(events[-1], Finished)


def test_an_interrupt_while_staging_leaves_the_landing_zone_untouched(spark, db, lz_hash):
    db.push(orders(spark, 100, 1), table="t", keys=["order_id"], progress=False)
    before = lz_hash(db.target.landing_zone)
    events = []

    def progress(event):
        events.append(event)
        if isinstance(event, Staging):
            raise KeyboardInterrupt  # what the notebook's stop button raises in the pushing thread

    with pytest.raises(
        PushCancelledError, match="cancelled before it was decided: nothing was published"
    ) as err:
        db.push(orders(spark, 200, 1), table="t", progress=progress)
    assert err.value.decided is False
    assert isinstance(events[-1], Cancelled) and not events[-1].decided
    assert lz_hash(db.target.landing_zone) == before


def test_an_interrupt_after_the_decision_waits_until_the_push_is_published(spark, db):
    events = []

    def progress(event):
        events.append(event)
        if isinstance(event, Publishing) and event.file == 1:
            os.kill(os.getpid(), signal.SIGINT)  # a real interrupt, mid-publish

    with pytest.raises(
        PushCancelledError, match="cancelled after it was decided, so it finished first"
    ) as err:
        db.push(orders(spark), table="t", keys=["order_id"], rows_per_file=1000, progress=progress)
    assert err.value.decided is True
    home = TableFolder.of(db.storage, "t")
    assert home.last_sequence_number() == 3 and home.read_state().last_sequence_number == 3
    assert home.read_journal() is None  # nothing left to roll forward: it finished
    assert [type(e) for e in events[-3:]] == [Publishing, Committing, Cancelled] and events[-1].decided
    assert signal.getsignal(signal.SIGINT) is not None  # the handler was put back


def test_a_callback_that_raises_does_not_break_the_push(spark, db):
    def broken(event):
        raise RuntimeError("display went away")

    result = db.push(orders(spark, 10, 1), table="t", keys=["order_id"], progress=broken)
    assert result.sequence_numbers == (1,)


def test_text_progress_writes_one_line_per_phase():
    out = io.StringIO()
    show = TextProgress(out)
    for event in [
        Validating("t", 0.0),
        Staging("t", 0.1),
        Staging("t", 0.5, step="writing the data files", stages_done=0, stages=2, tasks_done=1, tasks=8),
        Staging("t", 0.9, step="writing the data files", stages_done=1, stages=2, tasks_done=6, tasks=8),
        Publishing("t", 1.0, file=1, files=3, name="a"),
        Publishing("t", 1.1, file=2, files=3, name="b"),
        Publishing("t", 1.2, file=3, files=3, name="c"),
        Committing("t", 1.3),
        Finished("t", 1.4),
    ]:
        show(event)
    lines = out.getvalue().splitlines()
    assert len(lines) == 7, lines
    assert lines[0].endswith("t: validating names, keys and types")
    assert lines[2].endswith("staging on Spark: writing the data files (stage 1 of 2, 1 of 8 tasks)")
    assert "publishing file 1 of 3 (a)" in lines[3] and "publishing file 3 of 3 (c)" in lines[4]


def test_text_progress_drops_repeats_per_table_when_tables_interleave():
    out = io.StringIO()
    show = TextProgress(out)
    step = "writing the data files"
    for event in [
        Validating("a", 0.0),
        Validating("b", 0.0),
        Staging("a", 0.2, step=step),
        Staging("b", 0.3, step=step),
        Staging("a", 0.4, step=step),  # a repeat of a's own line: dropped
        Finished("b", 0.5),
        Finished("a", 0.6),
        Finished("a", 0.7),  # a repeat: dropped
    ]:
        show(event)
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "a: validating names, keys and types",
        "b: validating names, keys and types",
        f"a: staging on Spark: {step}",
        f"b: staging on Spark: {step}",
        "b: done",
        "a: done",
    ]


def test_widget_progress_moves_and_ends_green_or_red():
    bar = WidgetProgress()
    bar(Validating("t", 0.0))
    bar(Staging("t", 0.5, stages_done=1, stages=2, tasks_done=4, tasks=8))
    middle = bar.bar.value
    assert 5 < middle < 80
    bar(Publishing("t", 1.0, file=1, files=2, name="x"))
    assert bar.bar.value > middle
    bar(Finished("t", 2.0))
    assert bar.bar.value == 100 and bar.bar.bar_style == "success"
    failed = WidgetProgress()
    failed(PushFailed("t", 0.3, error="Key column 'id' has 2 NULL values"))
    assert failed.bar.bar_style == "danger" and "2 NULL values" in failed.label.value
    assert "openmirror-progress" in failed.widget._dom_classes
