"""``Onboarding`` headless: a real local database and real pushes, driven by setting widget values
and clicking, as a user would; only the namespace is a plain dict."""

from __future__ import annotations

import pandas as pd
import pytest

import openmirror_nb as om
from openmirror_nb._core.progress import Finished, Publishing, Staging

pytestmark = pytest.mark.spark


@pytest.fixture
def db(tmp_path):
    return om.connect(tmp_path / "db")


@pytest.fixture
def namespace(spark):
    return {
        "orders": spark.range(40).selectExpr(
            "id AS order_id", "concat('item ', id % 7) AS item", "id * 1.5d AS amount"
        ),
        "lines": spark.range(30).selectExpr("id div 3 AS order_id", "id % 3 AS line", "id * 2.5d AS price"),
        "dupes": spark.range(12).selectExpr("id % 9 AS k", "concat('v', id % 3) AS v"),
        "customers": pd.DataFrame({"customer": ["ann", "bob", "cy"], "city": ["Oslo", "Rome", "Oslo"]}),
        "not_a_frame": 42,
    }


@pytest.fixture
def panel(db, namespace):
    return om.widgets.Onboarding(db, namespace=namespace)


def pick(panel, name):
    panel.source_picker.value = next(s for s in panel.sources if s.name == name)


def status(panel):
    return panel.status_line.value


def is_error(panel):
    return "#c62828" in panel.status_line.value


def test_the_fresh_panel_lists_the_frames_and_asks_for_a_source(panel):
    assert [s.label for s in panel.sources] == [
        "dupes (Spark DataFrame)",
        "lines (Spark DataFrame)",
        "orders (Spark DataFrame)",
        "customers (pandas)",
    ]
    assert panel.source is None and "Pick a source." in status(panel)
    assert panel.push_button.disabled and panel.key_select.disabled
    assert panel.target.table_picker.options == (("new table", ""),)
    assert (panel.options.format_picker.value, panel.options.compression_picker.value) == (
        "parquet",
        "snappy",
    )
    assert (panel.options.rows_box.value, panel.options.marker_picker.value) == (1_000_000, 4)
    assert any(
        panel.progress.widget in getattr(c, "children", ()) for c in panel.children
    )  # the push's own bar
    assert "openmirror-onboarding" in panel._dom_classes
    # the state a frontend receives is whole (a property shadowing a Widget trait would empty it)
    assert {"_model_module", "_model_name", "children"} <= set(panel.get_state())
    assert repr(panel).startswith("Onboarding(")


def test_picking_a_source_shows_rows_preview_and_suggested_keys(panel):
    pick(panel, "orders")
    assert "40 rows" in panel.preview.value and "first 10 rows shown" in panel.preview.value
    assert panel.preview.value.count("<tr>") == 11  # the header and 10 rows
    assert panel.suggested_keys == [("order_id",)]
    assert panel.suggestions.options == (("order_id", ("order_id",)),)
    assert [n for _, n in panel.key_select.options] == ["order_id", "item", "amount"]
    assert (
        panel.target.name_box.value == "orders" and panel.target.table == "orders"
    )  # named after the source
    assert "Choose the key columns" in status(panel) and panel.push_button.disabled

    pick(panel, "lines")  # no single column is a key: a pair is suggested
    assert panel.suggested_keys == [("order_id", "line")]
    assert panel.target.name_box.value == "lines"  # the name the panel chose follows the source


def test_accepting_a_suggestion_profiles_the_keys_and_enables_push(panel):
    pick(panel, "lines")
    panel.suggestions.value = ("order_id", "line")
    assert panel.key_columns == ("order_id", "line")
    assert panel.key_profile.unique and panel.key_profile.rows == 30
    assert "data-unique='true'" in panel.profile.value
    assert not panel.push_button.disabled
    assert "Ready: Push publishes the initial load of lines to lines." in status(panel)


def test_choosing_keys_by_hand_updates_the_profile(panel):
    pick(panel, "lines")
    panel.key_select.value = ("order_id",)
    assert panel.key_profile.distinct == 10 and panel.key_profile.duplicated == 10
    assert panel.suggestions.value is None  # no suggestion is that choice
    panel.key_select.value = ("order_id", "line")
    assert panel.key_profile.unique and panel.suggestions.value == ("order_id", "line")


def test_a_bad_table_name_shows_the_error_and_disables_push(panel):
    pick(panel, "orders")
    panel.suggestions.value = ("order_id",)
    assert not panel.push_button.disabled
    for schema, name, problem in [
        ("", "_orders", "Table name '_orders' starts with '_'"),
        ("", "a/b", "Table name 'a/b' contains a path separator"),
        ("sales", "a..b", "contains '..'"),
        ("_sales", "orders", "Schema name '_sales' starts with '_'"),
    ]:
        panel.target.schema_box.value, panel.target.name_box.value = schema, name
        assert panel.target.table is None and panel.push_button.disabled, name
        assert is_error(panel) and problem.replace("'", "&#x27;") in status(panel), status(panel)
    panel.target.schema_box.value, panel.target.name_box.value = "sales", "orders"
    assert panel.target.table == "sales.orders" and not panel.push_button.disabled and not is_error(panel)
    assert "New table <code>sales.orders</code>" in panel.target.note.value


def test_a_duplicate_key_shows_its_duplicates_and_push_refuses_in_one_line(db, panel):
    pick(panel, "dupes")
    assert panel.suggested_keys == []
    assert "No suggested key" in panel.suggest_note.value
    panel.key_select.value = ("k",)
    profile = panel.key_profile
    assert not profile.unique and profile.duplicated == 3
    assert profile.duplicates == (((0,), 2), ((1,), 2), ((2,), 2))
    assert "<code>0</code>" in panel.profile.value and is_error(panel)
    assert "Keys k do not identify every row: 3 key values repeated" in status(panel)
    panel.push_button.click()  # the push is the judge: it refuses, the panel says why in one line
    assert is_error(
        panel
    ) and "Key columns [&#x27;k&#x27;] of table &#x27;dupes&#x27; are not unique" in status(panel)
    assert "<br" not in status(panel) and "Traceback" not in status(panel)
    assert panel.progress.bar.bar_style == "danger" and panel.push_result is None
    assert db.tables() == [] and not panel.push_button.disabled


def test_push_publishes_and_shows_the_result_and_a_full_green_bar(db, panel, tmp_path):
    pushed = []
    panel.on_push(pushed.append)
    pick(panel, "orders")
    panel.suggestions.value = ("order_id",)
    panel.target.schema_box.value = "sales"
    panel.push_button.click()
    result = panel.push_result
    assert result is not None and pushed == [result]
    assert result.table == "sales.orders" and result.rows == {"initial": 40}
    files = sorted(p.name for p in (tmp_path / "db/Files/LandingZone/sales.schema/orders").glob("0*"))
    assert files == ["00000000000000000001.parquet"]
    assert "Pushed sales.orders" in panel.result.value
    assert "Pushed sales.orders: file 1; initial 40" in status(panel) and not is_error(panel)
    assert (panel.progress.bar.value, panel.progress.bar.bar_style) == (100, "success")
    kinds = {type(e) for e in panel.progress.events}
    assert {Staging, Publishing, Finished} <= kinds
    # the table exists now: its keys are fixed, and a push again is a snapshot diff
    assert panel.target.existing is not None and panel.key_select.disabled
    assert panel.target.table_picker.value == "sales.orders"
    assert panel.key_columns == ("order_id",) and panel.key_profile.unique


def test_an_existing_table_shows_its_keys_read_only(db, namespace, spark):
    db.push(namespace["lines"], table="sales.lines", keys=["order_id", "line"], progress=False)
    panel = om.widgets.Onboarding(db, namespace=namespace)
    assert panel.target.table_picker.options == (("new table", ""), ("sales.lines", "sales.lines"))
    pick(panel, "orders")  # a source whose columns include order_id but not line
    panel.target.table_picker.value = "sales.lines"  # by mouse: the name fields fill in
    assert (panel.target.schema_box.value, panel.target.name_box.value) == ("sales", "lines")
    assert panel.target.existing.keys == ("order_id", "line")
    assert panel.key_select.disabled and panel.suggestions.disabled and panel.options.format_picker.disabled
    assert "keys <b>order_id, line</b>" in panel.target.note.value
    assert is_error(panel) and "Key column &#x27;line&#x27; is not in the DataFrame" in status(panel)
    assert panel.push_button.disabled  # the table's keys cannot be pushed from this source

    pick(panel, "lines")
    assert panel.target.table == "sales.lines"  # a name that came from the table picker stays
    assert panel.key_columns == ("order_id", "line") and panel.key_select.disabled
    assert panel.key_profile.unique and not panel.push_button.disabled
    assert "a snapshot diff of lines to sales.lines" in status(panel)

    panel.target.table_picker.value = ""  # "new table": the name is to be typed, the keys are a choice again
    assert (panel.target.schema_box.value, panel.target.name_box.value, panel.target.table) == ("", "", None)
    assert "Name the target table." in status(panel)
    panel.target.name_box.value = "lines2"
    assert panel.target.existing is None and not panel.key_select.disabled and panel.key_columns == ()


def test_options_reach_the_push(db, panel, tmp_path):
    pick(panel, "customers")  # a pandas frame, profiled and pushed through Spark
    assert "3 rows" in panel.preview.value
    assert panel.suggested_keys == [("customer",)]
    panel.suggestions.value = ("customer",)
    panel.options.format_picker.value = "csv"
    assert panel.options.compression_picker.value == "none" and panel.options.compression_picker.disabled
    panel.options.rows_box.value = 2
    panel.push_button.click()
    assert not is_error(panel), status(panel)
    folder = tmp_path / "db/Files/LandingZone/customers"
    assert sorted(p.name for p in folder.glob("0*")) == [
        "00000000000000000001.csv",
        "00000000000000000002.csv",
    ]  # 3 rows, 2 per file
    assert db.describe("customers").options.file_format == "csv"
    panel.options.format_picker.disabled = False  # the format is the table's now; parquet brings snappy back
    panel.options.format_picker.value = "parquet"
    assert panel.options.compression_picker.value == "snappy"


def test_marker_and_compression_are_passed_as_chosen(db, namespace):
    calls = []

    def push(df, **options):
        calls.append(options)
        raise om.LockTimeoutError("table orders is locked by another writer (test)")

    panel = om.widgets.Onboarding(db, namespace=namespace, push=push)
    pick(panel, "orders")
    panel.suggestions.value = ("order_id",)
    panel.options.compression_picker.value = "zstd"
    panel.options.marker_picker.value = 1
    assert panel.push() is None
    (options,) = calls
    assert options["compression"] == "zstd" and options["update_marker"] == 1
    assert options["keys"] == ["order_id"] and options["table"] == "orders"
    assert options["table_options"].file_format == "parquet" and options["progress"] is panel.progress
    assert "table orders is locked by another writer (test)" in status(panel) and is_error(panel)
    assert panel.push_button.description == "Push" and not panel.push_button.disabled


def test_rescan_finds_new_frames_and_keeps_the_choice(panel, namespace, spark):
    pick(panel, "orders")
    namespace["later"] = spark.range(2)
    panel.rescan_button.click()
    assert "later" in [s.name for s in panel.sources]
    assert panel.source.name == "orders" and panel.target.name_box.value == "orders"


def test_close_closes_every_widget_of_the_panel(panel):
    parts = [panel.source_picker, panel.target.name_box, panel.options.rows_box, panel.progress.bar]
    panel.close()
    assert panel.comm is None and all(part.comm is None for part in parts)


def test_a_panel_without_sources_says_what_to_do(db):
    panel = om.widgets.Onboarding(db, namespace={}, sources=list)
    assert "No DataFrames, views or tables found" in status(panel)
    assert panel.push() is None and panel.push_button.disabled
