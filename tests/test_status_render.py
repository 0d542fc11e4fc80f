"""How a ``StatusReport`` reads, from records built by hand: the git-status-like text, the HTML grid
(one row per table, a badge per health, the advice under a problem, everything escaped), the JSON
of ``openmirror status --json``, ``to_pandas`` and the sparkline. Pure: no I/O."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from openmirror_nb._core.landing_zone.blockers import Blocker
from openmirror_nb._core.landing_zone.table_scan import DataFileInfo
from openmirror_nb._core.status import COLUMNS, Reconciliation, ReplicatorStatus, StatusReport, TableStatus
from openmirror_nb._core.status.render import ago, sparkline_svg
from openmirror_nb._core.status.report import as_html, as_json

NOW = datetime(2025, 5, 20, 12, 0, 0, tzinfo=UTC)
GAP = Blocker("gap", "file 00000000000000000002.parquet is missing: file 3 waits for it.", "2.parquet")
STAGING = Blocker("orphaned_staging", "staging was left by a push that died.", "_openmirror/x")
EMPTY = Blocker(
    "zero_byte", "file 00000000000000000004.parquet is empty (0 bytes).", "00000000000000000004.parquet"
)


def file(n: int, *, age: float = 30.0) -> DataFileInfo:
    return DataFileInfo(f"{n:020d}.parquet", n, 100 * n, NOW.timestamp() - age)


def tables() -> tuple[TableStatus, ...]:
    return (
        TableStatus(
            "bad",
            "bad",
            "failed",
            "Failed",
            pending=(file(4),),
            blockers=(EMPTY,),
            error_code="InputValidationError",
            error="<script>alert(1)</script> SequenceNumber: 4",
            failed_file="00000000000000000004.parquet",
            last_sequence=4,
            processed_rows=9,
        ),
        TableStatus("gap", "gap", "blocked", "Replicating", pending=(file(3),), blockers=(STAGING, GAP)),
        TableStatus(
            "sales.ok",
            "sales.schema/ok",
            "ok",
            "Replicating",
            processed_files=3,
            mirrored_rows=1234,
            state_rows=1234,
            last_sync=NOW - timedelta(seconds=40),
            lag_seconds=0.0,
            reconciliation=Reconciliation(
                "sales.ok",
                1234,
                1234,
                None,
                "match",
                "the mirrored table and the key state agree: 1,234 rows.",
            ),
        ),
        TableStatus(
            "sales.waits",
            "sales.schema/waits",
            "pending",
            "Replicating",
            pending=(file(7, age=300), file(8, age=10)),
            lag_seconds=300.0,
            last_push=NOW - timedelta(minutes=5),
        ),
    )


def report(**overrides) -> StatusReport:
    fields = {
        "target": "/data/db",
        "taken_at": NOW,
        "replicator": ReplicatorStatus(
            "Running", heartbeat=NOW - timedelta(seconds=12), heartbeat_age=12.0, source="replicator.json"
        ),
        "tables": tables(),
        "foreign": ("readme.txt: a file at the landing-zone root, not a table; the mirror ignores it.",),
        "notes": ("The Fabric REST status could not be read (HTTP 429); <b>showing</b> the files.",),
    }
    return StatusReport(**{**fields, **overrides})


def test_text_lists_every_table_with_its_health_and_the_fix_under_a_problem():
    text = str(report())
    lines = text.splitlines()
    assert lines[0] == "Mirrored database /data/db (replicator Running, heartbeat 12 s ago)"
    assert lines[1].startswith("4 table") and all(f"1 {h}" in lines[1] for h in ("failed", "blocked", "ok"))
    for health, name in (
        ("failed", "bad"),
        ("blocked", "gap"),
        ("ok", "sales.ok"),
        ("pending", "sales.waits"),
    ):
        assert sum(line.startswith(f"  {health:<8} {name} ") for line in lines) == 1
    bad = next(line for line in lines if line.startswith("  failed"))
    assert bad.endswith(f"the mirror failed: {EMPTY.message}")  # the listing's word for the failed file
    gap = lines.index(next(line for line in lines if line.startswith("  blocked")))
    assert lines[gap].endswith(GAP.message)  # the stopping blocker first, before the staging
    assert lines[gap + 1].strip() == f"-> {STAGING.message}"
    assert "3 processed, 1,234 rows, synced 40 s ago" in text
    assert "2 pending, oldest waiting 5 min" in text
    assert "rows: the mirrored table and the key state agree: 1,234 rows." in text
    assert (
        text.index("Not tables:") < text.index("readme.txt") < text.index("Notes:") < text.index("HTTP 429")
    )
    assert repr(report()) == text and not text.endswith("\n")


def test_text_of_a_database_without_tables():
    empty = report(tables=(), foreign=(), notes=())
    assert empty.health == "ok" and empty.needs_attention == ()
    assert str(empty).splitlines()[1] == "0 tables"


def test_html_has_one_row_per_table_a_badge_per_health_and_advice_for_problems():
    page = as_html(report())
    rows = re.findall(
        r"<tr class='om-row' data-table='([^']*)'><td><span class='om-badge om-badge-(\w+)'", page
    )
    assert rows == [("bad", "failed"), ("gap", "blocked"), ("sales.ok", "ok"), ("sales.waits", "pending")]
    advice = re.findall(r"<tr class='om-advice' data-table='([^']*)'", page)
    assert advice == ["bad", "gap"]
    assert "om-badge-failed" in page.split("<table>")[0]  # the database badge is the worst table's
    assert "<script>" not in page and "<b>showing</b>" not in page
    assert "&lt;b&gt;showing&lt;/b&gt;" in page and "readme.txt" in page
    assert report()._repr_html_() == page


def test_html_escapes_the_mirrors_error_text():
    hostile = tables()[0]
    without_blocker = TableStatus(**{**hostile.__dict__, "blockers": ()})
    page = as_html(report(tables=(without_blocker,)))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    detail = without_blocker.to_html(now=NOW)
    assert "<script>" not in detail and "InputValidationError: &lt;script&gt;" in detail


def test_detail_lists_pending_files_and_cuts_a_long_list():
    many = TableStatus("t", "t", "pending", "Replicating", pending=tuple(file(n) for n in range(1, 61)))
    detail = many.to_html(now=NOW)
    assert detail.count("<code>") == 50 and "... and 10 more" in detail
    assert "<code>00000000000000000050.parquet</code>" in detail and "00000000000000000051" not in detail
    assert "No pending files." in tables()[2].to_html(now=NOW)


def test_json_is_serialisable_with_iso_times_pending_names_and_advice():
    doc = json.loads(json.dumps(as_json(report())))
    assert doc == report().to_dict() and doc["taken_at"] == NOW.isoformat()
    assert doc["health"] == "failed" and doc["target"] == "/data/db"
    assert doc["replicator"]["heartbeat"] == (NOW - timedelta(seconds=12)).isoformat()
    assert [t["table"] for t in doc["tables"]] == ["bad", "gap", "sales.ok", "sales.waits"]
    assert set(COLUMNS) | {"pending", "advice"} == set(doc["tables"][0])
    waits = doc["tables"][3]
    assert waits["pending"] == ["00000000000000000007.parquet", "00000000000000000008.parquet"]
    assert waits["pending_files"] == 2 and waits["last_push"] == (NOW - timedelta(minutes=5)).isoformat()
    assert doc["tables"][0]["advice"][0] == f"the mirror failed: {EMPTY.message}"
    assert doc["tables"][2]["source_rows"] is None and doc["tables"][2]["mirrored_rows"] == 1234
    assert doc["notes"] == list(report().notes) and doc["foreign"] == list(report().foreign)


def test_to_pandas_has_the_columns_and_one_row_per_table():
    frame = report().to_pandas()
    assert tuple(frame.columns) == COLUMNS and len(frame) == 4
    assert list(frame["health"]) == ["failed", "blocked", "ok", "pending"]
    assert list(frame["pending_files"]) == [1, 1, 0, 2]
    assert str(frame["mirrored_rows"].dtype) == "Int64" and frame["mirrored_rows"].isna().tolist() == [
        True,
        True,
        False,
        True,
    ]
    assert frame.loc[1, "blocked_by"] == GAP.message  # the stopping blocker, not the first one
    empty = report(tables=()).to_pandas()
    assert tuple(empty.columns) == COLUMNS and len(empty) == 0
    assert isinstance(empty, pd.DataFrame)


def test_health_is_the_worst_table_and_attention_is_failed_or_blocked():
    full = report()
    assert full.health == "failed"
    assert [t.table for t in full.needs_attention] == ["bad", "gap"]
    calm = report(tables=tables()[2:])
    assert calm.health == "pending" and calm.needs_attention == ()
    assert full["SALES.OK"].table == "sales.ok"
    with pytest.raises(KeyError):
        full["nope"]


def test_advice_of_a_type_change_says_only_a_reseed_fixes_it():
    changed = TableStatus(
        "sales.orders",
        "sales.schema/orders",
        "failed",
        "Failed",
        error_code="SchemaChangeNotSupported",
        error="Column 'v' changed type from string to int64",
        failed_file="00000000000000000002.parquet",
        notes=("a note",),
    )
    assert changed.advice == (
        "the mirror failed on file 00000000000000000002.parquet: Column 'v' changed type from string to int64",
        "a column changed in a way the mirror cannot absorb: only a reseed fixes it "
        "(db.drop('sales.orders', wait=True), then push the table again).",
        "a note",
    )


def test_reconciliation_repr_names_every_count():
    recon = Reconciliation("t", 10, None, 7, "mismatch", "they differ.")
    assert repr(recon) == "Reconciliation(t: mismatch; mirrored 10, key state ?, source 7; they differ.)"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (0.4, "0 s"),
        (119, "119 s"),
        (120, "2 min"),
        (7199, "120 min"),
        (7200, "2.0 h"),
        (172800, "2.0 d"),
    ],
)
def test_ago(seconds, text):
    assert ago(seconds) == text


def test_sparkline_points_span_the_width_and_scale_to_the_largest_value():
    assert sparkline_svg([]) == ""
    svg = sparkline_svg([0, 5, 10], width=90, height=18)
    assert svg.startswith("<svg class='om-spark' width='90' height='18' viewBox='0 0 90 18'")
    points = re.search(r"points='([^']*)'", svg)
    assert points is not None and points.group(1) == "0.0,17.0 45.0,9.0 90.0,1.0"
    flat = re.search(r"points='([^']*)'", sparkline_svg([0, 0, 0, 0], width=30, height=10))
    assert flat is not None and flat.group(1) == "0.0,9.0 10.0,9.0 20.0,9.0 30.0,9.0"  # no division by zero
    one = re.search(r"points='([^']*)'", sparkline_svg([3]))
    assert one is not None and one.group(1) == "0.0,1.0 90.0,1.0"  # one reading: a visible flat line
