"""Crash matrix: a push killed with SIGKILL at every step loses nothing and publishes nothing twice.

Each trial runs one push of a kind (initial load, change feed, snapshot diff) in a real
subprocess and kills it: at each publish step through ``OPENMIRROR_CRASH_AT``, or from this
process while the push's Spark job runs (its tasks block on a gate, so the kill lands mid-job for
certain). The local mirror keeps replicating while the writer is dead. Then recovery (``db.recover``
or simply the next push) and one more push. Afterwards: sequence numbers continuous from 1, no
published file ever replaced (name, inode, size and SHA-256 recorded before and after the kill),
no duplicate row, the mirrored table equal to what was pushed, ``lzcheck`` agreeing, and the
table's key state agreeing too (the final table pushed again as a snapshot has no diff).
"""

from __future__ import annotations

import os
import shutil
import signal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from openmirror_nb._core.landing_zone import TableFolder
from openmirror_nb._core.landing_zone.journal import Journal
from openmirror_nb._core.landing_zone.publish import CRASH_ENV
from tests.conftest import visible_hash
from tests.reliability import rotation
from tests.reliability import workloads as w
from tests.reliability.harness import (
    assert_landing_zone_sound,
    assert_not_overwritten,
    assert_state_knows,
    kill_group,
    published,
    sequence_numbers,
    spawn,
    tail,
    wait_until,
)

pytestmark = pytest.mark.spark

STEPS = ("after_staging", "after_journal", "between_renames", "before_state_commit", "after_state_commit")
JOURNALED = STEPS[1:]
# Kills from outside while a Spark job of the push runs. The push's tasks block (and tell us)
# as soon as the glob matches below the landing zone: "" blocks in the first job that reads the
# DataFrame (initial load and change feed: writing the parts; snapshot diff: the key-state join).
# The diff's second read of the DataFrame (writing the parts) comes once its key state is
# complete, i.e. a second key-state folder holds a _SUCCESS; the map stage before the parts'
# shuffle runs before Spark creates the staging folder, so that folder cannot be the signal.
GATES = {"in_first_spark_job": "", "in_parts_job": f"{w.TABLE}/_openmirror/keystate/*/_SUCCESS#2"}
CASES = [
    *[(kind, step) for kind in w.KINDS for step in STEPS],
    *[(kind, "in_first_spark_job") for kind in w.KINDS],
    ("diff", "in_parts_job"),
    # A feed in one task keeps a copy of its files as its key-state delta: killed while its one
    # job runs, and once files and copy are staged (it publishes one file: no kill between renames).
    ("changes_in_one_task", "in_first_spark_job"),
    ("changes_in_one_task", "after_staging"),
]
# One trial per point keeps CI inside its budget; soak runs raise it (RELIABILITY_TRIALS=5).
TRIALS = int(os.environ.get("RELIABILITY_TRIALS", "1"))
# The points the Runtime 1.3 line runs too (scripts/test --runtime13): each kind, a kill at each stage
# of the publish, and both kills inside a Spark job.
RUNTIME13 = {
    ("initial", "between_renames"),
    ("changes", "after_journal"),
    ("changes", "in_first_spark_job"),
    ("diff", "before_state_commit"),
    ("diff", "in_parts_job"),
    ("changes_in_one_task", "in_first_spark_job"),
}


def _explicit_recover(kind: str, step: str) -> bool:
    """Alternate the two ways a journal is rolled forward, so each step and kind sees both."""
    return (w.KINDS.index(kind) + STEPS.index(step)) % 2 == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "point"),
    [
        pytest.param(
            k,
            p,
            id=f"{k}-{p}" + (f"-trial{t}" if TRIALS > 1 else ""),
            marks=[pytest.mark.runtime13] if (k, p) in RUNTIME13 else [],
        )
        for t in range(TRIALS)
        for k, p in CASES
        if rotation.covers(k)
    ],
)
def test_killed_push_loses_nothing(spark, tmp_path, monkeypatch, kind, point):
    monkeypatch.delenv(CRASH_ENV, raising=False)
    root = tmp_path / "db"
    db = om.connect(root, lock_timeout=120)
    mirror = om.LocalMirror(root)
    folder = db.target.landing_zone / w.TABLE
    if kind != "initial":
        w.setup_push(db, spark)
        mirror.run_once()  # processed files move to _ProcessedFiles, as the service does
    before, tree_before = published(folder), visible_hash(folder)
    log = tmp_path / "child.log"

    if point in STEPS:
        child = spawn(["push", kind, str(root)], log, **{CRASH_ENV: point})
        child.wait(timeout=600)
        assert child.returncode == -signal.SIGKILL, tail(log)
        kill_group(child)  # the JVM and Python workers die with the driver, as in a real crash
    else:
        mark = tmp_path / "gate-reached"
        child = spawn(
            ["push", kind, str(root)], log, RELIABILITY_GATE=GATES[point], RELIABILITY_GATE_MARK=str(mark)
        )
        wait_until(mark.exists, "a Spark task of the push to run", child)
        kill_group(child)
        assert child.returncode == -signal.SIGKILL, tail(log)

    at_crash = published(folder)
    assert_not_overwritten(before, at_crash)
    journaled = db.storage.exists(TableFolder.of(db.storage, w.TABLE).journal_path)
    assert journaled == (point in JOURNALED), tail(log)
    if not journaled:  # nothing the service reads changed: only our own staging may be left
        assert visible_hash(folder) == tree_before
    if journaled:  # where the kill fell: how many of the journaled files were out
        journal = Journal.from_bytes(db.storage.read_bytes(TableFolder.of(db.storage, w.TABLE).journal_path))
        names = [journal.final(e).rsplit("/", 1)[-1] for e in journal.entries]
        out = sum(name in at_crash for name in names)
        assert len(names) >= 2
        expected_out = {"after_journal": 0, "between_renames": 1}.get(point, len(names))
        assert out == expected_out, (names, sorted(at_crash))

    mirror.run_once()  # the service keeps replicating what was published while the writer is dead
    if not journaled:
        w.crash_push(db, spark, kind)  # the push failed visibly; the user runs it again
    elif _explicit_recover(kind, point):
        assert db.recover(w.TABLE)
        assert not db.storage.exists(TableFolder.of(db.storage, w.TABLE).journal_path)
    result = w.next_push(db, spark)  # rolls a pending journal forward first, then publishes
    assert result.sequence_numbers == (sequence_numbers(folder)[-1],)

    mirror.run_once()
    assert_not_overwritten(at_crash, published(folder))
    assert_landing_zone_sound(root, w.TABLE, w.final_rows(kind), db=db)
    assert_state_knows(db, spark, w.TABLE, w.final_rows(kind), w.SCHEMA)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "again"), [("after_journal", "between_renames"), ("between_renames", "before_state_commit")]
)
def test_recovery_killed_midway_is_recovered_again(spark, tmp_path, monkeypatch, first, again):
    """Recovery is itself crash-safe: a roll-forward killed part-way is finished by the next one."""
    monkeypatch.delenv(CRASH_ENV, raising=False)
    root = tmp_path / "db"
    db = om.connect(root, lock_timeout=120)
    mirror = om.LocalMirror(root)
    folder = db.target.landing_zone / w.TABLE
    w.setup_push(db, spark)
    mirror.run_once()
    before = published(folder)
    log = tmp_path / "child.log"
    child = spawn(["push", "changes", str(root)], log, **{CRASH_ENV: first})
    child.wait(timeout=600)
    kill_group(child)
    assert child.returncode == -signal.SIGKILL, tail(log)
    journal = Journal.from_bytes(db.storage.read_bytes(TableFolder.of(db.storage, w.TABLE).journal_path))
    names = [journal.final(e).rsplit("/", 1)[-1] for e in journal.entries]
    out_first = sum(n in published(folder) for n in names)

    child = spawn(["recover", str(root)], log, **{CRASH_ENV: again})
    child.wait(timeout=600)
    kill_group(child)
    assert child.returncode == -signal.SIGKILL, tail(log)
    at_crash = published(folder)
    assert_not_overwritten(before, at_crash)
    assert db.storage.exists(TableFolder.of(db.storage, w.TABLE).journal_path)
    out_again = sum(n in at_crash for n in names)
    assert out_again > out_first  # the killed recovery did publish more before dying

    mirror.run_once()
    w.next_push(db, spark)
    mirror.run_once()
    assert_not_overwritten(at_crash, published(folder))
    assert_landing_zone_sound(root, w.TABLE, w.final_rows("changes"), db=db)
    assert_state_knows(db, spark, w.TABLE, w.final_rows("changes"), w.SCHEMA)


class Killed(BaseException):
    """Stands in for SIGKILL inside this process, raised where the kill would land. The push's
    error handling leaves journaled work alone, so what remains is what the real kills of
    the trials above leave at the same step."""


def _die(storage, journal, *, recovering, **progress):
    raise Killed


def test_a_number_taken_while_the_writer_was_dead_is_never_overwritten(spark, tmp_path, monkeypatch):
    """Another publisher takes the first journaled number while the push is dead: recovery keeps
    that file as it is and renumbers the push after it (no clobber, no gap, nothing lost)."""
    from openmirror_nb._core.landing_zone import publish

    db = om.connect(tmp_path / "db", lock_timeout=30)
    folder = db.target.landing_zone / w.TABLE
    w.setup_push(db, spark)
    with monkeypatch.context() as patch:  # killed right after the journal, as in the matrix above
        patch.setattr(publish, "roll_forward", _die)
        with pytest.raises(Killed):
            w.crash_push(db, spark, "changes")
    journal = Journal.from_bytes(db.storage.read_bytes(TableFolder.of(db.storage, w.TABLE).journal_path))
    taken = journal.entries[0].sequence
    foreign = pa.table({"id": [777], "v": ["foreign"], "n": [7], "__rowMarker__": pa.array([0], pa.int32())})
    pq.write_table(foreign, folder / f"_{taken}.tmp")
    os.rename(folder / f"_{taken}.tmp", folder / f"{taken:020d}.parquet")
    before = published(folder)

    w.next_push(db, spark)
    om.LocalMirror(db.target.root).run_once()
    assert_not_overwritten(before, published(folder))
    expected = w.apply_changes([*w.BASE, (777, "foreign", 7)], [*w.CHANGES, *w.NEXT])
    assert_landing_zone_sound(db.target.root, w.TABLE, expected, db=db)


@pytest.mark.parametrize("linked", [False, True], ids=["renamed", "linked-not-unlinked"])
def test_recovery_tolerates_the_mirror_moving_files_meanwhile(spark, tmp_path, monkeypatch, linked):
    """The service (or a LocalMirror thread) moves processed files to ``_ProcessedFiles`` at any
    moment, also while a recovery looks for them: a file that moves right after the recovery's
    first look for it is still found published, never reported "never published; re-run the push"
    (which, for a change feed, would make the user publish its rows twice) nor published again.

    ``linked``: the kill fell inside the no-clobber rename, between ``link`` and ``unlink``, so the
    part is both published and still staged."""
    from openmirror_nb._core.landing_zone import publish
    from openmirror_nb._core.storage.local import LocalStorage

    db = om.connect(tmp_path / "db", lock_timeout=30)
    folder = db.target.landing_zone / w.TABLE
    w.setup_push(db, spark)

    def crash_at(step):
        if step == "before_state_commit":
            raise Killed

    with monkeypatch.context() as patch:  # every file out, the state not committed
        patch.setattr(publish, "crash_point", crash_at)
        with pytest.raises(Killed):
            w.crash_push(db, spark, "changes")
    journal = Journal.from_bytes(db.storage.read_bytes(TableFolder.of(db.storage, w.TABLE).journal_path))
    first = journal.final(journal.entries[0]).rsplit("/", 1)[-1]
    if linked:
        os.link(folder / first, db.storage.root / journal.entries[0].staged)
    moved = []

    class MirrorMovesFiles(LocalStorage):
        def exists(self, path):
            found = super().exists(path)
            if path.endswith(f"/{first}") and not moved:  # right after the first look, wherever
                mirror.run_once()  # applies the published files and moves all but the newest away
                assert (folder / "_ProcessedFiles" / first).is_file()
                moved.append(first)
            return found

    before = published(folder)
    mirror = om.LocalMirror(db.target.root)
    db.storage = MirrorMovesFiles(db.storage.root)
    assert db.recover(w.TABLE)
    assert moved == [first]
    w.next_push(db, spark)
    mirror.run_once()
    assert_not_overwritten(before, published(folder))
    assert_landing_zone_sound(db.target.root, w.TABLE, w.final_rows("changes"), db=db)


def test_next_push_rolls_forward_an_initial_load_killed_after_its_journal(spark, tmp_path, monkeypatch):
    """The journal, not the caller, knows the keys of a decided initial load (design §4: the next
    operation on the table rolls it forward). Killed in-process right after the journal was written,
    which leaves exactly what the ``initial-after_journal`` trial above leaves."""
    from openmirror_nb._core.landing_zone import publish

    db = om.connect(tmp_path / "db", lock_timeout=30)
    with monkeypatch.context() as patch:
        patch.setattr(publish, "roll_forward", _die)
        with pytest.raises(Killed):
            w.crash_push(db, spark, "initial")
    assert db.storage.exists(TableFolder.of(db.storage, w.TABLE).journal_path)
    assert not db.storage.exists(f"{w.TABLE}/_metadata.json")
    w.next_push(db, spark)  # a change feed names no keys: the table (journal) has them
    om.LocalMirror(db.target.root).run_once()
    assert_landing_zone_sound(db.target.root, w.TABLE, w.final_rows("initial"), db=db)


# A dead push, then the table folder deleted (by hand, as in OneLake explorer, or by db.drop), then
# a reseed with a changed column type; and a drop killed before or after it moved the folder away.
RESEED_CASES = [
    *[
        (step, how)
        for step in ("after_staging", "after_journal", "between_renames")
        for how in ("by_hand", "drop")
    ],
    ("drop_before_move", "drop"),
    ("drop_after_move", "drop"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("point", "how"), RESEED_CASES, ids=[f"{p}-{h}" for p, h in RESEED_CASES])
def test_a_reseed_publishes_only_the_new_life_of_the_table(spark, tmp_path, monkeypatch, point, how):
    """The bug of issue 11: a journal of a dead push was rolled forward into the reseeded table."""
    monkeypatch.delenv(CRASH_ENV, raising=False)
    root = tmp_path / "db"
    db = om.connect(root, lock_timeout=120)
    mirror = om.LocalMirror(root)
    lz, folder = db.target.landing_zone, db.target.landing_zone / w.TABLE
    w.setup_push(db, spark)
    mirror.run_once()
    old = db.describe(w.TABLE).incarnation
    assert old
    log = tmp_path / "child.log"
    verb = ["drop", str(root)] if point.startswith("drop") else ["push", "diff", str(root)]
    child = spawn(verb, log, **{CRASH_ENV: point})
    child.wait(timeout=600)
    assert child.returncode == -signal.SIGKILL, tail(log)
    kill_group(child)
    if point == "drop_after_move":
        assert not folder.exists()  # gone for the service; the rest is in the trash
    elif how == "by_hand":
        shutil.rmtree(folder)
    else:
        dropped = db.drop(w.TABLE)
        assert dropped.existed and dropped.incarnation == old and dropped.removed[0] == w.TABLE
    mirror.run_once()  # the mirror sees the folder gone and drops the table
    assert not (root / "Tables" / "dbo" / w.TABLE).exists()

    result = w.reseed_push(db, spark)
    assert result.rows == {"initial": len(w.RESEED)}
    if point == "drop_after_move":  # the next operation on the table finished the drop
        assert [p.split("/")[1] for p in result.removed] == ["trash"]
    mirror.run_once()

    # exactly the reseeded rows, from the new life's files only
    assert sequence_numbers(folder) == list(result.sequence_numbers)
    assert_landing_zone_sound(root, w.TABLE, w.RESEED, db=db)
    new = db.describe(w.TABLE)
    assert new.incarnation not in (None, old) and [c.type for c in new.columns] == [
        "BIGINT",
        "STRING",
        "DOUBLE",
    ]
    leftovers = [p.relative_to(lz).as_posix() for p in lz.rglob("*") if old in p.name]
    assert leftovers == []  # nothing of the old life under any _openmirror folder
    assert not (lz / "_openmirror").exists()  # no trash, no journal or staging at the root
