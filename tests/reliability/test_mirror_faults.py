"""Mirror faults through the real push path: a bad file fails only its table, the failure names the
sequence number and the reason, and after the documented repair nothing is lost.

Two tables are pushed with ``db.push``; one of them (``bad``) gets a fault injected into its
landing zone: its second file replaced by a zero-byte or truncated file, by a file with marker 3
or with the marker not last, the file taken away (a gap), or a hand-published file whose column
changed type. The other table (``good``) keeps receiving pushes and keeps replicating; ``bad``
keeps receiving pushes too and must apply none of them until repaired. The repair is the
documented one: put a valid file back under the same name (contract §3.5), or, for a type change,
delete and recreate the table folder with all data in the new type (contract §5.1).
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import openmirror_nb as om
from tests.reliability.harness import assert_landing_zone_sound, ordered, table_status
from tests.reliability.workloads import CHANGE_SCHEMA, SCHEMA, apply_changes, frame

pytestmark = pytest.mark.spark

INITIAL = [(i, f"v{i}", i * 10) for i in range(5)]
PUSH_2 = [(10, "ten", 100, 0), (0, "zero", 0, 4), (1, None, None, 2)]
PUSH_3 = [(11, "eleven", 110, 0), (2, "two", 20, 4)]
TYPE_CHANGE = [(3, "three", "thirty", 4)]  # n is now a string
FILE_2 = f"{2:020d}.parquet"
PREFIX = "We encountered an error while parsing data file being used"


def _rewrite(path: Path, change) -> bytes:
    """The bytes of ``path``'s Parquet table after ``change(table)``."""
    sink = io.BytesIO()
    pq.write_table(change(pq.read_table(path)), sink)
    return sink.getvalue()


def _marker_3(table: pa.Table) -> pa.Table:
    i = table.column_names.index("__rowMarker__")
    markers = table.column(i).to_pylist()
    return table.set_column(i, "__rowMarker__", pa.array([3, *markers[1:]], pa.int32()))


def _marker_first(table: pa.Table) -> pa.Table:
    return table.select(["__rowMarker__", *[c for c in table.column_names if c != "__rowMarker__"]])


def _replace(path: Path, data: bytes) -> None:
    """Publish ``data`` under ``path``'s name the way a publisher does: underscore name, then rename."""
    tmp = path.with_name(f"_{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# fault -> what the blocked table reports (tables.json errorMessage)
FAULTS = {
    "zero-byte-file": "The file is empty (0 bytes)",
    "truncated-parquet": "Parquet file cannot be read",
    "marker-3": "Row 1 has __rowMarker__ value 3",
    "marker-not-last": "__rowMarker__ must be the last column; it is column 1 of 4",
    "gap": "Waiting for sequence number 2",
    "column-type-change": "Column 'n' changed type",
}


def _inject(fault: str, file_2: Path, stash: Path):
    """Break ``bad``'s second file; return the documented repair."""
    good = file_2.read_bytes()
    restore = lambda: _replace(file_2, good)  # noqa: E731
    if fault == "zero-byte-file":
        _replace(file_2, b"")
    elif fault == "truncated-parquet":
        _replace(file_2, good[: len(good) // 2])
    elif fault == "marker-3":
        _replace(file_2, _rewrite(file_2, _marker_3))
    elif fault == "marker-not-last":
        _replace(file_2, _rewrite(file_2, _marker_first))
    elif fault == "gap":
        os.replace(file_2, stash)  # not yet arrived
        restore = lambda: os.link(stash, file_2)  # noqa: E731
    else:
        raise ValueError(fault)
    return restore


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_fails_only_its_table_until_repaired(spark, tmp_path, fault):
    root = tmp_path / "db"
    db = om.connect(root, lock_timeout=30)
    mirror = om.LocalMirror(root)
    lz = db.target.landing_zone

    def push(table, rows, *, changes=True):
        if changes:
            return db.push(frame(spark, rows, CHANGE_SCHEMA, 1), table=table, mode="changes", op_column="op")
        return db.push(frame(spark, rows, SCHEMA, 1), table=table, keys=["id"])

    for table in ("bad", "good"):
        push(table, INITIAL, changes=False)
    assert mirror.run_once().failed == ()
    for table in ("bad", "good"):
        assert push(table, PUSH_2).sequence_numbers == (2,)
    expected = apply_changes(INITIAL, PUSH_2)

    if fault == "column-type-change":  # the source changed n's type; its publisher wrote file 3 as is
        changed = pa.table(
            {
                "id": pa.array([3], pa.int64()),
                "v": ["three"],
                "n": ["thirty"],
                "__rowMarker__": pa.array([4], pa.int32()),
            }
        )
        sink = io.BytesIO()
        pq.write_table(changed, sink)
        _replace(lz / "bad" / f"{3:020d}.parquet", sink.getvalue())
        failing, applied = 3, (1, 2)
    else:
        repair = _inject(fault, lz / "bad" / FILE_2, tmp_path / FILE_2)
        failing, applied = 2, (1,)

    run = mirror.run_once()
    status = table_status(root, "bad")
    if fault == "gap":  # nothing after the missing file yet: nothing to apply, nothing wrong
        assert run["bad"].files_applied == () and status["status"] == "Replicating"
    else:
        assert run["bad"].status == "Failed" and status["status"] == "Failed"
        assert status["errorMessage"] == run["bad"].error
        assert FAULTS[fault] in status["errorMessage"]
        assert status["errorMessage"].endswith(f"SequenceNumber: {failing}")
        if fault == "column-type-change":
            assert status["errorCode"] == "SchemaChangeNotSupported"
        else:
            assert status["errorCode"] == "InputValidationError" and status["errorMessage"].startswith(PREFIX)
    assert run["good"].status == "Replicating" and run["good"].sequence_numbers == (2,)

    # Both tables keep receiving pushes; only the good one applies them.
    bad_3 = push("bad", PUSH_3).sequence_numbers
    assert bad_3 == (failing + 1,)  # never reuses the broken or missing number
    push("good", PUSH_3)
    run = mirror.run_once()
    assert run["bad"].files_applied == ()
    if fault == "gap":  # a gap blocks the table: later files wait (contract §3.5); it is not Failed
        status = table_status(root, "bad")
        assert run["bad"].missing_sequence == 2 and status["status"] == "Replicating"
        assert status["errorCode"] == "" and FAULTS[fault] in status["errorMessage"]
    assert run["good"].status == "Replicating" and run["good"].sequence_numbers == (3,)
    assert mirror.run_once()["bad"].files_applied == ()  # and stays blocked
    expected = apply_changes(expected, PUSH_3)
    assert_landing_zone_sound(root, "good", expected, db=db)

    if fault == "column-type-change":
        # The documented repair: delete the folder, let the mirror drop the table, recreate it
        # with all data in the new type.
        shutil.rmtree(lz / "bad")
        assert mirror.run_once()["bad"].event == "dropped"
        current = {r[0]: (r[0], r[1], str(r[2])) for r in expected}
        current[3] = TYPE_CHANGE[0][:3]
        reload_rows = sorted(current.values())
        push_df = spark.createDataFrame(reload_rows, "id long, v string, n string")
        assert db.push(push_df, table="bad", keys=["id"]).sequence_numbers == (1,)
        expected_bad = reload_rows
    else:
        repair()
        expected_bad = expected
    run = mirror.run_once()
    assert run["bad"].status == "Replicating"
    if fault != "column-type-change":
        assert run["bad"].sequence_numbers == (*range(applied[-1] + 1, bad_3[0] + 1),)
    assert_landing_zone_sound(root, "bad", ordered(expected_bad), db=db)
    assert_landing_zone_sound(root, "good", expected, db=db)
