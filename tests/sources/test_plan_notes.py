"""A planned table's notes, without Spark: a key only today's rows make unique says its evidence
(rows profiled, distinct values), its risk and what to do; a keyless table the source numbers rows
of is planned insert-only (``append``) before any key its rows would suggest; the plan's summary
counts the suggested keys, and its text, HTML and grid rows show the notes."""

from __future__ import annotations

import pytest

import openmirror_nb as om
from openmirror_nb._core.sources import notes
from openmirror_nb._core.sources.plan_strategy import strategy_for
from openmirror_nb._core.table_info import ColumnInfo

COLUMNS = [("tid", "int"), ("bid", "int"), ("aid", "int"), ("delta", "int"), ("mtime", "timestamp"),
           ("filler", "string")]  # fmt: skip
# pgbench's log table: no key, and its timestamp unique today
HISTORY = om.SourceTable("pgbench_history", columns=tuple(ColumnInfo(n, k, True, False) for n, k in COLUMNS))


def test_a_key_only_the_rows_vouch_for_says_its_evidence_its_risk_and_the_fixes():
    note = notes.guessed_keys(om.KeyProfile(("mtime",), rows=11_970, distinct=11_970, null_keys=0), HISTORY)
    for words in (
        "keys [mtime] suggested from today's rows only",
        "all 11,970 rows profiled (11,970 distinct values)",
        "no primary key or unique constraint in the source keeps them so",
        "a timestamp repeats whenever two rows are written in the same instant",
        "a later row that repeats them fails the table's run",
        "Declare the key in the source",
        "key_origin: declared",
        "or, if it only grows, give it an identity column in the source and mirror it insert-only "
        "(strategy: append",
    ):
        assert words in note, note
    assert "\n" not in note


def test_a_pair_of_numbers_has_no_timestamp_risk_and_a_numbered_table_is_pointed_to_append():
    numbered = om.SourceTable(
        "ledger",
        columns=(ColumnInfo("branch", "int", False, False), ColumnInfo("line", "int", False, False)),
        increasing=("entry_no",),
    )
    note = notes.guessed_keys(om.KeyProfile(("branch", "line"), rows=1, distinct=1, null_keys=0), numbered)
    assert "keys [branch, line]" in note and "the one row profiled (1 distinct combination)" in note
    assert (
        "timestamp" not in note
        and "or mirror it insert-only (strategy: append, watermark: entry_no, keys: [])" in note
    )


@pytest.mark.parametrize(
    ("facts", "fits", "strategy"),
    [
        ({"increasing": ("id",)}, True, "append"),  # bigserial or identity, no key: insert-only first
        ({"increasing": ("id",), "primary_key": ("id",)}, False, "snapshot"),  # a declared key stays
        ({"increasing": ("id",), "unique": (("code",),)}, False, "snapshot"),
        ({"increasing": ("id",), "change_feed": True}, True, "delta_sync"),  # the feed has updates too
        ({}, False, "snapshot"),  # a log without such a column: its keys are suggested, with a note
    ],
)
def test_append_is_planned_first_for_a_keyless_table_the_source_numbers(facts, fits, strategy):
    assert om.get_strategy("append").fits(om.SourceTable("t", **facts)) is fits
    assert strategy_for(om.SourceTable("t", **facts)) == strategy


def test_the_insert_only_note_says_what_append_leaves_out():
    note = notes.insert_only("event_id")
    assert "rows past the highest event_id mirrored" in note and "never mirrored" in note
    assert "declare keys (key_origin: declared) and choose snapshot" in note


def _plan(*tables):
    return om.SourcePlan(om.Catalog("lakehouse.bench"), "bench", list(tables))


GUESSED = om.PlannedTable(
    "pgbench_history", "bench.pgbench_history", ("mtime",), "suggested", "snapshot", None, True, True, 12,
    (), notes=("keys [mtime] suggested from today's rows only: ...",),
)  # fmt: skip
KEYED = om.PlannedTable(
    "pgbench_accounts", "bench.pgbench_accounts", ("aid",), "primary_key", "snapshot", None, True, True, 9, ()
)


def test_the_summary_counts_the_suggested_keys_and_says_what_to_do():
    summary = repr(_plan(GUESSED, KEYED)).splitlines()[0]
    assert summary.endswith(
        "2 tables, 0 with problems, 1 with suggested keys to accept: only today's rows make them unique "
        "and keys never change once pushed (declare a key, or mirror insert-only with append; see its note)"
    )
    assert repr(_plan(KEYED)).splitlines()[0].endswith("1 tables, 0 with problems")  # nothing to say


def test_the_text_and_html_show_each_note_under_its_table():
    plan = _plan(GUESSED, KEYED)
    assert "      note: keys [mtime] suggested from today's rows only: ..." in repr(plan)
    page = plan._repr_html_()
    assert page.count("data-notes='1'") == 1 and page.count("data-notes='0'") == 1
    assert "<li>keys [mtime] suggested from today&#x27;s rows only: ...</li>" in page
